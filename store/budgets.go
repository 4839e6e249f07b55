package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"switchboard/groups"
)

// Budget is a group's US dollar cap per day and per month (0: none). It
// covers the group's subtree: descendants' spend counts against it.
type Budget struct {
	Folder     groups.Folder
	DailyUSD   float64
	MonthlyUSD float64
	Updated    time.Time
}

// Budgets lists every budget, by folder.
func (s *Store) Budgets(ctx context.Context) ([]Budget, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT folder, daily_usd, monthly_usd, updated_ms FROM budgets ORDER BY folder`)
	out, err := collect(rows, err, func(sc scanner) (Budget, error) {
		var b Budget
		err := sc.Scan(&b.Folder, &b.DailyUSD, &b.MonthlyUSD, msTime(&b.Updated))
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("read budgets: %w", err)
	}
	return out, nil
}

// SetBudget sets folder's caps (replacing both).
func (s *Store) SetBudget(ctx context.Context, b Budget) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO budgets (folder, daily_usd, monthly_usd, updated_ms) VALUES (?, ?, ?, ?)
		ON CONFLICT (folder) DO UPDATE SET daily_usd = excluded.daily_usd, monthly_usd = excluded.monthly_usd, updated_ms = excluded.updated_ms`,
		b.Folder, b.DailyUSD, b.MonthlyUSD, s.nowMS())
	if err != nil {
		return fmt.Errorf("set budget of %s: %w", b.Folder, err)
	}
	return nil
}

