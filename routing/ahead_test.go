package routing

import (
	"math"
	"testing"
)

// A pinned route's default seq sorts before every route, and before routes
// added later with the default seq 0.
func TestAheadSeq(t *testing.T) {
	for _, c := range []struct {
		name string
		seqs []int
		want int
	}{
		{"empty", nil, 0},
		{"one at 0", []int{0}, -1},
		{"all positive", []int{5, 1, 3}, -1},
		{"negative lowest", []int{2, -3, 0}, -4},
		{"lowest is -1", []int{-1}, -2},
		// A route stored with the lowest int: one below it wrapped to the
		// highest, so the pinned route went last instead of first.
		{"lowest is the minimum", []int{math.MinInt, 0}, math.MinInt},
	} {
		t.Run(c.name, func(t *testing.T) {
			var routes []Route
			for i, s := range c.seqs {
				routes = append(routes, Route{ID: int64(i + 1), Seq: s, Match: match("platform", "web"), Target: "main"})
			}
			if got := mustNew(t, routes...).AheadSeq(); got != c.want {
				t.Errorf("AheadSeq = %d, want %d", got, c.want)
			}
		})
	}
	var nilTable *Table
	if got := nilTable.AheadSeq(); got != 0 {
		t.Errorf("nil table: AheadSeq = %d, want 0", got)
	}
}
