package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"sync"
	"sync/atomic"

	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/routing"
)

// configStore is what liveConfig reads of the store.
type configStore interface {
	Revision(ctx context.Context) (int64, error)
	ListRoutes(ctx context.Context) ([]routing.Route, error)
	Groups(ctx context.Context) ([]groups.Folder, error)
	AllGrantOverrides(ctx context.Context) (map[groups.Folder][]string, error)
}

// socketSync gives the MCP server the current groups.
type socketSync interface {
	Sync(gs []ipc.Group) error
}

// liveConfig is the configuration the running gateway works from, read
// from the store on every reload: the route table, the group folders set
// up on disk and given MCP sockets, the budgets (the budget guard's).
// The poll loop reloads when the store's revision counter moved (the CLI
// changed something); MCP tools reload at once.
type liveConfig struct {
	st            configStore
	layout        groups.Layout
	exe           string                      // Options.Exe, for the groups' .mcp.json
	mcp           socketSync                  // the groups' MCP sockets (ipc.Server)
	loadBudgets   func(context.Context) error // budgetGuard.load
	wakeScheduler func()
	log           *slog.Logger

	table    atomic.Pointer[routing.Table]
	revision atomic.Int64

	mu        sync.Mutex             // one reload at a time (poll and MCP tools both reload)
	setUp     map[groups.Folder]bool // group folders set up on disk by this process; guarded by mu
	announced bool                   // the start-up log said where the sockets are; guarded by mu
}

// Table is the current route table.
func (c *liveConfig) Table() *routing.Table { return c.table.Load() }

// stale reports whether the store's configuration changed since the last
// reload.
func (c *liveConfig) stale(ctx context.Context) (bool, error) {
	rev, err := c.st.Revision(ctx)
	return err == nil && rev != c.revision.Load(), err
}

// reload rebuilds the route table and sets up group folders.
func (c *liveConfig) reload(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	rev, err := c.st.Revision(ctx)
	if err != nil {
		return fmt.Errorf("read revision: %w", err)
	}
	routes, err := c.st.ListRoutes(ctx)
	if err != nil {
		return fmt.Errorf("load routes: %w", err)
	}
	t, err := routing.New(routes)
	if err != nil {
		return fmt.Errorf("load routes: %w", err)
	}
	folders, err := c.st.Groups(ctx)
	if err != nil {
		return fmt.Errorf("load groups: %w", err)
	}
	c.setupGroups(folders)
	// The table before the sockets: a session that connects the moment
	// its socket appears (at start-up, before any table was stored) saw no
	// routes: find_messages searched none of its chats, and every chat it
	// named "has no owner".
	c.table.Store(t)
	if c.syncMCP(ctx, folders) && !c.announced {
		// The start-up log says what listens where: the sockets too.
		c.announced = true
		root, err := filepath.Abs(c.layout.SocketRoot())
		if err != nil {
			root = c.layout.SocketRoot()
		}
		c.log.Info("mcp sockets listening", "groups", len(folders), "path", filepath.Join(root, "<folder>", "mcp.sock"))
	}
	if err := c.loadBudgets(ctx); err != nil {
		return fmt.Errorf("load budgets: %w", err)
	}
	c.wakeScheduler() // tasks may have been added, paused or resumed
	if old := c.revision.Swap(rev); old != 0 && old != rev {
		c.log.Info("configuration reloaded", "routes", t.Len(), "groups", len(folders))
	}
	return nil
}

// setupGroups creates the working directory and .mcp.json of each folder
// this process has not set up yet (since it was last added), several at a time: with a thousand
// groups on a slow disk one after the other takes seconds.
func (c *liveConfig) setupGroups(folders []groups.Folder) {
	if c.setUp == nil {
		c.setUp = map[groups.Folder]bool{}
	}
	var todo []groups.Folder
	for _, f := range folders {
		if !c.setUp[f] {
			todo = append(todo, f)
		}
	}
	done := make([]bool, len(todo))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, f := range todo {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := c.layout.Setup(f, c.exe); err != nil {
				c.log.Error("set up group folder", "folder", f, "err", err)
				return
			}
			done[i] = true
		})
	}
	wg.Wait()
	for i, f := range todo {
		if done[i] {
			c.setUp[f] = true
		}
	}
	if len(c.setUp) > len(folders) { // forget removed groups: one added again is set up again
		current := make(map[groups.Folder]bool, len(folders))
		for _, f := range folders {
			current[f] = true
		}
		maps.DeleteFunc(c.setUp, func(f groups.Folder, _ bool) bool { return !current[f] })
	}
}

// syncMCP gives the MCP server the current groups and their grant overrides:
// sockets come and go with the groups, and sessions whose tool set changed
// are told so.
func (c *liveConfig) syncMCP(ctx context.Context, folders []groups.Folder) bool {
	over, err := c.st.AllGrantOverrides(ctx)
	if err != nil {
		c.log.Error("load grant overrides for mcp", "err", err)
		return false
	}
	gs := make([]ipc.Group, len(folders))
	for i, f := range folders {
		gs[i] = ipc.Group{Folder: f, Overrides: over[f]}
	}
	if err := c.mcp.Sync(gs); err != nil {
		c.log.Error("mcp socket unavailable: the agents of these groups have no tools until it is fixed", "err", err)
		return false
	}
	return true
}
