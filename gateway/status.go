package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
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

// processStart is when this process started: the heartbeat's Started.
var processStart = time.Now()

// Heartbeat says that a gateway runs, and how.
type Heartbeat struct {
	PID     int       `json:"pid"`
	Time    time.Time `json:"time"`              // last written
	Started time.Time `json:"started,omitempty"` // when this gateway started
	// Stopped is set by a gateway that shut down cleanly; a heartbeat that
	// stops without it is a gateway that died.
	Stopped  bool     `json:"stopped,omitempty"`
	Adapters []string `json:"adapters,omitempty"` // the adapters this gateway runs
	Warning  string   `json:"warning,omitempty"`  // e.g. that agents are not sandboxed
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
		g.beat(ctx, false)
	}
}

// beat writes the heartbeat; stopped says the gateway shuts down cleanly.
func (g *Gateway) beat(ctx context.Context, stopped bool) {
	names := slices.Sorted(maps.Keys(g.adapters))
	h := Heartbeat{PID: os.Getpid(), Time: time.Now().UTC(), Started: processStart.UTC(), Stopped: stopped,
		Adapters: names, Warning: g.opt.Warning}
	b, _ := json.Marshal(h)
	if err := g.st.SetAdapterValue(ctx, HeartbeatNamespace, HeartbeatKey, string(b), 0); err != nil && ctx.Err() == nil {
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

// RuntimeStatus is the gateway's view persisted in the store: adapter
// states and the last heartbeat. It works whether or not a gateway runs.
type RuntimeStatus struct {
	Adapters  map[string]AdapterStatus
	Heartbeat *Heartbeat
}

// ReadRuntimeStatus reads what a running (or the last) gateway persisted:
// the states of the adapters that gateway ran (states an earlier gateway
// left for adapters since disabled are not shown).
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
	if h := rs.Heartbeat; h != nil && h.Adapters != nil {
		maps.DeleteFunc(rs.Adapters, func(name string, _ AdapterStatus) bool { return !slices.Contains(h.Adapters, name) })
	}
	return rs, nil
}
