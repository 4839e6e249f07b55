package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/groups"
)

func recordCost(t *testing.T, s *Store, id string, folder groups.Folder, started time.Time, cost float64) error {
	t.Helper()
	turn := Turn{ID: id, Folder: folder, ChatJID: "web:lobby", Trigger: TriggerMessage, Attempt: 1, Started: started,
		Status: TurnSucceeded, Usage: Usage{CostUSD: cost, SessionCost: cost}}
	return s.FinishBatch(context.Background(), Batch{Folder: folder, ChatJID: "web:lobby"}, turn, nil, time.Time{})
}

// TestSpendHasNoFloatNoise: three turns of $0.80 spend exactly 2.4
// (stored as micro-dollars), not 2.4000000000000004, in the budget sums,
// the hourly chart and the turns' records; a cost the store cannot keep
// is refused with a clear error, and nothing is recorded.
func TestSpendHasNoFloatNoise(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "switchboard.db"))
	now := time.Now()
	for i := range 3 {
		if err := recordCost(t, s, fmt.Sprint("t", i), "main/sub", now, 0.8); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Spent(ctx, "main", now.Add(-time.Hour)); err != nil || got != 2.4 {
		t.Errorf("Spent = %v, %v; want 2.4", got, err)
	}
	bs, err := s.SpendPerHour(ctx, now, 2)
	if err != nil || bs[1].CostUSD != 2.4 || bs[1].Turns != 3 {
		t.Errorf("SpendPerHour = %+v, %v; want 3 turns and 2.4 in the last hour", bs, err)
	}
	ts, err := s.Turns(ctx, "main/sub", 10)
	if err != nil || len(ts) != 3 || ts[0].Usage.CostUSD != 0.8 || ts[0].Usage.SessionCost != 0.8 {
		t.Errorf("Turns = %+v, %v", ts, err)
	}
	for _, bad := range []float64{-0.01, math.NaN(), math.Inf(1), 1e308} {
		if err := recordCost(t, s, fmt.Sprint("bad", bad), "main", now, bad); !errors.Is(err, ErrBadCost) {
			t.Errorf("record a cost of %v: err %v, want ErrBadCost", bad, err)
		}
	}
	if ts, _ := s.Turns(ctx, "main", 10); len(ts) != 0 {
		t.Errorf("refused turns recorded: %+v", ts)
	}
}

// TestCostMicrosMigration: costs recorded as REAL dollars before
// migration 0013 keep their value to the micro-dollar; ones the usage
// check refuses now (negative, 1e308: they made every sum +Inf) read 0.
func TestCostMicrosMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	before := migrationSet{list: embedded.list[:12]}
	old, err := open(ctx, path, before)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Now().UnixMilli() // t0 newest, one ms apart
	for i, c := range []struct {
		folder        string
		cost, session float64
	}{{"main", 0.8, 0.8}, {"main", 0.8, 1.6}, {"main", 0.8, 2.4}, {"main", 0.0166563, 0.0166563}, {"bad", 1e308, 1e308}, {"bad", 1e308, 0}, {"bad", -1, 0}} {
		if _, err := old.w.ExecContext(ctx, `INSERT INTO turns (id, folder, chat_jid, topic, trigger, task_id, run_id, attempt, started_ms,
			duration_ms, status, error, exit_code, session_id, cost_usd, session_cost_usd) VALUES (?, ?, 'web:lobby', '', 'message', 0, 0, 1, ?, 0, 'succeeded', '', 0, 's', ?, ?)`,
			fmt.Sprint("t", i), c.folder, base-int64(i), c.cost, c.session); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	s := openAt(t, path)
	if got, err := s.Spent(ctx, "main", time.Time{}); err != nil || got != 2.416656 {
		t.Errorf("main's spend after the migration = %v, %v; want 2.416656", got, err)
	}
	if got, err := s.Spent(ctx, "bad", time.Time{}); err != nil || got != 0 {
		t.Errorf("spend of the refused costs after the migration = %v, %v; want 0", got, err)
	}
	if c, err := s.SessionCost(ctx, "main", "s"); err != nil || c != 0.8 {
		t.Errorf("session cost = %v, %v; want the newest turn's 0.8", c, err)
	}
	ts, err := s.Turns(ctx, "main", 10)
	if err != nil || len(ts) != 4 || ts[3].Usage.CostUSD != 0.016656 || ts[1].Usage.SessionCost != 1.6 {
		t.Errorf("turns after the migration: %+v, %v", ts, err)
	}
}

// The session queries (SessionTokens at every Codex turn, SessionCost)
// search the session's rows by index, not every turn of the folder.
func TestSessionQueriesUseTheirIndex(t *testing.T) {
	s := newStore(t)
	for _, q := range []string{
		`SELECT COALESCE(SUM(input_tokens), 0) FROM turns WHERE folder = 'main' AND session_id = 's'`,
		`SELECT session_cost_micros FROM turns WHERE folder = 'main' AND session_id = 's' ORDER BY started_ms DESC LIMIT 1`,
	} {
		if p := queryPlan(t, s, q); !strings.Contains(p, "turns_session (folder=? AND session_id=?)") {
			t.Errorf("plan of %s: %s; want a search of turns_session", q, p)
		}
	}
}
