package gateway

import (
	"context"
	"log/slog"
	"testing"

	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/routing"
)

// configFake is liveConfig's store and MCP server.
type configFake struct {
	rev    int64
	routes []routing.Route
	groups []groups.Folder
	synced [][]ipc.Group
}

func (c *configFake) Revision(context.Context) (int64, error)             { return c.rev, nil }
func (c *configFake) ListRoutes(context.Context) ([]routing.Route, error) { return c.routes, nil }
func (c *configFake) Groups(context.Context) ([]groups.Folder, error)     { return c.groups, nil }
func (c *configFake) AllGrantOverrides(context.Context) (map[groups.Folder][]string, error) {
	return map[groups.Folder][]string{"main": {"send"}}, nil
}
func (c *configFake) Sync(gs []ipc.Group) error {
	c.synced = append(c.synced, gs)
	return nil
}

// A reload builds the route table, sets up the group folders, gives the
// MCP server the groups with their overrides, loads budgets and wakes the
// scheduler; it is stale again only when the revision moves.
func TestLiveConfigReload(t *testing.T) {
	fake := &configFake{rev: 1, groups: []groups.Folder{"main"},
		routes: []routing.Route{(routing.Route{ID: 1, Match: map[string]string{"platform": "test"}, Target: "main"}).Normalize()}}
	budgets, wakes := 0, 0
	c := &liveConfig{st: fake, mcp: fake, layout: groups.Layout{DataDir: t.TempDir()}, exe: "switchboard", log: slog.New(slog.DiscardHandler),
		loadBudgets: func(context.Context) error { budgets++; return nil }, wakeScheduler: func() { wakes++ }}
	ctx := context.Background()
	if stale, err := c.stale(ctx); !stale || err != nil {
		t.Fatalf("stale before the first reload: %v %v", stale, err)
	}
	if err := c.reload(ctx); err != nil {
		t.Fatal(err)
	}
	if c.Table().Len() != 1 || budgets != 1 || wakes != 1 {
		t.Errorf("routes %d, budget loads %d, wakes %d", c.Table().Len(), budgets, wakes)
	}
	if len(fake.synced) != 1 || fake.synced[0][0].Folder != "main" || len(fake.synced[0][0].Overrides) != 1 {
		t.Errorf("synced %+v", fake.synced)
	}
	if !c.setUp["main"] {
		t.Error("main not set up")
	}
	if stale, _ := c.stale(ctx); stale {
		t.Error("stale after a reload")
	}
	fake.rev = 2
	if stale, _ := c.stale(ctx); !stale {
		t.Error("not stale after the revision moved")
	}
}
