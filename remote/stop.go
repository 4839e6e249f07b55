package remote

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"switchboard/agent"
)

// Stopping a turn on its worker (CONTRACT §15 "Stop"): when the ctx of a
// Run ends with agent.ErrStopped as its cause, the gateway publishes on
// core NATS to stopPrefix<worker>.<turn> (only the gateway may publish
// there, only that worker subscribe: auth.go), again every stopResend
// until the outcome comes; the worker cancels that turn's agent.Run with
// the same cause (its process group is killed: agent.stopGrace) and
// publishes an outcome marked Stopped, with the usage and session so far
// and its folder changes. A stop that comes before the worker took the
// turn is remembered (stopEarlyKeep) and the turn is not run.

const (
	stopResend    = 500 * time.Millisecond
	stopEarlyKeep = 10 * time.Minute
	stopEarlyMax  = 4096
)

func stopSubject(worker, turn string) string { return stopPrefix + worker + "." + turn }

// workerStops are the worker's turns that may be stopped.
type workerStops struct {
	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	early   map[string]time.Time // stopped before they ran
}

// begin registers turn, cancelled through cancel; false when a stop for
// it came already (the turn is not to run).
func (s *workerStops) begin(turn string, cancel context.CancelCauseFunc) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.early[turn]; ok {
		delete(s.early, turn)
		return false
	}
	if s.running == nil {
		s.running = map[string]context.CancelCauseFunc{}
	}
	s.running[turn] = cancel
	return true
}

func (s *workerStops) end(turn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, turn)
}

// stop stops turn, or remembers the stop until it starts.
func (s *workerStops) stop(turn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel, ok := s.running[turn]; ok {
		cancel(agent.ErrStopped)
		return
	}
	if s.early == nil {
		s.early = map[string]time.Time{}
	}
	now := time.Now()
	if len(s.early) >= stopEarlyMax {
		for t, at := range s.early {
			if now.Sub(at) > stopEarlyKeep || len(s.early) >= stopEarlyMax {
				delete(s.early, t)
			}
		}
	}
	s.early[turn] = now
}

// listenStops subscribes the worker to the stops of its turns.
func (w *Worker) listenStops() (*nats.Subscription, error) {
	prefix := stopPrefix + w.opt.ID + "."
	return w.nc.Subscribe(prefix+"*", func(m *nats.Msg) {
		turn := strings.TrimPrefix(m.Subject, prefix)
		if !validTurnID(turn) {
			return
		}
		w.log.Info("turn stop received", "worker", w.opt.ID, "turn", turn)
		w.stops.stop(turn)
	})
}

// stopOnWorker stops turn on worker and waits for its outcome on ch,
// resending the stop until it comes or grace passes. ok is false when
// none came.
func (r *Runner) stopOnWorker(worker, turn string, ch <-chan Outcome) (o Outcome, ok bool) {
	subject := stopSubject(worker, turn)
	resend := time.NewTicker(stopResend)
	defer resend.Stop()
	give := time.NewTimer(r.opt.Grace)
	defer give.Stop()
	for {
		if err := r.nc.Publish(subject, nil); err != nil {
			r.log.Warn("send a turn's stop to its worker", "turn", turn, "worker", worker, "err", err)
		}
		select {
		case o := <-ch:
			return o, true
		case <-give.C:
			r.log.Warn("no outcome of a stopped remote turn; recorded as stopped", "turn", turn, "worker", worker, "waited", r.opt.Grace)
			return Outcome{}, false
		case <-resend.C:
		}
	}
}

// stoppedResult is what Run returns for a turn stopped on its worker: the
// outcome's usage, session and duration (when it came), and the error of
// a stopped turn (agent.Ended).
func stoppedResult(ctx context.Context, o Outcome, came bool, res agent.Result) (agent.Result, error) {
	if came {
		session := res.SessionID
		res, _ = outcomeResult(o, session)
		res.Reply, res.Replies = "", nil
	}
	return res, agent.Ended(ctx)
}
