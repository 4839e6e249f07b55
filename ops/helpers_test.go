package ops_test

import (
	"context"
	"path/filepath"
	"testing"

	"switchboard/groups"
	"switchboard/routing"
	"switchboard/store"
)

// fixture is a real store in a temp dir with groups main (the operator),
// acme and acme/eng, each owning one web chat, and the folders' layout.
type fixture struct {
	st     *store.Store
	layout groups.Layout
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for folder, chat := range map[groups.Folder]string{"main": "web:main", "acme": "web:acme", "acme/eng": "web:eng"} {
		if err := st.AddGroup(ctx, folder); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddRoute(ctx, routing.Route{Match: map[string]string{routing.KeyChatJID: chat}, Target: folder}); err != nil {
			t.Fatal(err)
		}
	}
	return fixture{st: st, layout: groups.Layout{DataDir: dir}}
}

func (f fixture) routes(t *testing.T) []routing.Route {
	t.Helper()
	rs, err := f.st.ListRoutes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func (f fixture) table(t *testing.T) *routing.Table {
	t.Helper()
	tab, err := routing.Load(context.Background(), f.st)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func (f fixture) groupExists(t *testing.T, folder groups.Folder) bool {
	t.Helper()
	ok, err := f.st.GroupExists(context.Background(), folder)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}
