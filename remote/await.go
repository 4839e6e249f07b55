package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
)

var _ agent.Reattacher = (*Runner)(nil)

// Await is agent.Reattacher: the outcome of a turn that an earlier gateway
// published, found on ResultsStream (kept for an hour), or else the one a
// worker publishes until deadline + Grace. Either way it becomes a Result
// in outcomeResult, as Run's does. Only an outcome from the worker
// StateDir recorded for the turn, for its recorded folder, is accepted
// (acceptOutcome); a turn without a record has no outcome.
func (r *Runner) Await(ctx context.Context, turn agent.TurnID, deadline time.Time) (agent.Result, error) {
	res := agent.Result{ExitCode: -1}
	turnID := string(turn)
	rec, ok := r.recorded(turnID)
	if !ok {
		return res, fmt.Errorf("%w: this gateway has no record of the turn's folder and worker (in %q), so no outcome of it is applied; the batch runs again",
			agent.ErrNoOutcome, r.opt.StateDir)
	}
	defer func() {
		if ctx.Err() == nil || agent.StopRequested(ctx) { // a stopped turn is over
			r.unrecord(turnID)
		}
	}()
	// Waiting before looking: an outcome published during the look-up is
	// delivered, not missed (deliver hands it over once).
	ch, forget := r.expect(turnID, rec.Dir, rec.Worker)
	defer forget()
	wait := time.NewTimer(time.Until(deadline) + r.opt.Grace)
	defer wait.Stop()
	check := time.NewTicker(r.opt.Check)
	defer check.Stop()
	for looked := false; ; {
		if !looked {
			o, found, err := r.lookUp(ctx, rec.Worker, turnID)
			switch {
			case found && r.acceptOutcome(o):
				// Published while no gateway read the stream: its folder
				// changes were not applied either (applying twice is harmless).
				r.applyFolder(o)
				return awaitedResult(o)
			case found: // refused, or delivered meanwhile: the reader has it
				looked = true
			case err != nil && ctx.Err() == nil:
				// Looked again at the next check; the outcome may come
				// through the consumer meanwhile.
				r.log.Warn("look up a remote turn's outcome", "turn", turnID, "err", err)
			default:
				looked = true
			}
		}
		select {
		case o := <-ch:
			return awaitedResult(o)
		case <-ctx.Done():
			if agent.StopRequested(ctx) {
				o, came, unrun := r.stopOnWorker(ctx, rec.Worker, turnID, rec.Seq, ch)
				res.NotStarted = unrun
				return stoppedResult(ctx, o, came, res)
			}
			return res, agent.Cancelled(ctx.Err())
		case <-check.C:
		case <-wait.C:
			res.TimedOut = true
			return res, fmt.Errorf("%w (agent.timeout after its start + %s): no worker published it; the batch runs again", agent.ErrNoOutcome, r.opt.Grace)
		}
	}
}

// awaitedResult is outcomeResult of an awaited turn's outcome, except that
// an outcome marked Stopped ends with agent.ErrStopped: only a gateway
// stops a turn, so the earlier gateway process stopped it (a /stop, then
// that gateway stopped before it recorded the turn), and it is recorded
// stopped, not failed.
func awaitedResult(o Outcome) (agent.Result, error) {
	res, err := outcomeResult(o, "")
	if o.Stopped && o.Error == "" {
		return res, fmt.Errorf("%w before the gateway restarted (on worker %s)", agent.ErrStopped, o.Worker)
	}
	return res, err
}

// lookUpTimeout bounds Await's look-up of an outcome already published,
// which a stop does not cut short (lookUp).
const lookUpTimeout = 5 * time.Second

// lookUp is published, run without ctx's cancellation (for at most
// lookUpTimeout): a turn stopped before or while it is awaited may have
// ended on its worker already, its outcome (usage included) then being
// the turn's: under the stopped ctx the look-up would fail, and the stop
// wait out Grace for an outcome published before it.
func (r *Runner) lookUp(ctx context.Context, worker, turn string) (Outcome, bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookUpTimeout)
	defer cancel()
	return r.published(ctx, worker, turn)
}

// published is the outcome of turn that worker published on
// ResultsStream already, if any.
func (r *Runner) published(ctx context.Context, worker, turn string) (Outcome, bool, error) {
	s, err := r.js.Stream(ctx, ResultsStream)
	if err != nil {
		return Outcome{}, false, fmt.Errorf("stream %s: %w", ResultsStream, err)
	}
	subj := resultSubject(worker, turn)
	m, err := s.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Outcome{}, false, nil
	}
	if err != nil {
		return Outcome{}, false, fmt.Errorf("last message on %s: %w", subj, err)
	}
	var o Outcome
	if err := json.Unmarshal(m.Data, &o); err != nil || o.TurnID != turn || o.Worker != worker {
		return Outcome{}, false, fmt.Errorf("outcome on %s unreadable or not %s's: %v", subj, worker, err)
	}
	return o, true, nil
}
