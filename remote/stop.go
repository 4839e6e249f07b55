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
// turn is remembered (stopEarlyKeep) and the turn is not run; the
// gateway also deletes a job its worker did not take yet from the
// worker's queue (dropJob), so that the turn does not run even on a
// worker that forgot the stop or never got it.

const (
	stopResend    = 500 * time.Millisecond
	stopEarlyKeep = 10 * time.Minute
	stopEarlyMax  = 4096
	// dropTimeout bounds dropJob's JetStream calls: a NATS server that
	// does not answer delays a stop or a failover by at most this much.
	dropTimeout = 5 * time.Second
	// publishTimeout bounds the publish of a job, which a stop does not
	// cut short (Run): its outcome, stored or not, must be known.
	publishTimeout = 5 * time.Second
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
// none came. A job still waiting in the worker's queue (seq, its sequence
// in TurnsStream; 0: unknown) is deleted there: no worker runs it later,
// whatever it remembers of the stop (a restarted worker remembers
// nothing), and no outcome is waited for (unrun is then true).
func (r *Runner) stopOnWorker(ctx context.Context, worker, turn string, seq uint64, ch <-chan Outcome) (o Outcome, ok, unrun bool) {
	publish := func() { r.sendStop(worker, turn) }
	// The stop goes first: a worker that fetched the job just before it
	// was deleted (and has not acknowledged it) gets the stop before it
	// runs the job, or while it does.
	publish()
	if r.dropJob(ctx, worker, turn, seq) {
		return Outcome{}, false, true
	}
	resend := time.NewTicker(stopResend)
	defer resend.Stop()
	give := time.NewTimer(r.opt.Grace)
	defer give.Stop()
	for {
		select {
		case o := <-ch:
			return o, true, false
		case <-give.C:
			r.log.Warn("no outcome of a stopped remote turn; recorded as stopped", "turn", turn, "worker", worker, "waited", r.opt.Grace)
			return Outcome{}, false, false
		case <-resend.C:
			publish()
		}
	}
}

// sendStop publishes turn's stop to worker, once.
func (r *Runner) sendStop(worker, turn string) {
	if err := r.nc.Publish(stopSubject(worker, turn), nil); err != nil {
		r.log.Warn("send a turn's stop to its worker", "turn", turn, "worker", worker, "err", err)
	}
}

// dropJob deletes turn's job (seq in TurnsStream; 0: unknown) from
// worker's queue if it still waits there, and reports whether it did. A
// job its worker took is acknowledged, and so gone from the work queue
// already: that turn is the worker's to stop. ctx is the turn's, ended
// already when the turn is stopped: the calls run without its
// cancellation, for at most dropTimeout.
func (r *Runner) dropJob(ctx context.Context, worker, turn string, seq uint64) bool {
	if seq == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
	defer cancel()
	s, err := r.js.Stream(ctx, TurnsStream)
	if err == nil {
		err = s.DeleteMsg(ctx, seq)
	}
	if err != nil {
		r.log.Debug("remote turn not in its worker's queue (taken already)", "turn", turn, "worker", worker, "err", err)
		return false
	}
	r.log.Info("remote turn removed from its worker's queue", "turn", turn, "worker", worker)
	return true
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
