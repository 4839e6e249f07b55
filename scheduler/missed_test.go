package scheduler

import (
	"errors"
	"testing"
	"time"
)

func formatAll(ts []time.Time) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Format(time.RFC3339))
	}
	return out
}

func TestCatchup(t *testing.T) {
	cases := []struct {
		name, spec, tz, next, now string
		policy                    Missed
		max                       int
		runs                      []string
		newNext                   string // "" when ok is false
		dropped                   int
	}{
		// Hourly, down from 10:00 to 15:30: 10, 11, 12, 13, 14 and 15 missed.
		{"skip", "0 * * * *", "", "2026-11-20T10:00:00Z", "2026-11-20T15:30:00Z", MissedSkip, 0,
			nil, "2026-11-20T16:00:00Z", 6},
		{"empty policy is skip", "0 * * * *", "", "2026-11-20T10:00:00Z", "2026-11-20T15:30:00Z", "", 0,
			nil, "2026-11-20T16:00:00Z", 6},
		{"unknown policy is skip", "0 * * * *", "", "2026-11-20T10:00:00Z", "2026-11-20T15:30:00Z", "sometimes", 0,
			nil, "2026-11-20T16:00:00Z", 6},
		{"once runs the latest", "0 * * * *", "", "2026-11-20T10:00:00Z", "2026-11-20T15:30:00Z", MissedOnce, 0,
			[]string{"2026-11-20T15:00:00Z"}, "2026-11-20T16:00:00Z", 5},
		{"all runs each in order", "0 * * * *", "", "2026-11-20T10:00:00Z", "2026-11-20T15:30:00Z", MissedAll, 0,
			[]string{"2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z", "2026-11-20T12:00:00Z",
				"2026-11-20T13:00:00Z", "2026-11-20T14:00:00Z", "2026-11-20T15:00:00Z"}, "2026-11-20T16:00:00Z", 0},
		{"all capped keeps the latest", "0 * * * *", "", "2026-11-20T10:00:00Z", "2026-11-20T15:30:00Z", MissedAll, 4,
			[]string{"2026-11-20T12:00:00Z", "2026-11-20T13:00:00Z", "2026-11-20T14:00:00Z", "2026-11-20T15:00:00Z"},
			"2026-11-20T16:00:00Z", 2},
		{"all capped by default", "@hourly", "", "2026-11-01T00:00:00Z", "2026-11-20T23:59:00Z", MissedAll, 0,
			nil, "2026-11-21T00:00:00Z", 480 - MaxCatchup}, // runs checked by count below
		{"a slot at now is missed", "0 * * * *", "", "2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z", MissedAll, 0,
			[]string{"2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z"}, "2026-11-20T12:00:00Z", 0},
		{"nothing missed", "0 * * * *", "", "2026-11-20T16:00:00Z", "2026-11-20T15:30:00Z", MissedAll, 0,
			nil, "2026-11-20T16:00:00Z", 0},
		{"all across spring-forward", "30 2 * * *", "America/New_York", "2027-03-13T02:30:00-05:00",
			"2027-03-16T12:00:00-04:00", MissedAll, 0,
			[]string{"2027-03-13T02:30:00-05:00", "2027-03-14T03:00:00-04:00", "2027-03-15T02:30:00-04:00",
				"2027-03-16T02:30:00-04:00"}, "2027-03-17T02:30:00-04:00", 0},

		// Interval, down from 10:00 to 11:00: 10:00 10:15 10:30 10:45 11:00.
		{"interval skip", "@every 15m", "", "2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z", MissedSkip, 0,
			nil, "2026-11-20T11:15:00Z", 5},
		{"interval once", "@every 15m", "", "2026-11-20T10:00:00Z", "2026-11-20T11:05:00Z", MissedOnce, 0,
			[]string{"2026-11-20T11:00:00Z"}, "2026-11-20T11:15:00Z", 4},
		{"interval all capped", "@every 15m", "", "2026-11-20T10:00:00Z", "2026-11-20T11:00:00Z", MissedAll, 3,
			[]string{"2026-11-20T10:30:00Z", "2026-11-20T10:45:00Z", "2026-11-20T11:00:00Z"}, "2026-11-20T11:15:00Z", 2},

		// One-shot in the past: the task is complete whatever runs.
		{"one-shot skip", "2026-11-20T10:00:00Z", "", "2026-11-20T10:00:00Z", "2026-11-21T00:00:00Z", MissedSkip, 0,
			nil, "", 1},
		{"one-shot once", "2026-11-20T10:00:00Z", "", "2026-11-20T10:00:00Z", "2026-11-21T00:00:00Z", MissedOnce, 0,
			[]string{"2026-11-20T10:00:00Z"}, "", 0},
		{"one-shot all", "2026-11-20T10:00:00Z", "", "2026-11-20T10:00:00Z", "2026-11-21T00:00:00Z", MissedAll, 0,
			[]string{"2026-11-20T10:00:00Z"}, "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.spec, tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			runs, newNext, ok, dropped := Catchup(s, at(t, tc.next), at(t, tc.now), tc.policy, tc.max)
			if tc.name == "all capped by default" {
				if len(runs) != MaxCatchup || !runs[len(runs)-1].Equal(at(t, "2026-11-20T23:00:00Z")) {
					t.Errorf("got %d runs ending %v, want %d ending 23:00", len(runs), runs[len(runs)-1], MaxCatchup)
				}
			} else if got := formatAll(runs); !equalStrings(got, tc.runs) {
				t.Errorf("runs = %v, want %v", got, tc.runs)
			}
			if tc.newNext == "" {
				if ok {
					t.Errorf("newNext = %s, want none", newNext)
				}
			} else if !ok || !newNext.Equal(at(t, tc.newNext)) {
				t.Errorf("newNext = %s %v, want %s", newNext, ok, tc.newNext)
			}
			if dropped != tc.dropped {
				t.Errorf("dropped = %d, want %d", dropped, tc.dropped)
			}
		})
	}
}

