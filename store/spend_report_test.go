package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/groups"
)

// TestSpendBySubtreeEqualsSpent: the spend report's read of the running
// totals gives every folder what Spent gives it and what its subtree's
// turns sum to, subtrees included ("acme" holds "acme/eng"),
// with a turn before the month and one between month and day start
// counted only where they belong, and "acme2" (a sibling whose name
// starts alike) kept apart.
func TestSpendBySubtreeEqualsSpent(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "switchboard.db"))
	// Inside a quarter hour: the windows start mid-quarter (the turns of
	// their first, partial quarter are read one by one).
	now := time.Date(2026, 3, 14, 15, 7, 31, 0, time.UTC)
	dayStart, monthStart := now.Add(-2*time.Hour), now.Add(-48*time.Hour)
	turns := []struct {
		folder groups.Folder
		at     time.Time
		cost   float64
	}{
		{"acme", now, 1.25}, {"acme/eng", now, 0.5}, {"acme/eng/oncall", now.Add(-3 * time.Hour), 0.8},
		{"acme2", now, 7}, {"acme", monthStart.Add(-time.Hour), 100}, {"main", now.Add(-time.Minute), 0.000001},
		{"acme/eng/oncall", dayStart.Add(time.Millisecond), 0.03}, {"acme/eng", dayStart.Add(-time.Millisecond), 0.004},
		{"main", monthStart, 0.2}, {"main", monthStart.Add(-time.Millisecond), 90},
	}
	for i, c := range turns {
		if err := recordCost(t, s, fmt.Sprint("t", i), c.folder, c.at, c.cost); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []struct {
		name       string
		day, month time.Time
	}{
		{"mid-quarter", dayStart, monthStart},
		{"on quarters", dayStart.Truncate(15 * time.Minute), monthStart.Truncate(24 * time.Hour)},
	} {
		got, err := s.SpendBySubtree(ctx, w.day, w.month)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []groups.Folder{"acme", "acme/eng", "acme/eng/oncall", "acme2", "main", "other"} {
			day, err1 := s.Spent(ctx, f, w.day)
			month, err2 := s.Spent(ctx, f, w.month)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if got[f].Day != day || got[f].Month != month {
				t.Errorf("%s: %s: SpendBySubtree = %+v, Spent = day %v month %v", w.name, f, got[f], day, month)
			}
			if d, m := sumTurns(t, s, f, w.day), sumTurns(t, s, f, w.month); got[f].Day != d || got[f].Month != m {
				t.Errorf("%s: %s: SpendBySubtree = %+v, the sum over its subtree's turns = day %v month %v", w.name, f, got[f], d, m)
			}
		}
		if w.name == "mid-quarter" && (got["acme"].Month != 2.584 || got["acme"].Day != 1.78) {
			t.Errorf("acme = %+v, want day 1.78 (its turn, acme/eng's and oncall's just after the day's start) and month 2.584 (oncall's too, not the one before the month)", got["acme"])
		}
	}
}

// sumTurns sums the cost of the turns of folder's subtree started at or
// after since, from the turns themselves.
func sumTurns(t *testing.T, s *Store, folder groups.Folder, since time.Time) float64 {
	t.Helper()
	var micros int64
	if err := s.r.QueryRow(`SELECT COALESCE(SUM(cost_micros), 0) FROM turns WHERE started_ms >= ? AND (folder = ? OR folder LIKE ? || '/%')`,
		since.UnixMilli(), folder, folder).Scan(&micros); err != nil {
		t.Fatal(err)
	}
	return fromMicros(micros)
}

// BenchmarkSpendReport is the spend report's read (status, budget list,
// the status page) over 100 groups under 10 parents, with a month of
// 2,000 and of 20,000 turns: its cost must not grow with the turns
// recorded (it reads the running totals).
func BenchmarkSpendReport(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			s := openAt(b, filepath.Join(b.TempDir(), "switchboard.db"))
			ctx := context.Background()
			now := time.Now()
			step := 30 * 24 * time.Hour / time.Duration(n)
			for i := range n {
				f := groups.Folder(fmt.Sprintf("p%d/g%d", i%10, i%100))
				turn := Turn{ID: fmt.Sprint("t", i), Folder: f, ChatJID: "web:lobby", Trigger: TriggerMessage, Attempt: 1,
					Started: now.Add(-time.Duration(i) * step), Status: TurnSucceeded, Usage: Usage{CostUSD: 0.001}}
				if err := s.FinishBatch(ctx, Batch{Folder: f, ChatJID: "web:lobby"}, turn, nil, time.Time{}); err != nil {
					b.Fatal(err)
				}
			}
			dayStart, monthStart := now.Add(-7*time.Hour-7*time.Minute), now.Add(-20*24*time.Hour)
			for b.Loop() {
				if _, err := s.SpendBySubtree(ctx, dayStart, monthStart); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The spend report's queries search indexes: the totals by span and
// start (not every total ever kept), the turns only by start.
func TestSpendBySubtreeUsesIndexes(t *testing.T) {
	s := newStore(t)
	for _, q := range []struct {
		sql  string
		args []any
		want []string
	}{
		{spendTotalsSQL, []any{0, 0}, []string{"spend_totals_window (span=? AND start_ms>? AND start_ms<?)", "spend_totals_window (span=? AND start_ms>?)"}},
		{spendPartialSQL, []any{0, 0}, []string{"turns_started (started_ms>? AND started_ms<?)"}},
	} {
		p := queryPlan(t, s, q.sql, q.args...)
		for _, w := range q.want {
			if !strings.Contains(p, w) || strings.Contains(p, "SCAN spend_totals") || strings.Contains(p, "SCAN turns") {
				t.Errorf("plan: %s; want it to search %s", p, w)
			}
		}
	}
}
