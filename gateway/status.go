package gateway

import (
	"context"
	"log/slog"
	"os"
	"time"

	"switchboard/ops"
	"switchboard/store"
)

// heartbeatEvery is how often the poll loop writes the heartbeat.
const heartbeatEvery = 5 * time.Second

// processStart is when this process started: the heartbeat's Started.
var processStart = time.Now()

// statusSink persists the runtime status that `switchboard status` reads.
type statusSink interface {
	WriteAdapterStatus(ctx context.Context, name string, s ops.AdapterStatus) error
	WriteHeartbeat(ctx context.Context, h ops.Heartbeat) error
}

// storeStatus is the statusSink over the store (control's status rows).
type storeStatus struct{ st *store.Store }

func (s storeStatus) WriteAdapterStatus(ctx context.Context, name string, a ops.AdapterStatus) error {
	return ops.WriteAdapterStatus(ctx, s.st, name, a)
}

func (s storeStatus) WriteHeartbeat(ctx context.Context, h ops.Heartbeat) error {
	return ops.WriteHeartbeat(ctx, s.st, h)
}

// statusWriter persists the adapters' states and the gateway's heartbeat,
// so that `switchboard status` can tell a running gateway from a stopped
// or dead one.
type statusWriter struct {
	sink     statusSink
	states   *adapterStates
	adapters []string // the enabled adapters' names
	warning  string   // Options.Warning
	log      *slog.Logger
}

// persist writes the adapters' states when they changed and a heartbeat
// when beat is set; the poll loop calls it.
func (w statusWriter) persist(ctx context.Context, beat bool) {
	if states, dirty := w.states.takeDirty(); dirty {
		for name, st := range states {
			if err := w.sink.WriteAdapterStatus(ctx, name, st); err != nil && ctx.Err() == nil {
				w.log.Error("persist adapter state", "adapter", name, "err", err)
			}
		}
	}
	if beat {
		w.beat(ctx, false)
	}
}

// beat writes the heartbeat; stopped says the gateway shuts down cleanly.
func (w statusWriter) beat(ctx context.Context, stopped bool) {
	h := ops.Heartbeat{PID: os.Getpid(), Time: time.Now().UTC(), Started: processStart.UTC(), Stopped: stopped,
		Adapters: w.adapters, Warning: w.warning}
	if err := w.sink.WriteHeartbeat(ctx, h); err != nil && ctx.Err() == nil {
		w.log.Error("persist heartbeat", "err", err)
	}
}

// stopped records a clean shutdown, with the adapters' last states, so
// that status tells a stopped gateway from one that died. Run calls it
// last, before the caller closes the store.
func (w statusWriter) stopped(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	w.persist(ctx, false)
	w.beat(ctx, true)
}
