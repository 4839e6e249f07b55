package agent

import "errors"

var (
	// ErrFailed marks every error of Run that is the agent's fault or the
	// agent configuration's: it could not start, exited non-zero, was killed,
	// timed out or printed output that does not fit agent.output. Shutdown
	// (the caller's ctx ending) is not one of them.
	ErrFailed = errors.New("agent turn failed")
	// ErrUnknownOutput: an output mode other than text, claude-json, codex-json or none.
	ErrUnknownOutput = errors.New("unknown agent output")
	// ErrNoOutcome: a Reattacher has no outcome of the turn and none can
	// come any more (its deadline passed).
	ErrNoOutcome = errors.New("no outcome of the turn by its deadline")
)
