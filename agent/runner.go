package agent

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// This file is the one place that says what a runner is: the Runner
// interface every runner implements, and the optional capabilities a
// caller (the gateway) finds by type assertion, never by a list kept
// beside the runner.

// Runner runs one agent turn. Local runs it here (Run); a remote runner
// (package remote) hands it to a worker machine and waits for its result.
// Implementations return what Run returns: a Result filled also on failure,
// errors wrapping ErrFailed, and errors wrapping ErrCancelled (and the
// ctx's error) when ctx ended. agent/runnertest is the suite every runner
// passes.
type Runner interface {
	Run(ctx context.Context, spec Spec, in Input) (Result, error)
}

// Reattacher is a Runner whose turns run elsewhere and outlive the
// gateway that started them (package remote): a restarted gateway awaits
// the outcome of a turn an earlier one started instead of running its
// batch again. Local has no such turns (they die with the gateway).
type Reattacher interface {
	Runner
	// Await returns the outcome of the turn with this id (Input.TurnID
	// when it ran) as Run would have returned it, with the steering
	// messages its agent took in Result.Steered: at once if it is already
	// known, else when it comes. deadline is the turn's own (its start +
	// agent.timeout); the implementation adds the grace it gives Run. An
	// error wrapping ErrNoOutcome means none came by then; one wrapping
	// ErrCancelled that ctx ended first.
	Await(ctx context.Context, turn TurnID, deadline time.Time) (Result, error)
}

// StaleFolderCounter is a Runner that refuses the folder changes of a
// turn whose group folder moved on meanwhile (package remote: a stale
// worker's upload) and counts them, for the gateway's metrics.
type StaleFolderCounter interface {
	Runner
	// StaleFolderUploads is how many were refused since the runner started.
	StaleFolderUploads() int64
}

// Local runs turns on this machine with Run.
type Local struct{}

// Run is Run.
func (Local) Run(ctx context.Context, spec Spec, in Input) (Result, error) { return Run(ctx, spec, in) }

// Failed is an error wrapping ErrFailed whose message is msg: how a remote
// runner hands on the error a worker's Run reported.
func Failed(msg string) error { return failed(nil, "%s", msg) }

// Cancelled is the error of a turn whose ctx ended with cause (ctx.Err()):
// "agent turn cancelled: context canceled", wrapping ErrCancelled and
// cause, never ErrFailed.
func Cancelled(cause error) error { return fmt.Errorf("%w: %w", ErrCancelled, cause) }

// Ended is the error of a turn whose ctx ended: Cancelled(ctx.Err()),
// also wrapping ErrStopped when the ctx was cancelled with ErrStopped as
// its cause (a person stopped the turn).
func Ended(ctx context.Context) error {
	if StopRequested(ctx) {
		return fmt.Errorf("%w: %w", ErrStopped, Cancelled(ctx.Err()))
	}
	return Cancelled(ctx.Err())
}

// StopRequested reports whether ctx was cancelled with ErrStopped as its
// cause.
func StopRequested(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrStopped)
}
