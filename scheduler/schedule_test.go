package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// at parses an RFC 3339 instant or fails the test.
func at(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatalf("bad test time %q: %v", s, err)
	}
	return v
}

// slots returns the first n slots of spec in tz after `after`, formatted in
// the schedule's zone (so the offset shows which side of a transition).
func slots(t *testing.T, spec, tz, after string, n int) []string {
	t.Helper()
	s, err := Parse(spec, tz)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", spec, tz, err)
	}
	var out []string
	for cur := at(t, after); len(out) < n; {
		next, ok := s.Next(cur)
		if !ok {
			break
		}
		if !next.After(cur) {
			t.Fatalf("Next(%s) = %s, not after it", cur, next)
		}
		out = append(out, next.Format(time.RFC3339))
		cur = next
	}
	return out
}

func equalStrings(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

func TestNextCron(t *testing.T) {
	cases := []struct {
		name, spec, tz, after string
		want                  []string
	}{
		{"utc weekdays skip the weekend", "0 9 * * 1-5", "", "2026-11-20T09:00:00Z",
			[]string{"2026-11-23T09:00:00Z", "2026-11-24T09:00:00Z"}},
		{"utc after is exclusive", "0 9 * * *", "UTC", "2026-11-20T08:59:59.999Z",
			[]string{"2026-11-20T09:00:00Z"}},
		{"kolkata half-hour offset", "0 9 * * *", "Asia/Kolkata", "2026-11-20T00:00:00Z",
			[]string{"2026-11-20T09:00:00+05:30", "2026-11-21T09:00:00+05:30"}},
		{"new york winter", "15 8 * * *", "America/New_York", "2026-12-01T00:00:00Z",
			[]string{"2026-12-01T08:15:00-05:00"}},
		{"london summer fridays", "0 18 * * 5", "Europe/London", "2026-06-01T00:00:00Z",
			[]string{"2026-06-05T18:00:00+01:00", "2026-06-12T18:00:00+01:00"}},
		{"day of month or day of week", "0 0 1 * 1", "", "2026-11-20T00:00:00Z",
			[]string{"2026-11-23T00:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-07T00:00:00Z"}},
		{"day of month and a starred weekday", "0 0 */10 * *", "", "2026-11-20T00:00:00Z",
			[]string{"2026-11-21T00:00:00Z", "2026-12-01T00:00:00Z"}},
		{"leap day", "0 12 29 2 *", "", "2026-01-01T00:00:00Z",
			[]string{"2028-02-29T12:00:00Z", "2032-02-29T12:00:00Z"}},
		{"names", "0 8 * jan,JUL mon", "", "2026-12-31T00:00:00Z",
			[]string{"2027-01-04T08:00:00Z", "2027-01-11T08:00:00Z"}},
		{"year end", "59 23 31 12 *", "", "2026-12-31T23:59:00Z",
			[]string{"2027-12-31T23:59:00Z"}},

		// Spring forward: the skipped wall time fires at the end of the gap.
		{"new york 02:30 in the gap", "30 2 * * *", "America/New_York", "2027-03-13T00:00:00-05:00",
			[]string{"2027-03-13T02:30:00-05:00", "2027-03-14T03:00:00-04:00", "2027-03-15T02:30:00-04:00"}},
		{"new york wall times in one gap fire once", "*/15 2 * * *", "America/New_York", "2027-03-14T01:50:00-05:00",
			[]string{"2027-03-14T03:00:00-04:00", "2027-03-15T02:00:00-04:00"}},
		{"new york hourly over the gap", "0 * * * *", "America/New_York", "2027-03-14T00:30:00-05:00",
			[]string{"2027-03-14T01:00:00-05:00", "2027-03-14T03:00:00-04:00", "2027-03-14T04:00:00-04:00"}},
		{"london 01:30 in the gap", "30 1 * * *", "Europe/London", "2027-03-27T12:00:00Z",
			[]string{"2027-03-28T02:00:00+01:00", "2027-03-29T01:30:00+01:00"}},
		{"lord howe half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-02T12:00:00Z",
			[]string{"2026-10-03T02:15:00+10:30", "2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"havana midnight gap", "@daily", "America/Havana", "2027-03-13T12:00:00-05:00",
			[]string{"2027-03-14T01:00:00-04:00", "2027-03-15T00:00:00-04:00"}},
		{"samoa skipped day", "0 9 * * *", "Pacific/Apia", "2011-12-29T12:00:00-10:00",
			[]string{"2011-12-31T00:00:00+14:00", "2011-12-31T09:00:00+14:00"}},

		// Fall back: a repeated wall time fires once, at its first occurrence.
		{"new york 01:30 repeated", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"new york after the first 01:30", "30 1 * * *", "America/New_York", "2026-11-01T01:30:00-04:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"new york inside the repeated hour", "30 1 * * *", "America/New_York", "2026-11-01T01:00:00-05:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"new york hourly over the repeat", "0 * * * *", "America/New_York", "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"}},
		{"new york quarter hours over the repeat", "*/15 * * * *", "America/New_York", "2026-11-01T01:40:00-04:00",
			[]string{"2026-11-01T01:45:00-04:00", "2026-11-01T02:00:00-05:00"}},
		{"london 01:30 repeated", "30 1 * * *", "Europe/London", "2026-10-24T12:00:00+01:00",
			[]string{"2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00Z"}},
		{"lord howe half-hour repeat", "45 1 * * *", "Australia/Lord_Howe", "2026-04-03T12:00:00Z",
			[]string{"2026-04-04T01:45:00+11:00", "2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		{"havana midnight repeated", "@midnight", "America/Havana", "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T00:00:00-04:00", "2026-11-02T00:00:00-05:00"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := slots(t, tc.spec, tc.tz, tc.after, len(tc.want))
			if !equalStrings(got, tc.want) {
				t.Errorf("%q in %q after %s:\n got %v\nwant %v", tc.spec, tc.tz, tc.after, got, tc.want)
			}
		})
	}
}

func TestDescriptors(t *testing.T) {
	const after = "2026-11-20T10:30:00+05:30" // a Friday, in Asia/Kolkata
	cases := []struct{ spec, want string }{
		{"@yearly", "2027-01-01T00:00:00+05:30"},
		{"@annually", "2027-01-01T00:00:00+05:30"},
		{"@monthly", "2026-12-01T00:00:00+05:30"},
		{"@weekly", "2026-11-22T00:00:00+05:30"},
		{"@daily", "2026-11-21T00:00:00+05:30"},
		{"@midnight", "2026-11-21T00:00:00+05:30"},
		{"@hourly", "2026-11-20T11:00:00+05:30"},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := Parse(tc.spec, "Asia/Kolkata")
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind() != KindCron {
				t.Errorf("Kind = %q, want cron", s.Kind())
			}
			if got := slots(t, tc.spec, "Asia/Kolkata", after, 1); !equalStrings(got, []string{tc.want}) {
				t.Errorf("got %v, want %s", got, tc.want)
			}
		})
	}
}

