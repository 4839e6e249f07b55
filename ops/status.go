package ops

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// Keys under which a gateway persists what `switchboard status` reads.
const (
	// stateKey holds each adapter's AdapterStatus (JSON), in its namespace.
	stateKey = "_state"
	// heartbeatKey holds the gateway's Heartbeat (JSON) in the namespace
	// heartbeatNamespace.
	heartbeatKey       = "heartbeat"
	heartbeatNamespace = "_gateway"
)

// AdapterStatus is an adapter's connection state as last reported.
type AdapterStatus struct {
	State adapters.State `json:"state"`
	Err   string         `json:"error,omitempty"`
	Since time.Time      `json:"since"`
}

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

// WriteAdapterStatus persists adapter name's state for ReadRuntimeStatus.
func WriteAdapterStatus(ctx context.Context, st *store.Store, name string, s AdapterStatus) error {
	b, _ := json.Marshal(s)
	return st.SetAdapterValue(ctx, name, stateKey, string(b), 0)
}

// WriteHeartbeat persists the gateway's heartbeat for ReadRuntimeStatus.
func WriteHeartbeat(ctx context.Context, st *store.Store, h Heartbeat) error {
	b, _ := json.Marshal(h)
	return st.SetAdapterValue(ctx, heartbeatNamespace, heartbeatKey, string(b), 0)
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
	vals, err := st.ValuesByKey(ctx, stateKey)
	if err != nil {
		return rs, err
	}
	for name, v := range vals {
		var s AdapterStatus
		if json.Unmarshal([]byte(v), &s) == nil {
			rs.Adapters[name] = s
		}
	}
	if v, ok, err := st.AdapterValue(ctx, heartbeatNamespace, heartbeatKey); err != nil {
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
