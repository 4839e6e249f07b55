package agent

import (
	"context"
	"time"
)

// Runner runs one agent turn. Local runs it here (Run); a remote runner
// (package remote) hands it to a worker machine and waits for its result.
// Implementations return what Run returns: a Result filled also on failure,
// errors wrapping ErrFailed, and "agent turn cancelled: …" when ctx ended.
type Runner interface {
	Run(ctx context.Context, spec Spec, in Input) (Result, error)
}

// Reattacher is a Runner whose turns run elsewhere and outlive the
// gateway that started them (package remote): a restarted gateway awaits
// the outcome of a turn an earlier one started instead of running its
// batch again. Local has no such turns (they die with the gateway).
type Reattacher interface {
	Runner
	// Await returns the outcome of the turn with this id (the
	// SWITCHBOARD_TURN_ID it ran with) as Run would have returned it: at
	// once if it is already known, else when it comes. deadline is the
	// turn's own (its start + agent.timeout); the implementation adds the
	// grace it gives Run. An error wrapping ErrNoOutcome means none came
	// by then; "agent turn cancelled: …" that ctx ended first.
	Await(ctx context.Context, turnID string, deadline time.Time) (Result, error)
}

// Local runs turns on this machine with Run.
type Local struct{}

// Run is Run.
func (Local) Run(ctx context.Context, spec Spec, in Input) (Result, error) { return Run(ctx, spec, in) }

// Failed is an error wrapping ErrFailed whose message is msg: how a remote
// runner hands on the error a worker's Run reported.
func Failed(msg string) error { return failed(nil, "%s", msg) }
