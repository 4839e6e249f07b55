package gateway

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"switchboard/store"
)

// Keys under which the gateway persists what `switchboard status` reads.
const (
	// StateKey holds each adapter's AdapterStatus (JSON), in its namespace.
	StateKey = "_state"
	// HeartbeatKey holds the gateway's Heartbeat (JSON) in the namespace
	// HeartbeatNamespace.
	HeartbeatKey       = "heartbeat"
	HeartbeatNamespace = "_gateway"
	heartbeatEvery     = 5 * time.Second
)

// Heartbeat says that a gateway runs, and how.
type Heartbeat struct {
	PID     int       `json:"pid"`
	Time    time.Time `json:"time"`
	Warning string    `json:"warning,omitempty"` // e.g. that agents are not sandboxed
}

// persistStatus writes the adapters' states when they changed and a
// heartbeat now and then; the poll loop calls it.
func (g *Gateway) persistStatus(ctx context.Context, beat bool) {
	g.states.mu.Lock()
	dirty := g.states.dirty
	g.states.dirty = false
	states := make(map[string]AdapterStatus, len(g.states.m))
	for k, v := range g.states.m {
		states[k] = v
	}
	g.states.mu.Unlock()
	if dirty {
		for name, st := range states {
			b, _ := json.Marshal(st)
			if err := g.st.SetAdapterValue(ctx, name, StateKey, string(b), 0); err != nil && ctx.Err() == nil {
				g.log.Error("persist adapter state", "adapter", name, "err", err)
			}
		}
	}
	if beat {
		b, _ := json.Marshal(Heartbeat{PID: os.Getpid(), Time: time.Now().UTC(), Warning: g.opt.Warning})
		if err := g.st.SetAdapterValue(ctx, HeartbeatNamespace, HeartbeatKey, string(b), 0); err != nil && ctx.Err() == nil {
			g.log.Error("persist heartbeat", "err", err)
		}
	}
}

// RuntimeStatus is the gateway's view persisted in the store: adapter
// states and the last heartbeat. It works whether or not a gateway runs.
type RuntimeStatus struct {
	Adapters  map[string]AdapterStatus
	Heartbeat *Heartbeat
}

// ReadRuntimeStatus reads what a running (or the last) gateway persisted.
func ReadRuntimeStatus(ctx context.Context, st *store.Store) (RuntimeStatus, error) {
	rs := RuntimeStatus{Adapters: map[string]AdapterStatus{}}
	vals, err := st.ValuesByKey(ctx, StateKey)
	if err != nil {
		return rs, err
	}
	for name, v := range vals {
		var s AdapterStatus
		if json.Unmarshal([]byte(v), &s) == nil {
			rs.Adapters[name] = s
		}
	}
	if v, ok, err := st.AdapterValue(ctx, HeartbeatNamespace, HeartbeatKey); err != nil {
		return rs, err
	} else if ok {
		var h Heartbeat
		if json.Unmarshal([]byte(v), &h) == nil {
			rs.Heartbeat = &h
		}
	}
	return rs, nil
}
