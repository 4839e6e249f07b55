package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/groups"
)

// spentByTurns is what Spent answered before the running totals: the sum
// over the subtree's turns, read from the turns themselves.
func spentByTurns(t *testing.T, s *Store, folder groups.Folder, since time.Time) float64 {
	t.Helper()
	var sum float64
	if err := s.r.QueryRow(`SELECT COALESCE(SUM(cost_micros), 0) FROM turns WHERE (folder = ? OR folder > ? AND folder < ?) AND started_ms >= ?`,
		folder, folder+"/", folder+"0", max(toMS(since), 0)).Scan(usdMicros(&sum)); err != nil {
		t.Fatal(err)
	}
	return sum
}

var spendFolders = []groups.Folder{"main", "main/a", "main/a/b", "main/c", "mainx", "other"}

// checkSpent compares Spent with spentByTurns for every folder of
// spendFolders and a window start in each quarter hour, whole or not, of
// the days around base, in zones whose days start on whole, half and
// quarter hours.
func checkSpent(t *testing.T, s *Store, base time.Time) {
	t.Helper()
	ctx := context.Background()
	var sinces []time.Time
	for _, zone := range []string{"UTC", "Asia/Kolkata", "Asia/Kathmandu", "America/St_Johns"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		b := base.In(loc)
		day := time.Date(b.Year(), b.Month(), b.Day(), 0, 0, 0, 0, loc)
		sinces = append(sinces, day, day.AddDate(0, 0, -1), time.Date(b.Year(), b.Month(), 1, 0, 0, 0, 0, loc))
	}
	for q := -3 * 96; q < 96; q += 7 {
		sinces = append(sinces, base.Add(time.Duration(q)*15*time.Minute), base.Add(time.Duration(q)*15*time.Minute+time.Minute+time.Millisecond))
	}
	sinces = append(sinces, time.Time{}, time.UnixMilli(-5))
	for _, f := range spendFolders {
		for _, since := range sinces {
			got, err := s.Spent(ctx, f, since)
			if err != nil {
				t.Fatal(err)
			}
			if want := spentByTurns(t, s, f, since); got != want {
				t.Fatalf("Spent(%s, %s) = %v; the turns sum to %v", f, since.Format(time.RFC3339Nano), got, want)
			}
		}
	}
}

// Spent reads the running totals that FinishBatch keeps with each turn; it
// answers what the turns sum to, for a folder's subtree (not a sibling
// that shares its prefix) and any window start, after a restart too.
func TestSpentReadsTheRunningTotals(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s := openAt(t, path)
	base := time.Date(2026, 3, 1, 10, 7, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 600 {
		f := spendFolders[r.IntN(len(spendFolders))]
		started := base.Add(-time.Duration(r.Int64N(int64(96 * time.Hour))))
		turn := Turn{ID: fmt.Sprint("t", i), Folder: f, ChatJID: "web:lobby", Trigger: TriggerMessage, Attempt: 1, Started: started,
			Status: TurnSucceeded, Usage: Usage{CostUSD: float64(r.IntN(100_000)) / 1e6}}
		if err := s.FinishBatch(ctx, Batch{Folder: f, ChatJID: "web:lobby"}, turn, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Spent(ctx, "main", time.Time{}); err != nil || got == 0 {
		t.Fatalf("Spent(main) = %v, %v; want the turns' cost", got, err)
	}
	checkSpent(t, s, base)
	s.Close()
	checkSpent(t, openAt(t, path), base)
}

// Migration 0019 totals the turns recorded before it.
func TestBudgetTotalsMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	old, err := open(ctx, path, migrationSet{list: embedded.list[:14]})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 1, 10, 7, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 300 {
		if _, err := old.w.ExecContext(ctx, `INSERT INTO turns (id, folder, chat_jid, topic, trigger, task_id, run_id, attempt, started_ms,
			duration_ms, status, error, exit_code, session_id, cost_micros) VALUES (?, ?, 'web:lobby', '', 'message', 0, 0, 1, ?, 0, 'succeeded', '', 0, '', ?)`,
			fmt.Sprint("t", i), spendFolders[r.IntN(len(spendFolders))], base.Add(-time.Duration(r.Int64N(int64(96*time.Hour)))).UnixMilli(), r.IntN(100_000)); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s := openAt(t, path)
	var rows int
	if err := s.r.QueryRow(`SELECT count(*) FROM spend_totals`).Scan(&rows); err != nil || rows == 0 {
		t.Fatalf("spend_totals has %d rows after the migration (%v)", rows, err)
	}
	checkSpent(t, s, base)
}

// Each part of Spent's query searches an index: no scan of the turns or
// the totals, and the turns only by the part of a quarter hour it reads.
func TestSpentUsesIndexes(t *testing.T) {
	s := newStore(t)
	p := queryPlan(t, s, spentSQL, "main", 0, 0, "main", 0, 0, 0, "main", "main/", "main0")
	if strings.Count(p, "SEARCH") != 3 || strings.Contains(p, "SCAN turns") || strings.Contains(p, "SCAN spend_totals") ||
		!strings.Contains(p, "turns_started (started_ms>? AND started_ms<?)") {
		t.Errorf("plan: %s; want three index searches, the turns by start", p)
	}
}
