package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"switchboard/groups"
)

// TurnsPage returns up to limit turn records (1 to MaxLimit), newest first:
// of folder (every folder when ""), older than the turn whose ID is before
// (from the newest when ""). more says whether older ones exist: the next
// page starts before the last turn returned. An unknown before wraps
// ErrNotFound. Turns recorded while paging never shift a page: the order
// is started, then the order recorded.
func (s *Store) TurnsPage(ctx context.Context, folder groups.Folder, before string, limit int) (ts []Turn, more bool, err error) {
	if limit < 1 || limit > MaxLimit {
		return nil, false, fmt.Errorf("read turns: limit %d: want 1 to %d", limit, MaxLimit)
	}
	// The cursor: a turn's (started_ms, rowid); past every turn when none.
	startedMS, rowid := int64(1<<62), int64(1<<62)
	if before != "" {
		err := s.r.QueryRowContext(ctx, `SELECT started_ms, rowid FROM turns WHERE id = ?`, before).Scan(&startedMS, &rowid)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, false, fmt.Errorf("read turns before %s: %w: no turn has that id", before, ErrNotFound)
		}
		if err != nil {
			return nil, false, fmt.Errorf("read turns before %s: %w", before, err)
		}
	}
	q := `SELECT ` + turnColumns + ` FROM turns WHERE (started_ms, rowid) < (?, ?)`
	args := []any{startedMS, rowid}
	if folder != "" {
		q += ` AND folder = ?`
		args = append(args, folder)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY started_ms DESC, rowid DESC LIMIT ?`, append(args, limit+1)...)
	ts, err = collect(rows, err, scanTurn)
	if err != nil {
		return nil, false, fmt.Errorf("read turns: %w", err)
	}
	if len(ts) > limit {
		return ts[:limit], true, nil
	}
	return ts, false, nil
}
