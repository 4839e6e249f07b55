package gateway

import (
	"context"
	"maps"
	"os"
	"slices"
	"time"

	"switchboard/ops"
)

// heartbeatEvery is how often the poll loop writes the heartbeat.
const heartbeatEvery = 5 * time.Second

// processStart is when this process started: the heartbeat's Started.
var processStart = time.Now()

// persistStatus writes the adapters' states when they changed and a
// heartbeat now and then; the poll loop calls it.
func (g *Gateway) persistStatus(ctx context.Context, beat bool) {
	g.states.mu.Lock()
	dirty := g.states.dirty
	g.states.dirty = false
	states := make(map[string]ops.AdapterStatus, len(g.states.m))
	for k, v := range g.states.m {
		states[k] = v
	}
	g.states.mu.Unlock()
	if dirty {
		for name, st := range states {
			if err := ops.WriteAdapterStatus(ctx, g.st, name, st); err != nil && ctx.Err() == nil {
				g.log.Error("persist adapter state", "adapter", name, "err", err)
			}
		}
	}
	if beat {
		g.beat(ctx, false)
	}
}

// beat writes the heartbeat; stopped says the gateway shuts down cleanly.
func (g *Gateway) beat(ctx context.Context, stopped bool) {
	names := slices.Sorted(maps.Keys(g.adapters))
	h := ops.Heartbeat{PID: os.Getpid(), Time: time.Now().UTC(), Started: processStart.UTC(), Stopped: stopped,
		Adapters: names, Warning: g.opt.Warning}
	if err := ops.WriteHeartbeat(ctx, g.st, h); err != nil && ctx.Err() == nil {
		g.log.Error("persist heartbeat", "err", err)
	}
}

// persistStopped records a clean shutdown, with the adapters' last states,
// so that status tells a stopped gateway from one that died. Run calls it
// last, before the caller closes the store.
func (g *Gateway) persistStopped(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	g.persistStatus(ctx, false)
	g.beat(ctx, true)
}