func TestNextInterval(t *testing.T) {
	cases := []struct {
		name, spec, tz, after string
		want                  []string
	}{
		{"at sign", "@every 15m", "", "2026-11-20T09:00:00Z",
			[]string{"2026-11-20T09:15:00Z", "2026-11-20T09:30:00Z"}},
		{"bare every, mixed units", "every 1h30m", "", "2026-11-20T09:00:00Z",
			[]string{"2026-11-20T10:30:00Z", "2026-11-20T12:00:00Z"}},
		{"sub-second start is cut", "@every 10s", "", "2026-11-20T09:00:00.7Z",
			[]string{"2026-11-20T09:00:10Z", "2026-11-20T09:00:20Z"}},
		{"a duration across fall-back, not wall time", "@every 1h", "America/New_York", "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-01T01:30:00-05:00", "2026-11-01T02:30:00-05:00"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := slots(t, tc.spec, tc.tz, tc.after, len(tc.want)); !equalStrings(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNextOnce(t *testing.T) {
	cases := []struct {
		name, spec, tz, after string
		want                  []string
	}{
		{"future utc", "2026-11-21T09:00:00Z", "", "2026-11-20T00:00:00Z", []string{"2026-11-21T09:00:00Z"}},
		{"future with offset, shown in the zone", "2026-11-21T09:00:00+01:00", "Europe/London", "2026-11-20T00:00:00Z",
			[]string{"2026-11-21T08:00:00Z"}},
		{"exactly now is past", "2026-11-21T09:00:00Z", "", "2026-11-21T09:00:00Z", nil},
		{"past", "2026-11-21T09:00:00Z", "", "2027-01-01T00:00:00Z", nil},
		{"wall time in the zone", "2026-11-21T09:00", "Asia/Kolkata", "2026-11-20T00:00:00Z",
			[]string{"2026-11-21T09:00:00+05:30"}},
		{"wall time in a gap", "2027-03-14T02:30", "America/New_York", "2027-01-01T00:00:00Z",
			[]string{"2027-03-14T03:00:00-04:00"}},
		{"fractional seconds are cut", "2026-11-21T09:00:00.25Z", "", "2026-11-20T00:00:00Z",
			[]string{"2026-11-21T09:00:00Z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := slots(t, tc.spec, tc.tz, tc.after, 3); !equalStrings(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseKinds(t *testing.T) {
	cases := []struct {
		spec string
		want Kind
	}{
		{"0 9 * * 1-5", KindCron},
		{"  @daily  ", KindCron},
		{"@every 15m", KindInterval},
		{"Every 2h", KindInterval},
		{"2026-11-21T09:00:00Z", KindOnce},
	}
	for _, tc := range cases {
		t.Run(tc.spec, func(t *testing.T) {
			s, err := Parse(tc.spec, "Europe/London")
			if err != nil {
				t.Fatal(err)
			}
			if s.Kind() != tc.want || s.Spec() != strings.TrimSpace(tc.spec) || s.Location().String() != "Europe/London" {
				t.Errorf("got kind %q spec %q loc %s", s.Kind(), s.Spec(), s.Location())
			}
		})
	}
	var zero Schedule
	if _, ok := zero.Next(time.Now()); ok || zero.Location() != time.UTC {
		t.Errorf("zero Schedule: fires or has a zone")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, spec, tz string
		want           error
		msg            string // a substring of the error
	}{
		{"empty", "  ", "", ErrBadSchedule, "empty"},
		{"never fires", "0 0 30 2 *", "", ErrBadSchedule, "never fires"},
		{"never fires either", "0 0 31 4,6,9,11 *", "", ErrBadSchedule, "never fires"},
		{"lone cron_tz (robfig panics)", "CRON_TZ=UTC", "", ErrBadSchedule, "timezone field"},
		{"cron_tz prefix", "CRON_TZ=Europe/London 0 9 * * *", "", ErrBadSchedule, "timezone field"},
		{"tz prefix", "TZ=UTC 0 9 * * *", "", ErrBadSchedule, "timezone field"},
		{"four fields", "0 9 * *", "", ErrBadSchedule, "expected exactly 5 fields"},
		{"six fields", "0 0 9 * * *", "", ErrBadSchedule, "expected exactly 5 fields"},
		{"minute out of range", "61 * * * *", "", ErrBadSchedule, "above maximum"},
		{"word", "sometimes", "", ErrBadSchedule, "5 fields"},
		{"bad field value", "x 9 * * *", "", ErrBadSchedule, "bad field value"},
		{"unknown descriptor", "@reboot", "", ErrBadSchedule, "unrecognized descriptor"},
		{"interval too short", "@every 5s", "", ErrBadSchedule, "shorter than the minimum"},
		{"interval not whole seconds", "@every 10500ms", "", ErrBadSchedule, "whole number of seconds"},
		{"interval negative", "every -1h", "", ErrBadSchedule, "shorter than the minimum"},
		{"interval without duration", "every", "", ErrBadSchedule, "needs a duration"},
		{"interval in days", "@every 2d", "", ErrBadSchedule, "48h"},
		{"bad instant", "2026-13-01T00:00:00Z", "", ErrBadSchedule, "RFC 3339"},
		{"unknown zone", "@daily", "Mars/Olympus_Mons", ErrBadTimezone, "Mars/Olympus_Mons"},
		{"host zone", "@daily", "Local", ErrBadTimezone, "Local"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.spec, tc.tz)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Parse(%q, %q) = %v, want %v", tc.spec, tc.tz, err, tc.want)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.msg) {
				t.Errorf("error %q lacks %q", msg, tc.msg)
			}
			if tc.want == ErrBadSchedule && (!strings.Contains(msg, `"`+strings.TrimSpace(tc.spec)+`"`) || !strings.Contains(msg, "@every 15m")) {
				t.Errorf("error %q does not quote the spec and the accepted forms", msg)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	from := at(t, "2026-11-20T00:00:00Z")
	got, err := Preview("0 9 * * 1-5", "Europe/London", from, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"2026-11-20T09:00:00Z", "2026-11-23T09:00:00Z", "2026-11-24T09:00:00Z"}
	var gotS []string
	for _, g := range got {
		gotS = append(gotS, g.Format(time.RFC3339))
	}
	if !equalStrings(gotS, want) {
		t.Errorf("got %v, want %v", gotS, want)
	}
	if got, _ := Preview("@hourly", "", from, 0); len(got) != DefaultPreview {
		t.Errorf("count 0: %d slots, want %d", len(got), DefaultPreview)
	}
	if got, _ := Preview("@hourly", "", from, 10000); len(got) != MaxPreview {
		t.Errorf("count 10000: %d slots, want %d", len(got), MaxPreview)
	}
	if got, _ := Preview("2026-11-21T09:00:00Z", "", from, 5); len(got) != 1 {
		t.Errorf("one-shot: %d slots, want 1", len(got))
	}
	if _, err := Preview("0 0 30 2 *", "", from, 5); !errors.Is(err, ErrBadSchedule) {
		t.Errorf("bad spec: err = %v", err)
	}
}

// TestZonePrefixErrorParts: a spec that embeds its zone reports the zone and
// the rest of the spec, so each caller can say where the zone goes.
func TestZonePrefixErrorParts(t *testing.T) {
	for spec, want := range map[string]ZonePrefixError{
		"CRON_TZ=Europe/Berlin 30 2 * * *": {Spec: "CRON_TZ=Europe/Berlin 30 2 * * *", Zone: "Europe/Berlin", Rest: "30 2 * * *"},
		"TZ=UTC @daily":                    {Spec: "TZ=UTC @daily", Zone: "UTC", Rest: "@daily"},
		"CRON_TZ=UTC":                      {Spec: "CRON_TZ=UTC", Zone: "UTC"},
	} {
		_, err := Parse(spec, "")
		var zp *ZonePrefixError
		if !errors.As(err, &zp) || *zp != want || !errors.Is(err, ErrBadSchedule) {
			t.Errorf("Parse(%q) = %v, want a ZonePrefixError %+v wrapping ErrBadSchedule", spec, err, want)
		}
	}
}
