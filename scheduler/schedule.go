package scheduler

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Kind is the form of a schedule.
type Kind string

const (
	KindCron     Kind = "cron"     // 5-field cron or a descriptor such as @daily
	KindInterval Kind = "interval" // "@every 15m" or "every 15m"
	KindOnce     Kind = "once"     // an RFC 3339 instant
)

const (
	// MinInterval is the shortest interval schedule accepted. Every slot
	// starts an agent turn, so anything shorter is almost surely a mistake
	// (and a cost); ten seconds still allows quick tests.
	MinInterval = 10 * time.Second
	// DefaultPreview is the number of slots Preview lists when asked for none.
	DefaultPreview = 5
	// MaxPreview caps the number of slots Preview lists.
	MaxPreview = 100
)

// acceptedForms ends every ErrBadSchedule message, so a user (or agent) who
// got the spec wrong sees what would have worked.
const acceptedForms = `use a 5-field cron "minute hour day-of-month month day-of-week" ` +
	`such as "0 9 * * 1-5", a descriptor (@yearly @annually @monthly @weekly @daily @midnight @hourly), ` +
	`an interval such as "@every 15m" or "every 1h30m", ` +
	`or an RFC 3339 instant such as "2026-11-21T09:00:00Z"`

// Schedule is a parsed schedule bound to a time zone. It is immutable and
// safe for concurrent use. The zero Schedule never fires.
type Schedule struct {
	kind  Kind
	spec  string
	loc   *time.Location
	cron  *cronSpec     // KindCron
	every time.Duration // KindInterval
	at    time.Time     // KindOnce
}

// Kind reports the schedule's form.
func (s Schedule) Kind() Kind { return s.kind }

// Spec returns the spec as given to Parse, trimmed of surrounding space.
func (s Schedule) Spec() string { return s.spec }

// Location returns the zone the schedule is evaluated in (UTC for the zero
// Schedule).
func (s Schedule) Location() *time.Location {
	if s.loc == nil {
		return time.UTC
	}
	return s.loc
}

