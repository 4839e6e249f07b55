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
	// ErrLoopRunning: Run was called on a Loop that is already running.
	ErrLoopRunning = errors.New("scheduler loop already running")
)
