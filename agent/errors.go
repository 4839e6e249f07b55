package agent

import "errors"

var (
	// ErrFailed marks every error of Run that is the agent's fault or the
	// agent configuration's: it could not start, exited non-zero, was killed,
	// timed out or printed output that does not fit agent.output. Shutdown
	// (the caller's ctx ending) is not one of them.
	ErrFailed = errors.New("agent turn failed")
	// ErrUnknownOutput: an output mode other than text, claude-json, claude-stream, codex-json or none.
	ErrUnknownOutput = errors.New("unknown agent output")
	// ErrNoOutcome: a Reattacher has no outcome of the turn and none can
	// come any more (its deadline passed).
	ErrNoOutcome = errors.New("no outcome of the turn by its deadline")
	// ErrCancelled marks a turn that ended because the caller's ctx ended
	// (shutdown), not through the agent's fault: every Runner's Run and
	// Await return it (with ctx.Err()) then, never ErrFailed.
	ErrCancelled = errors.New("agent turn cancelled")
	// ErrStopped is the cause a caller cancels a turn's ctx with
	// (context.WithCancelCause) when a person stopped the turn (/stop, the
	// Stop button): Run then ends the process group at once (SIGTERM,
	// SIGKILL stopGrace later) and returns an error wrapping ErrStopped
	// and ErrCancelled, with the usage reported so far.
	ErrStopped = errors.New("agent turn stopped")
	// ErrNoSandbox: agent.sandbox is bwrap and bubblewrap is missing or
	// does not work here (NewSandbox).
	ErrNoSandbox = errors.New("agent.sandbox: bwrap")
	// ErrBadTurnID: a turn id that is not 1 to 64 of [A-Za-z0-9_-].
	ErrBadTurnID = errors.New("bad turn id")
)