// Next returns the first slot strictly after `after`, in the schedule's
// zone, and false when no slot remains (a one-shot whose instant is not
// after `after`, or the zero Schedule).
//
// For an interval, Next(after) is after (truncated to the second) plus the
// interval: call it with the previous slot to get evenly spaced slots, and
// with the current time only to place the first slot of a new task.
func (s Schedule) Next(after time.Time) (time.Time, bool) {
	switch s.kind {
	case KindCron:
		return s.cron.next(after, s.loc)
	case KindInterval:
		return after.Truncate(time.Second).Add(s.every).In(s.loc), true
	case KindOnce:
		if s.at.After(after) {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// Preview parses spec in tz and lists its next count slots after from
// (DefaultPreview when count <= 0, at most MaxPreview). The list is shorter
// when the schedule runs out (a one-shot).
func Preview(spec, tz string, from time.Time, count int) ([]time.Time, error) {
	s, err := Parse(spec, tz)
	if err != nil {
		return nil, err
	}
	if count <= 0 {
		count = DefaultPreview
	}
	count = min(count, MaxPreview)
	slots := make([]time.Time, 0, count)
	for t := from; len(slots) < count; {
		next, ok := s.Next(t)
		if !ok {
			break
		}
		slots = append(slots, next)
		t = next
	}
	return slots, nil
}

// Spelling is spec in one spelling of the forms Parse reads alike, for a
// rule over schedules (a grant glob) to see: trimmed, an interval as
// "@every <duration>" (Parse takes "every 15m" and "@EVERY 15m" too), and
// a cron spec's fields one space apart. It does not validate spec.
func Spelling(spec string) string {
	spec = strings.TrimSpace(spec)
	lower := strings.ToLower(spec)
	if strings.HasPrefix(lower, "@every") || strings.HasPrefix(lower, "every") {
		if _, arg, ok := strings.Cut(spec, " "); ok {
			return "@every " + strings.TrimSpace(arg)
		}
		return spec
	}
	if looksLikeInstant.MatchString(spec) {
		return spec
	}
	return strings.Join(strings.Fields(spec), " ")
}

// Parse parses a schedule spec (see the package doc for the forms) to be
// evaluated in the IANA zone tz; "" means UTC (callers pass the configured
// default). A cron spec that can never fire, such as "0 0 30 2 *", is an
// error. A one-shot instant in the past is not: Parse does not read the
// clock, so callers creating a task check that Next(now) reports a slot.
func Parse(spec, tz string) (Schedule, error) {
	loc, err := LoadZone(tz)
	if err != nil {
		return Schedule{}, err
	}
	spec = strings.TrimSpace(spec)
	s := Schedule{spec: spec, loc: loc}
	lower := strings.ToLower(spec)
	switch {
	case spec == "":
		return Schedule{}, badSchedule(spec, "empty")
	case strings.HasPrefix(lower, "tz=") || strings.HasPrefix(lower, "cron_tz="):
		return Schedule{}, newZonePrefixError(spec)
	case strings.HasPrefix(lower, "@every") || strings.HasPrefix(lower, "every"):
		s.kind = KindInterval
		s.every, err = parseInterval(spec)
	case looksLikeInstant.MatchString(spec):
		s.kind = KindOnce
		s.at, err = parseInstant(spec, loc)
	default:
		s.kind = KindCron
		s.cron, err = parseCron(spec)
	}
	if err != nil {
		return Schedule{}, err
	}
	return s, nil
}

// ZonePrefixError is a spec that embeds its zone ("CRON_TZ=Europe/Berlin 0 9
// * * *", "TZ=UTC @daily"): the zone belongs in the task's timezone instead.
// Its message names the MCP tools' timezone parameter; a caller whose field
// has another name (the CLI's --tz) builds its own from Zone and Rest. It
// wraps ErrBadSchedule.
type ZonePrefixError struct {
	Spec string // as given, trimmed
	Zone string // the zone the prefix names, e.g. "Europe/Berlin" (may be empty)
	Rest string // the schedule after the prefix, e.g. "0 9 * * *" (may be empty)
}

func newZonePrefixError(spec string) *ZonePrefixError {
	prefix, rest, _ := strings.Cut(spec, " ")
	_, zone, _ := strings.Cut(prefix, "=")
	return &ZonePrefixError{Spec: spec, Zone: zone, Rest: strings.TrimSpace(rest)}
}

func (e *ZonePrefixError) Error() string {
	return badSchedule(e.Spec, "a zone prefix is not accepted; put the zone in the timezone field instead").Error()
}

func (e *ZonePrefixError) Unwrap() error { return ErrBadSchedule }

// badSchedule builds an ErrBadSchedule error quoting spec, giving the reason
// and the accepted forms.
func badSchedule(spec, reason string) error {
	return fmt.Errorf("%w %q: %s (%s)", ErrBadSchedule, spec, reason, acceptedForms)
}

// parseInterval parses "@every D" or "every D" with D a Go duration.
func parseInterval(spec string) (time.Duration, error) {
	_, arg, ok := strings.Cut(spec, " ")
	arg = strings.TrimSpace(arg)
	if !ok || arg == "" {
		return 0, badSchedule(spec, "an interval needs a duration")
	}
	d, err := time.ParseDuration(arg)
	switch {
	case err != nil:
		return 0, badSchedule(spec, fmt.Sprintf("interval %q is not a duration such as 90s, 15m or 1h30m (no d: write 48h)", arg))
	case d < MinInterval:
		return 0, badSchedule(spec, fmt.Sprintf("interval %s is shorter than the minimum %s", d, MinInterval))
	case d%time.Second != 0:
		return 0, badSchedule(spec, fmt.Sprintf("interval %s is not a whole number of seconds", d))
	}
	return d, nil
}

// looksLikeInstant sends date-shaped specs to parseInstant, so that a
// malformed instant is reported as one rather than as a bad cron.
var looksLikeInstant = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt ]`)

// localLayouts are the offset-less instants accepted as wall time in the
// task's zone.
var localLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

// parseInstant parses a one-shot instant, truncated to the second. Without
// an offset it is wall time in loc, resolved like a cron slot.
func parseInstant(spec string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(spec)); err == nil {
		return t.Truncate(time.Second).In(loc), nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, strings.ToUpper(spec), time.UTC); err == nil {
			return wallOf(t).resolve(loc), nil
		}
	}
	return time.Time{}, badSchedule(spec, "not an RFC 3339 instant such as 2026-11-21T09:00:00Z or 2026-11-21T09:00:00+01:00")
}

// zones caches loaded locations: LoadLocation reads the zone file on every
// call, and the loop resolves a task's zone on every pass.
var zones sync.Map // string → *time.Location

// LoadZone loads an IANA zone by name; "" and "UTC" are UTC. "Local" is
// refused: a task must not depend on the host's zone.
func LoadZone(tz string) (*time.Location, error) {
	tz = strings.TrimSpace(tz)
	if tz == "" || tz == "UTC" {
		return time.UTC, nil
	}
	if v, ok := zones.Load(tz); ok {
		return v.(*time.Location), nil
	}
	if strings.EqualFold(tz, "local") {
		return nil, fmt.Errorf("%w %q: name the zone, such as Europe/London, not the host's", ErrBadTimezone, tz)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, fmt.Errorf("%w %q: use an IANA name such as Europe/London or America/New_York", ErrBadTimezone, tz)
	}
	zones.Store(tz, loc)
	return loc, nil
}
