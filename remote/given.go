package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
)

// An outcome counts only from the worker its turn was given to. Which
// worker published it is the subject's (resultSubject): the server lets
// only that worker's credentials publish there (WorkerPermissions). The
// gateway remembers the worker of each turn in memory (Runner.by) and, for
// a restarted gateway that reattaches to its turns, in givenBucket, which
// only the gateway may write.

// resultSubject is where worker publishes the outcome of turn.
func resultSubject(worker, turn string) string { return resultsPrefix + worker + "." + turn }

// fromGiven reports whether the outcome o, read on subject, may be used:
// the subject's worker is the one o names and, when the gateway knows
// which worker it gave o's turn to, that one. Otherwise it logs why it is
// dropped (nothing of it is applied).
func (r *Runner) fromGiven(subject string, o Outcome) bool {
	worker, turn, ok := strings.Cut(strings.TrimPrefix(subject, resultsPrefix), ".")
	if !ok || turn != o.TurnID || worker != o.Worker {
		r.log.Warn("remote outcome not from the worker it names; dropped", "subject", subject, "turn", o.TurnID, "worker", o.Worker)
		return false
	}
	r.mu.Lock()
	given, known := r.by[o.TurnID]
	r.mu.Unlock()
	if known && given != worker {
		r.log.Warn("remote outcome not from the worker the turn was given to; dropped", "turn", o.TurnID, "worker", worker, "given", given)
		return false
	}
	return true
}

// recordGiven remembers that turn goes to worker, before its job is
// published, for a gateway that restarts while the turn runs.
func (r *Runner) recordGiven(ctx context.Context, turn, worker string) error {
	if _, err := r.given.Put(ctx, turn, []byte(worker)); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("agent turn cancelled: %w", ctx.Err())
		}
		return agent.Failed(fmt.Sprintf("record the turn's worker in NATS bucket %s: %v", givenBucket, err))
	}
	return nil
}

// givenTo is the worker turn was given to, as an earlier gateway recorded
// it, now noted as the turn's (Runner.by) so that only its outcome counts.
// A turn without a record (it was never published) has no outcome to wait
// for: the error says so.
func (r *Runner) givenTo(ctx context.Context, turn string) (string, error) {
	e, err := r.given.Get(ctx, turn)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", fmt.Errorf("%w: turn %s was given to no worker (bucket %s); the batch runs again", agent.ErrNoOutcome, turn, givenBucket)
	}
	if err != nil {
		return "", fmt.Errorf("look up the worker of turn %s (bucket %s): %w", turn, givenBucket, err)
	}
	worker := string(e.Value())
	r.mu.Lock()
	r.by[turn] = worker
	r.mu.Unlock()
	return worker, nil
}
