package scheduler

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func TestSundaySeven(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"0 9 * * 7", "0 9 * * 0"},
		{"0 9 * * 5-7", "0 9 * * 5-6,0"},
		{"0 9 * * 1-7/2", "0 9 * * 1-6/2,0"},
		{"0 9 * * 2-7/2", "0 9 * * 2-6/2"},
		{"0 9 * * 7-7", "0 9 * * 0"},
		{"0 9 * * 1,7", "0 9 * * 1,0"},
		{"7 7 7 7 *", "7 7 7 7 *"},
		{"@weekly", "@weekly"},
	}
	for _, tc := range cases {
		if got := sundaySeven(tc.spec); got != tc.want {
			t.Errorf("sundaySeven(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
	// And end to end: 7 is Sunday.
	got := slots(t, "0 9 * * 7", "", "2026-11-20T00:00:00Z", 1)
	if !equalStrings(got, []string{"2026-11-22T09:00:00Z"}) {
		t.Errorf("0 9 * * 7: got %v, want Sunday 2026-11-22", got)
	}
}

// TestNextMatchesRobfigWithoutDST holds the wall-clock walk to robfig's own
// Next in zones without daylight saving, where robfig is right.
func TestNextMatchesRobfigWithoutDST(t *testing.T) {
	var (
		minutes = []string{"*", "0", "*/7", "5,35", "10-20", "59"}
		hours   = []string{"*", "0", "9", "*/5", "1-3", "23"}
		doms    = []string{"*", "1", "15", "28-31", "*/10", "31", "29"}
		months  = []string{"*", "1", "2", "*/4", "6-8", "dec"}
		dows    = []string{"*", "0", "1-5", "sat,sun", "*/3"}
		zones   = []string{"UTC", "Asia/Kolkata", "Asia/Tokyo", "Asia/Kathmandu"}
	)
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	base := at(t, "2026-01-01T00:00:00Z")
	compared := 0
	for range 3000 {
		spec := fmt.Sprintf("%s %s %s %s %s", pick(minutes), pick(hours), pick(doms), pick(months), pick(dows))
		tz := pick(zones)
		s, err := Parse(spec, tz)
		if err != nil {
			continue // never fires
		}
		ref, err := cronParser.Parse(spec)
		if err != nil {
			t.Fatalf("robfig rejects %q: %v", spec, err)
		}
		ref.(*cron.SpecSchedule).Location = s.Location()
		after := base.Add(time.Duration(rng.Int64N(int64(4 * 365 * 24 * time.Hour))))
		want := ref.Next(after)
		if want.IsZero() {
			continue // beyond robfig's five-year search
		}
		got, ok := s.Next(after)
		if !ok || !got.Equal(want) {
			t.Errorf("%q in %s after %s: got %s %v, robfig %s", spec, tz, after, got, ok, want)
		}
		compared++
	}
	if compared < 1000 {
		t.Fatalf("only %d specs compared", compared)
	}
}

// TestDailyFiresOncePerLocalDay: across four years of transitions, a daily
// job fires exactly once on every local date, at its wall time or, on a
// spring-forward day that skips it, at the end of the gap.
func TestDailyFiresOncePerLocalDay(t *testing.T) {
	zones := []string{"America/New_York", "Europe/London", "Australia/Lord_Howe", "America/Havana",
		"America/Santiago", "Australia/Sydney", "Asia/Kolkata"}
	times := [][2]int{{0, 0}, {0, 30}, {1, 0}, {1, 30}, {2, 0}, {2, 30}, {2, 59}, {3, 0}, {23, 30}}
	for _, tz := range zones {
		for _, hm := range times {
			spec := fmt.Sprintf("%d %d * * *", hm[1], hm[0])
			t.Run(tz+"/"+spec, func(t *testing.T) {
				s, err := Parse(spec, tz)
				if err != nil {
					t.Fatal(err)
				}
				// Dates are counted in UTC: some zones have no local midnight.
				day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				end := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
				cur := time.Date(2025, 12, 31, 23, 59, 0, 0, s.Location())
				for ; day.Before(end); day = day.AddDate(0, 0, 1) {
					next, ok := s.Next(cur)
					if !ok {
						t.Fatalf("no slot after %s", cur)
					}
					y, m, d := next.Date()
					wy, wm, wd := day.Date()
					if y != wy || m != wm || d != wd {
						t.Fatalf("after %s: slot %s, want one on %s", cur, next, day.Format(time.DateOnly))
					}
					h, mi, _ := next.Clock()
					start, _ := next.ZoneBounds()
					onTime := h == hm[0] && mi == hm[1]
					endOfGap := next.Equal(start) && h*60+mi > hm[0]*60+hm[1]
					if !onTime && !endOfGap {
						t.Fatalf("slot %s is neither %02d:%02d nor the end of a gap", next, hm[0], hm[1])
					}
					cur = next
				}
			})
		}
	}
}

// TestHourlySlotsPerYear: an hourly job fires once per distinct wall hour.
// New York and London lose one (the skipped hour folds into the next) and
// fire the repeated hour once; Lord Howe's half-hour gap moves 02:00 to
// 02:30 rather than dropping it.
func TestHourlySlotsPerYear(t *testing.T) {
	cases := []struct {
		tz   string
		want int
	}{
		{"UTC", 8760},
		{"America/New_York", 8759},
		{"Europe/London", 8759},
		{"Australia/Lord_Howe", 8760},
	}
	for _, tc := range cases {
		t.Run(tc.tz, func(t *testing.T) {
			s, err := Parse("0 * * * *", tc.tz)
			if err != nil {
				t.Fatal(err)
			}
			cur := time.Date(2026, 1, 1, 0, 0, 0, 0, s.Location()).Add(-time.Second)
			end := time.Date(2027, 1, 1, 0, 0, 0, 0, s.Location())
			n := 0
			for {
				next, ok := s.Next(cur)
				if !ok || !next.Before(end) {
					break
				}
				if gap := next.Sub(cur); n > 0 && (gap < 30*time.Minute || gap > 2*time.Hour) {
					t.Fatalf("slots %s and %s are %s apart", cur, next, gap)
				}
				n++
				cur = next
			}
			if n != tc.want {
				t.Errorf("%d slots in 2026, want %d", n, tc.want)
			}
		})
	}
}

// FuzzParse: no spec panics, and a parsed schedule's Next is strictly after
// its argument.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"CRON_TZ=UTC", "TZ=", "CRON_TZ=", "0 9 * * 1-5", "@every 15m", "@daily",
		"2026-11-21T09:00:00Z", "0 0 30 2 *", "*/0 * * * *", "1-2-3 * * * *", "@every", "5-7/0 * * * 7"} {
		f.Add(s, "America/New_York")
	}
	from := time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, spec, tz string) {
		s, err := Parse(spec, tz)
		if err != nil {
			return
		}
		if next, ok := s.Next(from); ok && !next.After(from) {
			t.Fatalf("%q: Next(%s) = %s", spec, from, next)
		}
	})
}
