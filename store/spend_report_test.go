package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"switchboard/groups"
)

// TestSpendBySubtreeEqualsSpent: the spend report's one read gives every
// folder what Spent gives it, subtrees included ("acme" holds "acme/eng"),
// with a turn before the month and one between month and day start
// counted only where they belong, and "acme2" (a sibling whose name
// starts alike) kept apart.
func TestSpendBySubtreeEqualsSpent(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "switchboard.db"))
	now := time.Now()
	dayStart, monthStart := now.Add(-2*time.Hour), now.Add(-48*time.Hour)
	turns := []struct {
		folder groups.Folder
		at     time.Time
		cost   float64
	}{
		{"acme", now, 1.25}, {"acme/eng", now, 0.5}, {"acme/eng/oncall", now.Add(-3 * time.Hour), 0.8},
		{"acme2", now, 7}, {"acme", monthStart.Add(-time.Hour), 100}, {"main", now.Add(-time.Minute), 0.000001},
	}
	for i, c := range turns {
		if err := recordCost(t, s, fmt.Sprint("t", i), c.folder, c.at, c.cost); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SpendBySubtree(ctx, dayStart, monthStart)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []groups.Folder{"acme", "acme/eng", "acme/eng/oncall", "acme2", "main", "other"} {
		day, err1 := s.Spent(ctx, f, dayStart)
		month, err2 := s.Spent(ctx, f, monthStart)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if got[f].Day != day || got[f].Month != month {
			t.Errorf("%s: SpendBySubtree = %+v, Spent = day %v month %v", f, got[f], day, month)
		}
	}
	if got["acme"].Month != 2.55 || got["acme"].Day != 1.75 {
		t.Errorf("acme = %+v, want day 1.75 (its turn and acme/eng's) and month 2.55 (oncall's too, not the one before the month)", got["acme"])
	}
}
