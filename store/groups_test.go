package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"switchboard/routing"
)

func TestChats(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	clock := time.UnixMilli(5_000)
	s.now = func() time.Time { return clock }

	m := &Message{ChatJID: "telegram:group/1", ID: "1"}
	mustInsert(t, s, m)
	clock = time.UnixMilli(9_000)
	if err := s.UpsertChat(ctx, Chat{JID: "telegram:group/1", Name: "Ops"}); err != nil {
		t.Fatal(err)
	}
	m2 := &Message{ChatJID: "telegram:group/1", ID: "2"}
	mustInsert(t, s, m2)
	if err := s.UpsertChat(ctx, Chat{JID: "telegram:group/1"}); err != nil { // empty name keeps "Ops"
		t.Fatal(err)
	}
	if err := s.UpsertChat(ctx, Chat{JID: "discord:dm/77", Platform: "discord", Name: "DM", FirstSeen: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertChat(ctx, Chat{JID: "discord:dm/77", Name: "Renamed", LastSeq: 3}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Chats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Chat{
		{JID: "discord:dm/77", Platform: "discord", Name: "Renamed", FirstSeen: 1, LastSeq: 3},
		{JID: "telegram:group/1", Platform: "telegram", Name: "Ops", FirstSeen: 5_000, LastSeq: m2.Seq},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Chats = %+v\nwant   %+v", got, want)
	}
	if err := s.UpsertChat(ctx, Chat{}); err == nil {
		t.Error("UpsertChat with an empty JID succeeded")
	}
}

func TestGroups(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if gs, err := s.Groups(ctx); err != nil || len(gs) != 0 || gs == nil {
		t.Fatalf("Groups of a new store = %#v, %v; want empty", gs, err)
	}
	for _, f := range []string{"main", "acme/eng", "acme", "root"} {
		if err := s.AddGroup(ctx, f); err != nil {
			t.Fatalf("AddGroup %s: %v", f, err)
		}
	}
	if err := s.AddGroup(ctx, "main"); !errors.Is(err, ErrExists) {
		t.Errorf("second AddGroup = %v, want ErrExists", err)
	}
	created, err := s.EnsureGroup(ctx, "main")
	if err != nil || created {
		t.Errorf("EnsureGroup existing = %v, %v; want false", created, err)
	}
	created, err = s.EnsureGroup(ctx, "side")
	if err != nil || !created {
		t.Errorf("EnsureGroup new = %v, %v; want true", created, err)
	}
	gs, _ := s.Groups(ctx)
	if want := []string{"acme", "acme/eng", "main", "root", "side"}; !reflect.DeepEqual(gs, want) {
		t.Errorf("Groups = %v, want %v", gs, want)
	}
	if ok, _ := s.GroupExists(ctx, "acme/eng"); !ok {
		t.Error("GroupExists(acme/eng) = false")
	}

	if err := s.SetGrantOverrides(ctx, "main", []string{"send", "!like"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetGrantOverrides(ctx, "acme", []string{"like"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddRoute(ctx, routing.Route{Match: map[string]string{"platform": "web"}, Target: "main"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.GroupExists(ctx, "main"); ok {
		t.Error("main still exists after RemoveGroup")
	}
	if rules, _ := s.GrantOverrides(ctx, "main"); len(rules) != 0 {
		t.Errorf("RemoveGroup left grant overrides %v", rules)
	}
	if rules, _ := s.GrantOverrides(ctx, "acme"); !reflect.DeepEqual(rules, []string{"like"}) {
		t.Errorf("RemoveGroup touched another folder's overrides: %v", rules)
	}
	if rs, _ := s.ListRoutes(ctx); len(rs) != 1 {
		t.Errorf("RemoveGroup deleted routes to it: %+v", rs)
	}
	if err := s.RemoveGroup(ctx, "main"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveGroup missing = %v, want ErrNotFound", err)
	}
}

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

func TestGrantOverrides(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if rules, err := s.GrantOverrides(ctx, "main"); err != nil || len(rules) != 0 {
		t.Fatalf("GrantOverrides of unknown folder = %v, %v", rules, err)
	}
	steps := []struct {
		folder string
		rules  []string
	}{
		{"main", []string{"send", "!send(jid=slack:*)", "like"}},
		{"acme/eng", []string{"schedule_*"}},
		{"main", []string{"!like", "reply"}}, // replaces, shorter
		{"acme/eng", nil},                    // clears
		{"root", []string{"z", "a", "m"}},    // keeps the given order
	}
	for _, st := range steps {
		if err := s.SetGrantOverrides(ctx, st.folder, st.rules); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GrantOverrides(ctx, st.folder)
		if len(got) != len(st.rules) || (len(got) > 0 && !reflect.DeepEqual(got, st.rules)) {
			t.Errorf("after set %s %v: %v", st.folder, st.rules, got)
		}
	}
	all, err := s.AllGrantOverrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"main": {"!like", "reply"}, "root": {"z", "a", "m"}}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("AllGrantOverrides = %v, want %v", all, want)
	}
}

func TestRevision(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var routeID int64
	steps := []struct {
		name string
		do   func() error
		bump bool
	}{
		{"insert message", func() error { _, err := s.InsertMessage(ctx, &Message{ChatJID: "web:a", ID: "1"}); return err }, false},
		{"insert batch", func() error {
			_, err := s.InsertMessages(ctx, []*Message{{ChatJID: "web:a", ID: "2"}, {ChatJID: "web:b", ID: "2"}})
			return err
		}, false},
		{"upsert chat", func() error { return s.UpsertChat(ctx, Chat{JID: "web:a", Name: "A"}) }, false},
		{"add group", func() error { return s.AddGroup(ctx, "main") }, true},
		{"ensure existing group", func() error { _, err := s.EnsureGroup(ctx, "main"); return err }, false},
		{"ensure new group", func() error { _, err := s.EnsureGroup(ctx, "side"); return err }, true},
		{"add route", func() error {
			r, err := s.AddRoute(ctx, routing.Route{Target: "main"})
			routeID = r.ID
			return err
		}, true},
		{"delete route", func() error { _, err := s.DeleteRoute(ctx, routeID); return err }, true},
		{"replace routes", func() error { _, err := s.ReplaceRoutes(ctx, []routing.Route{{Target: "main"}}); return err }, true},
		{"first seed", func() error { _, err := s.SeedRoutes(ctx, []routing.Route{{Target: "main"}}); return err }, true},
		{"seed again", func() error { _, err := s.SeedRoutes(ctx, []routing.Route{{Target: "x"}}); return err }, false},
		{"set grants", func() error { return s.SetGrantOverrides(ctx, "main", []string{"send"}) }, true},
		{"set same grants", func() error { return s.SetGrantOverrides(ctx, "main", []string{"send"}) }, false},
		{"clear grants", func() error { return s.SetGrantOverrides(ctx, "main", nil) }, true},
		{"remove group", func() error { return s.RemoveGroup(ctx, "side") }, true},
		{"failed remove", func() error { _ = s.RemoveGroup(ctx, "side"); return nil }, false},
		{"search", func() error { _, err := s.Search(ctx, "x", SearchOptions{}); return err }, false},
	}
	prev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		rev, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if bumped := rev != prev; bumped != st.bump {
			t.Errorf("%s: revision %d -> %d, want bump=%v", st.name, prev, rev, st.bump)
		}
		if rev < prev {
			t.Errorf("%s: revision went back from %d to %d", st.name, prev, rev)
		}
		prev = rev
	}
}

// TestRevisionSeenByAnotherProcess: the CLI and the gateway open the same
// file; a change made through one handle moves the revision the other polls.
func TestRevisionSeenByAnotherProcess(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/switchboard.db"
	gateway := openAt(t, path)
	cli := openAt(t, path)
	before, _ := gateway.Revision(ctx)
	if _, err := cli.AddRoute(ctx, routing.Route{Match: map[string]string{"platform": "web"}, Target: "main"}); err != nil {
		t.Fatal(err)
	}
	after, _ := gateway.Revision(ctx)
	if after == before {
		t.Fatalf("revision did not move for the other handle (%d)", after)
	}
	rs, _ := gateway.ListRoutes(ctx)
	if len(rs) != 1 {
		t.Errorf("gateway sees %d routes, want 1", len(rs))
	}
}
