package scheduler

import (
	"testing"
	"time"
)

// BenchmarkNextCron: a weekday 09:00 job in a DST zone, away from any
// transition.
func BenchmarkNextCron(b *testing.B) {
	s, err := Parse("0 9 * * 1-5", "Europe/London")
	if err != nil {
		b.Fatal(err)
	}
	after := time.Date(2026, 6, 10, 12, 0, 0, 0, time.UTC)
	for b.Loop() {
		if _, ok := s.Next(after); !ok {
			b.Fatal("no slot")
		}
	}
}

// BenchmarkNextCronDST: quarter-hourly across New York's fall-back, from
// inside the repeated hour (every candidate there is passed over), and a
// daily 02:30 landing in the spring-forward gap.
func BenchmarkNextCronDST(b *testing.B) {
	repeat, err := Parse("*/15 * * * *", "America/New_York")
	if err != nil {
		b.Fatal(err)
	}
	gap, err := Parse("30 2 * * *", "America/New_York")
	if err != nil {
		b.Fatal(err)
	}
	inRepeat := time.Date(2026, 11, 1, 6, 1, 0, 0, time.UTC)    // 01:01 EST, the second 01:01
	afterRepeat := time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC) // 02:00 EST
	beforeGap := time.Date(2027, 3, 13, 12, 0, 0, 0, time.UTC)
	endOfGap := time.Date(2027, 3, 14, 7, 0, 0, 0, time.UTC) // 03:00 EDT
	for b.Loop() {
		if next, _ := repeat.Next(inRepeat); !next.Equal(afterRepeat) {
			b.Fatal("bad slot", next)
		}
		if next, _ := gap.Next(beforeGap); !next.Equal(endOfGap) {
			b.Fatal("bad slot", next)
		}
	}
}