// SeedBudget sets folder's caps unless it has a budget already (config
// budgets: the CLI's and MCP's later changes win over the file).
func (s *Store) SeedBudget(ctx context.Context, b Budget) (bool, error) {
	res, err := s.w.ExecContext(ctx, `INSERT INTO budgets (folder, daily_usd, monthly_usd, updated_ms) VALUES (?, ?, ?, ?)
		ON CONFLICT (folder) DO NOTHING`, b.Folder, b.DailyUSD, b.MonthlyUSD, s.nowMS())
	if err != nil {
		return false, fmt.Errorf("seed budget of %s: %w", b.Folder, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// DeleteBudget removes folder's budget; found is false when it had none.
func (s *Store) DeleteBudget(ctx context.Context, folder groups.Folder) (bool, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM budgets WHERE folder = ?`, folder)
	if err != nil {
		return false, fmt.Errorf("delete budget of %s: %w", folder, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// Spent sums the cost of the turns of folder's subtree started at or after
// since. It reads the running totals (spendQuarter, spendDay): the quarter
// hours from since to the next UTC midnight and the days from there, and
// the turns themselves only between since and the next quarter hour when
// since falls inside one (no time zone's day starts there).
func (s *Store) Spent(ctx context.Context, folder groups.Folder, since time.Time) (float64, error) {
	from := max(toMS(since), 0)
	quarter := ceilMS(from, spendQuarter)
	day := ceilMS(quarter, spendDay)
	var sum float64
	err := s.r.QueryRowContext(ctx, spentSQL,
		folder, quarter, day, folder, day,
		from, quarter, folder, folder+"/", folder+"0").Scan(usdMicros(&sum))
	if err != nil {
		return 0, fmt.Errorf("sum spend of %s: %w", folder, err)
	}
	return sum, nil
}

// spentSQL is Spent's query: the quarters, the days, and the turns of the
// first, partial quarter hour (none when since starts one), read by start
// time across folders (a quarter's turns, not all of the subtree's).
const spentSQL = `SELECT
		COALESCE((SELECT SUM(micros) FROM spend_totals WHERE folder = ? AND span = 0 AND start_ms >= ? AND start_ms < ?), 0)
		+ COALESCE((SELECT SUM(micros) FROM spend_totals WHERE folder = ? AND span = 1 AND start_ms >= ?), 0)
		+ COALESCE((SELECT SUM(cost_micros) FROM turns WHERE started_ms >= ? AND started_ms < ? AND (+folder = ? OR +folder > ? AND +folder < ?)), 0)`

// The spans of spend_totals, in milliseconds.
const (
	spendQuarter = 15 * 60 * 1000
	spendDay     = 24 * 60 * 60 * 1000
)

// ceilMS rounds ms up to a multiple of span.
func ceilMS(ms, span int64) int64 {
	if r := ms % span; r != 0 {
		return ms - r + span
	}
	return ms
}

// addSpend adds a turn's cost to the running totals of folder and each of
// its ancestors, in the quarter hour and the day of started (unix ms), in
// the turn's transaction.
func addSpend(ctx context.Context, tx *sql.Tx, folder groups.Folder, started, micros int64) error {
	if micros == 0 {
		return nil
	}
	for f := folder; f != ""; f = f.Parent() {
		if _, err := tx.ExecContext(ctx, `INSERT INTO spend_totals (folder, span, start_ms, micros) VALUES (?, 0, ?, ?), (?, 1, ?, ?)
			ON CONFLICT (folder, span, start_ms) DO UPDATE SET micros = micros + excluded.micros`,
			f, started-started%spendQuarter, micros, f, started-started%spendDay, micros); err != nil {
			return fmt.Errorf("add spend of %s: %w", f, err)
		}
	}
	return nil
}

// SpendBucket is the turns and spend of one interval.
type SpendBucket struct {
	Start   time.Time
	Turns   int
	CostUSD float64
}

// SpendPerHour returns n hourly buckets of all folders' turns, the last
// one holding the hour of end.
func (s *Store) SpendPerHour(ctx context.Context, end time.Time, n int) ([]SpendBucket, error) {
	last := end.Truncate(time.Hour)
	first := last.Add(-time.Duration(n-1) * time.Hour)
	out := make([]SpendBucket, n)
	for i := range out {
		out[i].Start = first.Add(time.Duration(i) * time.Hour)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT (started_ms - ?) / 3600000, COUNT(*), COALESCE(SUM(cost_micros), 0) FROM turns
		WHERE started_ms >= ? AND started_ms < ? GROUP BY 1`, toMS(first), toMS(first), toMS(last.Add(time.Hour)))
	if err != nil {
		return nil, fmt.Errorf("read spend per hour: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var b SpendBucket
		if err := rows.Scan(&i, &b.Turns, usdMicros(&b.CostUSD)); err != nil {
			return nil, fmt.Errorf("read spend per hour: %w", err)
		}
		if i >= 0 && int(i) < n {
			out[i].Turns, out[i].CostUSD = b.Turns, b.CostUSD
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read spend per hour: %w", err)
	}
	return out, nil
}

// RunSkipped is the status of a task run that did not start a turn: its
// error says why (a budget used up).
const RunSkipped = "skipped"

// SkipBatch drops a batch without a turn: its work rows go, and a task
// run it carries is recorded as skipped with reason. Its messages stay
// stored.
func (s *Store) SkipBatch(ctx context.Context, b Batch, reason string) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if err := execIDs(ctx, tx, `DELETE FROM work WHERE id IN`, b.itemIDs()); err != nil {
			return err
		}
		for _, it := range b.Items {
			if it.RunID == 0 {
				continue
			}
			if _, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = ?, error = ? WHERE id = ?`, RunSkipped, reason, it.RunID); err != nil {
				return fmt.Errorf("record skipped run %d: %w", it.RunID, err)
			}
		}
		return nil
	})
}

// ReleaseChats lets folder's chats that DeferChat held until one of
// untils run now (a budget raised before its window ended). Waits until
// other times (a failed batch's retry) stay.
func (s *Store) ReleaseChats(ctx context.Context, folder groups.Folder, untils ...time.Time) (int64, error) {
	var n int64
	for _, u := range untils {
		res, err := s.w.ExecContext(ctx, `UPDATE work SET not_before_ms = 0 WHERE folder = ? AND not_before_ms = ?`, folder, toMS(u))
		if err != nil {
			return n, fmt.Errorf("release chats of %s: %w", folder, err)
		}
		k, _ := res.RowsAffected()
		n += k
	}
	return n, nil
}

// SkipTaskRuns drops folder's queued task turns that have not started
// and records their runs as skipped with reason: a budget holds the
// group, and a run that cannot start when it falls due does not run
// later (not even behind the chat's held messages). It returns how many
// runs it skipped.
func (s *Store) SkipTaskRuns(ctx context.Context, folder groups.Folder, reason string) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = ?, error = ? WHERE id IN
			(SELECT run_id FROM work WHERE folder = ? AND trigger = ? AND started_ms = 0 AND run_id > 0)`,
			RunSkipped, reason, folder, TriggerTask); err != nil {
			return fmt.Errorf("skip task runs of %s: %w", folder, err)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM work WHERE folder = ? AND trigger = ? AND started_ms = 0`, folder, TriggerTask)
		if err != nil {
			return fmt.Errorf("skip task runs of %s: %w", folder, err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}
