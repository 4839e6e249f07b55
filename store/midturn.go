package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"switchboard/groups"
)

// GroupMidTurn is folder's mid_turn setting ("" when it has none, or the
// group is gone: the configured default applies).
func (s *Store) GroupMidTurn(ctx context.Context, folder groups.Folder) (string, error) {
	var mode string
	err := s.r.QueryRowContext(ctx, `SELECT mid_turn FROM groups WHERE folder = ?`, folder).Scan(&mode)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read mid_turn of %s: %w", folder, err)
	}
	return mode, nil
}

// GroupsWithMidTurn lists the groups whose own mid_turn is mode, by folder.
func (s *Store) GroupsWithMidTurn(ctx context.Context, mode string) ([]groups.Folder, error) {
	out, err := queryFolders(ctx, s.r, `SELECT folder FROM groups WHERE mid_turn = ? ORDER BY folder`, mode)
	if err != nil {
		return nil, fmt.Errorf("read groups with mid_turn %s: %w", mode, err)
	}
	return out, nil
}

// SetGroupMidTurn sets folder's mid_turn ("" to take the default), or
// returns an error wrapping ErrNotFound. The caller checks the mode.
func (s *Store) SetGroupMidTurn(ctx context.Context, folder groups.Folder, mode string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE groups SET mid_turn = ? WHERE folder = ?`, mode, folder)
	if err != nil {
		return fmt.Errorf("set mid_turn of %s: %w", folder, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("set mid_turn of %s: %w", folder, ErrNotFound)
	}
	return nil
}

// SteerMessage stores m with the work item w already marked started under
// the running turn (as MarkStarted), in one transaction: a message
// written into a running agent belongs to that turn, which consumes it
// (FinishBatch of its batch with the item added), and a crash before the
// turn was recorded leaves it with the turn's other rows (RecoverStarted),
// so it is neither lost nor run twice. The row is marked steered
// (WorkItem.Steered): a gateway that awaits the turn after a restart keeps
// it in the turn only if the turn's outcome lists it as taken. inserted
// is false for a duplicate (nothing is stored; m.Seq is the original's);
// workID is w's row.
func (s *Store) SteerMessage(ctx context.Context, m *Message, w WorkItem, turn string) (inserted bool, workID int64, err error) {
	if err := validMessage(m); err != nil {
		return false, 0, err
	}
	if err := checkWork(w); err != nil {
		return false, 0, err
	}
	var seq, timeMS int64
	err = writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		timeMS = toMS(m.Time)
		if timeMS == 0 {
			timeMS = now
		}
		var err error
		seq, inserted, err = insertOne(ctx, tx.StmtContext(ctx, s.insertMsg), tx.StmtContext(ctx, s.msgSeqByID), tx.StmtContext(ctx, s.touchChat), m, timeMS, now)
		if err != nil || !inserted {
			return err
		}
		w.Seq = seq
		if err := execWork(ctx, tx.StmtContext(ctx, s.insertWorkStmt), w, now); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT last_insert_rowid()`).Scan(&workID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE work SET started_ms = ?, turn_id = ?, steered = 1 WHERE id = ?`, now, turn, workID)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("store steering message %s in %s: %w", m.ID, m.ChatJID, err)
	}
	m.Seq, m.Time = seq, fromMS(timeMS)
	return inserted, workID, nil
}
