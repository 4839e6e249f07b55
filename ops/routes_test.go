package ops_test

import (
	"context"
	"errors"
	"testing"

	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// AddRoute is `route add` and add_route: a route is validated and must
// target a group.
func TestAddRoute(t *testing.T) {
	for _, c := range []struct {
		name    string
		r       routing.Route
		wantErr error
	}{
		{"catch-all", routing.Route{Match: map[string]string{routing.KeyPlatform: "*"}, Target: "main"}, nil},
		{"observe, seq given", routing.Route{Seq: -3, Mode: routing.Observe, Match: map[string]string{routing.KeyChatJID: "web:x"}, Target: "acme/eng"}, nil},
		{"no such target", routing.Route{Match: map[string]string{routing.KeyPlatform: "web"}, Target: "ghost"}, ops.ErrNoGroup},
		{"bad mode", routing.Route{Mode: "loud", Match: map[string]string{routing.KeyPlatform: "web"}, Target: "main"}, routing.ErrInvalidRoute},
		{"unknown key", routing.Route{Match: map[string]string{"colour": "red"}, Target: "main"}, routing.ErrInvalidRoute},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			n := len(f.routes(t))
			r, err := ops.AddRoute(context.Background(), f.st, c.r)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Errorf("err = %v; want %v", err, c.wantErr)
				}
				if len(f.routes(t)) != n {
					t.Error("a refused route was stored")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.ID == 0 || r.Seq != c.r.Seq || r.Target != c.r.Target || len(f.routes(t)) != n+1 {
				t.Errorf("added %+v from %+v", r, c.r)
			}
		})
	}
}

// DeleteRoute is `route rm` and delete_route: it returns the route as it
// was; a missing one is store.ErrNotFound.
func TestDeleteRoute(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first := f.routes(t)[0]
	r, err := ops.DeleteRoute(ctx, f.st, first.ID)
	if err != nil || r.ID != first.ID || r.Target != first.Target {
		t.Fatalf("DeleteRoute = %+v, %v; want %+v", r, err, first)
	}
	if _, err := ops.DeleteRoute(ctx, f.st, first.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting it again: %v; want store.ErrNotFound", err)
	}
}
