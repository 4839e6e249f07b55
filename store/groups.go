package store

import (
	"context"
	"database/sql"
	"fmt"

	"switchboard/groups"
)

// Groups: the folders agents run in. Folder names are validated by the
// callers (package groups); the store keeps whatever it is given.

// AddGroup stores a new group, or returns an error wrapping ErrExists.
func (s *Store) AddGroup(ctx context.Context, folder groups.Folder) error {
	created, err := s.EnsureGroup(ctx, folder)
	if err != nil {
		return fmt.Errorf("add group %s: %w", folder, err)
	}
	if !created {
		return fmt.Errorf("add group %s: %w", folder, ErrExists)
	}
	return nil
}

// EnsureGroup stores the group if it is missing; created says whether it was.
func (s *Store) EnsureGroup(ctx context.Context, folder groups.Folder) (created bool, err error) {
	res, err := s.w.ExecContext(ctx,
		`INSERT INTO groups (folder, created_ms) VALUES (?, ?) ON CONFLICT (folder) DO NOTHING`,
		folder, s.nowMS())
	if err != nil {
		return false, fmt.Errorf("ensure group %s: %w", folder, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("ensure group %s: %w", folder, err)
	}
	return n == 1, nil
}

// RemoveGroup deletes the group, its grant overrides and its MCP tokens in one transaction,
// or returns an error wrapping ErrNotFound. Routes that target it are left
// in place (the caller warns about them). Work queued for the group that
// no turn has taken yet is dropped with it, so a removed group's agent
// never runs (its messages stay stored; a queued task run is recorded
// skipped); dropped is how many work items that was. A turn already
// running finishes.
func (s *Store) RemoveGroup(ctx context.Context, folder groups.Folder) (dropped int64, err error) {
	err = writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM groups WHERE folder = ?`, folder)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		if n == 0 {
			return ErrNotFound
		}
		if _, err = tx.ExecContext(ctx, `DELETE FROM grant_overrides WHERE folder = ?`, folder); err != nil {
			return err
		}
		// Its MCP tokens go with it: a group made later under the same
		// name is not the one they were handed out for.
		if _, err = tx.ExecContext(ctx, `DELETE FROM mcp_tokens WHERE folder = ?`, folder); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = ?, error = ? WHERE id IN
			(SELECT run_id FROM work WHERE folder = ? AND started_ms = 0 AND run_id > 0)`,
			RunSkipped, "the group was removed before the run started", folder); err != nil {
			return err
		}
		res, err = tx.ExecContext(ctx, `DELETE FROM work WHERE folder = ? AND started_ms = 0`, folder)
		if err != nil {
			return err
		}
		dropped, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("remove group %s: %w", folder, err)
	}
	return dropped, nil
}

// Groups lists every group folder, sorted.
func (s *Store) Groups(ctx context.Context) ([]groups.Folder, error) {
	fs, err := queryFolders(ctx, s.r, `SELECT folder FROM groups ORDER BY folder`)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return fs, nil
}

// GroupExists reports whether the group is stored.
func (s *Store) GroupExists(ctx context.Context, folder groups.Folder) (bool, error) {
	var ok bool
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM groups WHERE folder = ?)`, folder).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check group %s: %w", folder, err)
	}
	return ok, nil
}