func TestCatchupZeroNext(t *testing.T) {
	s, _ := Parse("@daily", "")
	if runs, _, ok, dropped := Catchup(s, time.Time{}, time.Now(), MissedAll, 0); runs != nil || ok || dropped != 0 {
		t.Errorf("zero next: runs %v ok %v dropped %d", runs, ok, dropped)
	}
}

// TestCatchupIntervalMatchesWalk: the interval shortcut agrees with walking
// Next slot by slot.
func TestCatchupIntervalMatchesWalk(t *testing.T) {
	s, _ := Parse("@every 7m", "Europe/London")
	next := at(t, "2026-10-25T00:03:00Z")
	now := at(t, "2026-10-25T09:00:00Z")
	var walked []time.Time
	for t := next.In(s.Location()); !t.After(now); t, _ = s.Next(t) {
		walked = append(walked, t)
	}
	runs, newNext, _, dropped := Catchup(s, next, now, MissedAll, 1000)
	if !equalStrings(formatAll(runs), formatAll(walked)) || dropped != 0 || len(runs) < 70 {
		t.Fatalf("runs %v dropped %d, walked %v", formatAll(runs), dropped, formatAll(walked))
	}
	if want, _ := s.Next(walked[len(walked)-1]); !newNext.Equal(want) {
		t.Errorf("newNext %s, want %s", newNext, want)
	}
}

func TestParseMissed(t *testing.T) {
	cases := []struct {
		in   string
		want Missed
		err  bool
	}{
		{"", MissedSkip, false},
		{"skip", MissedSkip, false},
		{" Once ", MissedOnce, false},
		{"ALL", MissedAll, false},
		{"twice", "", true},
	}
	for _, tc := range cases {
		got, err := ParseMissed(tc.in)
		if got != tc.want || (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrBadMissed)) {
			t.Errorf("ParseMissed(%q) = %q, %v", tc.in, got, err)
		}
	}
}
