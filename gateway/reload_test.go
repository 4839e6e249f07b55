package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	onSync func() // called as Sync opens the sockets
}

func (c *configFake) Revision(context.Context) (int64, error)             { return c.rev, nil }
func (c *configFake) ListRoutes(context.Context) ([]routing.Route, error) { return c.routes, nil }
func (c *configFake) Groups(context.Context) ([]groups.Folder, error)     { return c.groups, nil }
func (c *configFake) AllGrantOverrides(context.Context) (map[groups.Folder][]string, error) {
	return map[groups.Folder][]string{"main": {"send"}}, nil
}
func (c *configFake) Sync(gs []ipc.Group) error {
	c.synced = append(c.synced, gs)
	if c.onSync != nil {
		c.onSync()
	}
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

// The route table is loaded before the MCP server opens the groups'
// sockets: a session connecting the moment its socket appeared at
// start-up was served with no table, so find_messages searched none of
// the group's chats and every chat it named had no owner (the
// TestFindMessagesWithoutChatKeepsJIDDenials flake: "acme ... finds []").
func TestSocketsOpenWithTheTableLoaded(t *testing.T) {
	fake := &configFake{rev: 1, groups: []groups.Folder{"main"},
		routes: []routing.Route{(routing.Route{ID: 1, Match: map[string]string{"chat_jid": "test:room"}, Target: "main"}).Normalize()}}
	c := &liveConfig{st: fake, mcp: fake, layout: groups.Layout{DataDir: t.TempDir()}, exe: "switchboard", log: slog.New(slog.DiscardHandler),
		loadBudgets: func(context.Context) error { return nil }, wakeScheduler: func() {}}
	var owner groups.Folder
	var owned bool
	fake.onSync = func() { owner, owned = c.Table().Owner("test:room", "") }
	if err := c.reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !owned || owner != "main" {
		t.Errorf("as the sockets opened, test:room was owned by %q (%v), want main", owner, owned)
	}
}

// TestRemovedGroupSetUpAgain: what the reloads remember as set up does not
// grow with every group ever added and removed, and a group removed (its
// folder then deleted) and added again is set up again by the reload.
func TestRemovedGroupSetUpAgain(t *testing.T) {
	dir := t.TempDir()
	fake := &configFake{rev: 1, groups: []groups.Folder{"main", "temp"}}
	c := &liveConfig{st: fake, mcp: fake, layout: groups.Layout{DataDir: dir}, exe: "switchboard", log: slog.New(slog.DiscardHandler),
		loadBudgets: func(context.Context) error { return nil }, wakeScheduler: func() {}}
	ctx := context.Background()
	if err := c.reload(ctx); err != nil {
		t.Fatal(err)
	}
	mcpJSON := filepath.Join(c.layout.Dir("temp"), ".mcp.json")
	if _, err := os.Stat(mcpJSON); err != nil {
		t.Fatalf("temp not set up: %v", err)
	}
	for i := range 100 {
		fake.groups = []groups.Folder{"main", groups.Folder(fmt.Sprintf("g%d", i))}
		if err := c.reload(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.setUp) > 2 {
		t.Errorf("%d folders remembered as set up after 100 groups added and removed; want the 2 current", len(c.setUp))
	}
	if err := os.RemoveAll(c.layout.Dir("temp")); err != nil {
		t.Fatal(err)
	}
	fake.groups = []groups.Folder{"main", "temp"}
	if err := c.reload(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mcpJSON); err != nil {
		t.Errorf("temp added again is not set up again: %v", err)
	}
}

// TestStartupLogSaysWhereSocketsAre: the first reload (at start) logs where
// the groups' MCP sockets listen, once; later reloads do not repeat it.
func TestStartupLogSaysWhereSocketsAre(t *testing.T) {
	dir := t.TempDir()
	var logs strings.Builder
	fake := &configFake{rev: 1, groups: []groups.Folder{"main", "root"}}
	c := &liveConfig{st: fake, mcp: fake, layout: groups.Layout{DataDir: dir}, exe: "switchboard", log: slog.New(slog.NewTextHandler(&logs, nil)),
		loadBudgets: func(context.Context) error { return nil }, wakeScheduler: func() {}}
	ctx := context.Background()
	if err := c.reload(ctx); err != nil {
		t.Fatal(err)
	}
	want := `msg="mcp sockets listening" groups=2 path=` + filepath.Join(dir, "ipc", "<folder>", "mcp.sock")
	if !strings.Contains(logs.String(), want) {
		t.Errorf("start-up log lacks %q:\n%s", want, logs.String())
	}
	fake.rev = 2
	if err := c.reload(ctx); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "mcp sockets listening"); n != 1 {
		t.Errorf("said %d times:\n%s", n, logs.String())
	}
}
