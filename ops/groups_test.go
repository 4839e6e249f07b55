package ops_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"switchboard/groups"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// AddGroup is `group add [--jid]` and register_group: what it refuses
// leaves no group, folder or route behind; what it accepts is stored, set
// up on disk and, with a pin, routed ahead of every route.
func TestAddGroup(t *testing.T) {
	acme := ops.Actor{Folder: "acme", Tier: 1}
	for _, c := range []struct {
		name    string
		by      ops.Actor
		req     ops.NewGroup
		wantErr error  // nil: accepted
		wantMsg string // the error's text, when wantErr is set
	}{
		{"operator, top-level", ops.Operator, ops.NewGroup{Folder: "sales"}, nil, ""},
		{"operator, pinned chat nobody owns", ops.Operator, ops.NewGroup{Folder: "sales", Pin: "web:new"}, nil, ""},
		{"operator, pinned chat another group owns", ops.Operator, ops.NewGroup{Folder: "acme/sales", Pin: "web:main"}, nil, ""},
		{"group, its child", acme, ops.NewGroup{Folder: "acme/sales"}, nil, ""},
		{"group, its child with its own chat", acme, ops.NewGroup{Folder: "acme/sales", Pin: "web:acme"}, nil, ""},
		{"group, its child with its subgroup's chat", acme, ops.NewGroup{Folder: "acme/sales", Pin: "web:eng"}, nil, ""},
		{"bad folder", ops.Operator, ops.NewGroup{Folder: "Bad!"}, groups.ErrInvalidFolder, ""},
		{"too deep", ops.Operator, ops.NewGroup{Folder: "a/b/c/d/e/f/g"}, groups.ErrInvalidFolder, ""},
		{"exists", ops.Operator, ops.NewGroup{Folder: "acme"}, store.ErrExists, "group acme already exists"},
		{"no parent", ops.Operator, ops.NewGroup{Folder: "nope/child"}, ops.ErrNoGroup, "parent group nope does not exist"},
		{"group, not its child", acme, ops.NewGroup{Folder: "main/x"}, ops.ErrNotChild, "group main/x is not a direct child of acme; create acme/<name>"},
		{"group, a grandchild", acme, ops.NewGroup{Folder: "acme/eng/x"}, ops.ErrNotChild, ""},
		{"group, top-level", acme, ops.NewGroup{Folder: "other"}, ops.ErrNotChild, ""},
		{"group, route capturing another group's chat", acme, ops.NewGroup{Folder: "acme/sales", Pin: "web:main"}, routing.ErrForbidden, ""},
		{"group, route of a chat nobody owns", acme, ops.NewGroup{Folder: "acme/sales", Pin: "web:new"}, routing.ErrForbidden, ""},
		{"pinned chat is no JID", ops.Operator, ops.NewGroup{Folder: "sales", Pin: "nojid"}, errAny, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.routes(t)
			r, err := ops.AddGroup(context.Background(), f.st, f.layout, c.by, c.req)
			_, statErr := os.Stat(filepath.Join(f.layout.Dir(c.req.Folder), ".mcp.json"))
			if c.wantErr != nil {
				switch {
				case err == nil:
					t.Fatalf("accepted (route %v); want an error", r)
				case c.wantErr != errAny && !errors.Is(err, c.wantErr):
					t.Errorf("err = %v; want %v", err, c.wantErr)
				case c.wantMsg != "" && err.Error() != c.wantMsg:
					t.Errorf("err = %q; want %q", err, c.wantMsg)
				}
				if c.wantErr != store.ErrExists && f.groupExists(t, c.req.Folder) {
					t.Errorf("a refused add stored group %s", c.req.Folder)
				}
				if c.wantErr != store.ErrExists && statErr == nil {
					t.Errorf("a refused add set up %s on disk", c.req.Folder)
				}
				if after := f.routes(t); len(after) != len(before) {
					t.Errorf("a refused add changed the routes: %d → %d", len(before), len(after))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !f.groupExists(t, c.req.Folder) || statErr != nil {
				t.Errorf("group %s: stored %v, set up on disk: %v", c.req.Folder, f.groupExists(t, c.req.Folder), statErr)
			}
			if c.req.Pin == "" {
				if r != nil || len(f.routes(t)) != len(before) {
					t.Errorf("no pin, yet route %v", r)
				}
				return
			}
			if r == nil || r.ID == 0 || r.Target != c.req.Folder || r.Mode != routing.Trigger {
				t.Fatalf("route = %+v; want a stored trigger route to %s", r, c.req.Folder)
			}
			if owner, _ := f.table(t).Owner(c.req.Pin, ""); owner != c.req.Folder {
				t.Errorf("%s is owned by %q after the pin; want %s", c.req.Pin, owner, c.req.Folder)
			}
		})
	}
}

// errAny stands for "some error" in the tables.
var errAny = errors.New("any error")

// A pinned route goes ahead of every route, with the one formula
// (routing.Table.AheadSeq): below the lowest seq and below 0.
func TestPinRouteSeq(t *testing.T) {
	for _, c := range []struct {
		name  string
		seqs  []int // of the routes added before, besides the fixture's (seq 0)
		clear bool  // start from an empty table
		want  int
	}{
		{"empty table", nil, true, 0},
		{"routes at 0", nil, false, -1},
		{"all positive", []int{3, 7}, true, -1},
		{"a negative one", []int{-5, 2}, false, -6},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if c.clear {
				for _, r := range f.routes(t) {
					if _, err := ops.DeleteRoute(ctx, f.st, r.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, s := range c.seqs {
				if _, err := ops.AddRoute(ctx, f.st, routing.Route{Seq: s, Match: map[string]string{routing.KeyPlatform: "*"}, Target: "main"}); err != nil {
					t.Fatal(err)
				}
			}
			r, err := ops.PinRoute(ctx, f.st, ops.Operator, "acme", "web:pinned")
			if err != nil {
				t.Fatal(err)
			}
			if r.Seq != c.want {
				t.Errorf("seq = %d; want %d", r.Seq, c.want)
			}
			if win, ok := f.table(t).Resolve(routing.Message{ChatJID: "web:pinned", Verb: "message"}); !ok || win.ID != r.ID {
				t.Errorf("route %d does not win for its chat (winner %+v)", r.ID, win)
			}
		})
	}
}
