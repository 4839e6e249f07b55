package scheduler

import (
	"fmt"
	"strings"
	"time"
)

// Missed is a task's policy for slots that fell due while the gateway was
// not running (or could not keep up).
type Missed string

const (
	// MissedSkip runs none of the missed slots; the task resumes at its
	// first slot after now. It is the default.
	MissedSkip Missed = "skip"
	// MissedOnce runs the latest missed slot once.
	MissedOnce Missed = "once"
	// MissedAll runs every missed slot, oldest first, keeping at most the
	// latest MaxCatchup of them.
	MissedAll Missed = "all"
)

// MaxCatchup is the default cap on the slots MissedAll runs after one
// downtime.
const MaxCatchup = 100

// ParseMissed validates a policy name; "" is MissedSkip.
func ParseMissed(s string) (Missed, error) {
	switch m := Missed(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return MissedSkip, nil
	case MissedSkip, MissedOnce, MissedAll:
		return m, nil
	}
	return "", fmt.Errorf("%w %q: want skip, once or all", ErrBadMissed, s)
}

// Catchup applies a missed-run policy. next is the task's first unrun slot
// (its stored Next) and now the cut-off: the missed slots are next and
// every later slot up to and including now. It returns the slots to run now,
// oldest first, the task's new Next (the first slot after now; ok is false
// when the schedule has none left, so the task is complete once runs are
// done), and how many missed slots are not in runs:
//
//   - skip (and any unknown policy): no runs; every missed slot is dropped.
//   - once: the latest missed slot; the others are dropped.
//   - all: every missed slot, but at most max (MaxCatchup when max <= 0),
//     keeping the latest ones; the older ones are dropped.
//
// When next is after now nothing was missed: no runs, newNext = next. A zero
// next means the task has no slot: no runs and ok = false.
func Catchup(s Schedule, next, now time.Time, policy Missed, max int) (runs []time.Time, newNext time.Time, ok bool, dropped int) {
	if next.IsZero() {
		return nil, time.Time{}, false, 0
	}
	if next.After(now) {
		return nil, next, true, 0
	}
	if max <= 0 {
		max = MaxCatchup
	}
	next = next.In(s.Location())
	keep := 0
	switch policy {
	case MissedOnce:
		keep = 1
	case MissedAll:
		keep = max
	}
	if s.kind == KindInterval {
		return catchupInterval(s, next, now, keep)
	}
	// Walk every missed slot, keeping the latest `keep` in a ring.
	ring := make([]time.Time, 0, min(keep, 16))
	missed, head := 0, 0
	for t := next; ; {
		missed++
		if len(ring) < keep {
			ring = append(ring, t)
		} else if keep > 0 {
			ring[head] = t
			head = (head + 1) % keep
		}
		t, ok = s.Next(t)
		if !ok || t.After(now) {
			newNext = t
			break
		}
	}
	runs = append(ring[head:len(ring):len(ring)], ring[:head]...)
	if len(runs) == 0 {
		runs = nil
	}
	return runs, newNext, ok, missed - len(runs)
}

// catchupInterval is Catchup for an interval schedule, by arithmetic: the
// missed slots are next + k*every for k in [0, n).
func catchupInterval(s Schedule, next, now time.Time, keep int) ([]time.Time, time.Time, bool, int) {
	n := int64(now.Sub(next)/s.every) + 1
	k := max(n-int64(keep), 0)
	var runs []time.Time
	for ; k < n; k++ {
		runs = append(runs, next.Add(time.Duration(k)*s.every).In(s.loc))
	}
	return runs, next.Add(time.Duration(n) * s.every).In(s.loc), true, int(n) - len(runs)
}
