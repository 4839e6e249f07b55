package store

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"switchboard/routing"
)

func TestRoutesCRUD(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	add := func(r routing.Route) routing.Route {
		t.Helper()
		got, err := s.AddRoute(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID == 0 {
			t.Fatalf("AddRoute returned no id: %+v", got)
		}
		return got
	}
	late := add(routing.Route{Seq: 20, Match: map[string]string{"platform": "web"}, Target: "main"})
	first := add(routing.Route{Seq: 10, Match: map[string]string{"chat_jid": "web:ops", "sender": "web:user/*"}, Target: "ops", Mode: routing.Observe})
	tie := add(routing.Route{Seq: 20, Target: "catchall"})

	if tie.Mode != routing.Trigger || tie.Match == nil {
		t.Errorf("defaults not applied: %+v", tie)
	}
	rs, err := s.ListRoutes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []routing.Route{first, late, tie}; !reflect.DeepEqual(rs, want) {
		t.Errorf("ListRoutes = %+v\nwant %+v", rs, want)
	}

	gone, err := s.DeleteRoute(ctx, late.ID)
	if err != nil || !reflect.DeepEqual(gone, late) {
		t.Errorf("DeleteRoute = %+v, %v; want %+v", gone, err, late)
	}
	if _, err := s.DeleteRoute(ctx, late.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("second DeleteRoute = %v, want ErrNotFound", err)
	}
	if rs, _ := s.ListRoutes(ctx); !reflect.DeepEqual(rs, []routing.Route{first, tie}) {
		t.Errorf("after delete: %+v", rs)
	}

	repl, err := s.ReplaceRoutes(ctx, []routing.Route{
		{Seq: 5, Match: map[string]string{"platform": "slack"}, Target: "eng"},
		{Seq: 1, Target: "root", Mode: routing.Observe},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range repl {
		if r.ID <= tie.ID {
			t.Errorf("replaced route got id %d, not above the old ids (reuse would confuse `route rm`)", r.ID)
		}
	}
	rs, _ = s.ListRoutes(ctx)
	if want := []routing.Route{repl[1], repl[0]}; !reflect.DeepEqual(rs, want) {
		t.Errorf("after replace: %+v\nwant %+v", rs, want)
	}
	if _, err := s.ReplaceRoutes(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if rs, _ := s.ListRoutes(ctx); len(rs) != 0 || rs == nil {
		t.Errorf("ReplaceRoutes(nil) left %#v, want empty", rs)
	}
}

func TestSeedRoutes(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	cfg := []routing.Route{{Match: map[string]string{"platform": "web"}, Target: "main"}}

	if seeded, err := s.SeedRoutes(ctx, nil); err != nil || seeded {
		t.Errorf("SeedRoutes(nil) = %v, %v; want false", seeded, err)
	}
	seeded, err := s.SeedRoutes(ctx, cfg)
	if err != nil || !seeded {
		t.Fatalf("SeedRoutes on empty table = %v, %v; want true", seeded, err)
	}
	if cfg[0].ID != 0 {
		t.Error("SeedRoutes modified its argument")
	}
	rs, _ := s.ListRoutes(ctx)
	if len(rs) != 1 || rs[0].Target != "main" || rs[0].Mode != routing.Trigger {
		t.Fatalf("after seed: %+v", rs)
	}
	// A restart with other config routes must not touch the operator's table.
	seeded, err = s.SeedRoutes(ctx, []routing.Route{{Target: "other"}, {Target: "more"}})
	if err != nil || seeded {
		t.Errorf("SeedRoutes on non-empty table = %v, %v; want false", seeded, err)
	}
	if again, _ := s.ListRoutes(ctx); !reflect.DeepEqual(again, rs) {
		t.Errorf("SeedRoutes changed a non-empty table: %+v", again)
	}
	// Once seeded, an operator who deleted every route keeps an empty table.
	if _, err := s.DeleteRoute(ctx, rs[0].ID); err != nil {
		t.Fatal(err)
	}
	if seeded, _ := s.SeedRoutes(ctx, cfg); seeded {
		t.Error("the config's routes came back after the operator deleted them")
	}
}

// A route added before the first run does not stop the config's routes
// from being seeded: seeding follows the database being new.
func TestSeedRoutesAfterEarlyRouteAdd(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.AddRoute(ctx, routing.Route{Match: map[string]string{"chat_jid": "web:ops"}, Target: "ops"}.Normalize()); err != nil {
		t.Fatal(err)
	}
	seeded, err := s.SeedRoutes(ctx, []routing.Route{{Match: map[string]string{"platform": "web"}, Target: "main"}})
	if err != nil || !seeded {
		t.Fatalf("SeedRoutes after an early route add = %v, %v; want seeded", seeded, err)
	}
	if rs, _ := s.ListRoutes(ctx); len(rs) != 2 {
		t.Errorf("routes %+v; want the operator's and the config's", rs)
	}
}
