package scheduler

import "errors"

var (
	// ErrBadSchedule: a schedule spec does not parse, or parses but never
	// fires. The wrapping message quotes the spec and lists the accepted forms.
	ErrBadSchedule = errors.New("bad schedule")
	// ErrBadTimezone: the timezone is not an IANA zone name this binary knows.
	ErrBadTimezone = errors.New("unknown time zone")
	// ErrBadMissed: a missed-run policy other than skip, once or all.
	ErrBadMissed = errors.New("bad missed policy")
	// ErrRunWaiting: a claimed on-time slot's turn was not queued because
	// the task's previous on-time run has not started yet; the run is
	// recorded skipped (ClaimQueuer.ClaimAndQueue).
	ErrRunWaiting = errors.New("the task's previous run has not started yet")
	// ErrLoopRunning: Run was called on a Loop that is already running.
	ErrLoopRunning = errors.New("scheduler loop already running")
)
