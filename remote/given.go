package remote

import "strings"

// An outcome counts only from the worker its turn was given to. Which
// worker published it is the subject's (resultSubject): the server lets
// only that worker's credentials publish there (workerPermissions).
// fromSubject checks that an outcome is the subject's worker's own;
// acceptOutcome (accept.go) that this worker is the one the gateway gave
// the turn to, as its own book of turns says.

// resultSubject is where worker publishes the outcome of turn.
func resultSubject(worker, turn string) string { return resultsPrefix + worker + "." + turn }

// fromSubject reports whether the outcome o, read on subject, is the one
// of the worker and turn the subject names; otherwise it logs why it is
// dropped (nothing of it is applied).
func (r *Runner) fromSubject(subject string, o Outcome) bool {
	worker, turn, ok := strings.Cut(strings.TrimPrefix(subject, resultsPrefix), ".")
	if !ok || turn != o.TurnID || worker != o.Worker {
		r.log.Warn("remote outcome not from the worker it names; dropped", "subject", subject, "turn", o.TurnID, "worker", o.Worker)
		r.refused.Add(1) // after the log: whoever sees the count sees the log
		return false
	}
	return true
}
