package store

import (
	"context"
	"fmt"
	"time"

	"switchboard/groups"
)

// SubtreeSpend is what a folder's subtree (the folder and every folder
// below it) spent since two times.
type SubtreeSpend struct {
	Day, Month float64 // US dollars since dayStart and since monthStart
}

// SpendBySubtree returns, for every folder whose subtree has spent since
// monthStart (dayStart is later), what that subtree spent since each time;
// a folder absent from the map spent nothing. Like Spent, it reads the
// running totals (spend_totals: each folder's already counts its
// subtree): the quarter hours from each time to the next UTC midnight and
// the days from there, and the turns themselves only inside a first,
// partial quarter hour. Its cost grows with the folders that spent and the
// days of the month, not with the turns recorded. The figures equal
// Spent's.
func (s *Store) SpendBySubtree(ctx context.Context, dayStart, monthStart time.Time) (map[groups.Folder]SubtreeSpend, error) {
	type micros [2]int64 // since dayStart, since monthStart
	sums := map[groups.Folder]micros{}
	for i, since := range []time.Time{dayStart, monthStart} {
		from := max(toMS(since), 0)
		quarter := ceilMS(from, spendQuarter)
		day := ceilMS(quarter, spendDay)
		err := s.sumByFolder(ctx, spendTotalsSQL, []any{quarter, day}, func(f groups.Folder, m int64) {
			v := sums[f]
			v[i] += m
			sums[f] = v
		})
		if err != nil {
			return nil, err
		}
		if from == quarter {
			continue
		}
		// The first, partial quarter hour: its turns, each counted for its
		// folder and every ancestor.
		err = s.sumByFolder(ctx, spendPartialSQL, []any{from, quarter}, func(f groups.Folder, m int64) {
			for a := f; a != ""; a = a.Parent() {
				v := sums[a]
				v[i] += m
				sums[a] = v
			}
		})
		if err != nil {
			return nil, err
		}
	}
	out := make(map[groups.Folder]SubtreeSpend, len(sums))
	for f, m := range sums {
		if m[0] != 0 || m[1] != 0 {
			out[f] = SubtreeSpend{Day: fromMicros(m[0]), Month: fromMicros(m[1])}
		}
	}
	return out, nil
}

// SpendBySubtree's queries: every folder's totals of the whole quarter
// hours from ?1 to the UTC midnight ?2 and of the days from ?2 on (by
// spend_totals_window), and the turns of a partial quarter hour, by start.
const (
	spendTotalsSQL = `SELECT folder, SUM(micros) FROM (
			SELECT folder, micros FROM spend_totals WHERE span = 0 AND start_ms >= ?1 AND start_ms < ?2
			UNION ALL
			SELECT folder, micros FROM spend_totals WHERE span = 1 AND start_ms >= ?2)
		GROUP BY folder`
	spendPartialSQL = `SELECT folder, SUM(cost_micros) FROM turns WHERE started_ms >= ? AND started_ms < ? GROUP BY folder`
)

// sumByFolder runs q, whose rows are a folder and micro-dollars, and
// hands each row to add.
func (s *Store) sumByFolder(ctx context.Context, q string, args []any, add func(groups.Folder, int64)) error {
	rows, err := s.r.QueryContext(ctx, q, args...)
	err = each(rows, err, func(sc scanner) error {
		var f groups.Folder
		var m int64
		if err := sc.Scan(&f, &m); err != nil {
			return err
		}
		add(f, m)
		return nil
	})
	if err != nil {
		return fmt.Errorf("sum spend by folder: %w", err)
	}
	return nil
}
