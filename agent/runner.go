package agent

import "context"

// Runner runs one agent turn. Local runs it here (Run); a remote runner
// (package remote) hands it to a worker machine and waits for its result.
// Implementations return what Run returns: a Result filled also on failure,
// errors wrapping ErrFailed, and "agent turn cancelled: …" when ctx ended.
type Runner interface {
	Run(ctx context.Context, spec Spec, in Input) (Result, error)
}

// Local runs turns on this machine with Run.
type Local struct{}

// Run is Run.
func (Local) Run(ctx context.Context, spec Spec, in Input) (Result, error) { return Run(ctx, spec, in) }

// Failed is an error wrapping ErrFailed whose message is msg: how a remote
// runner hands on the error a worker's Run reported.
func Failed(msg string) error { return failed(nil, "%s", msg) }
