package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Groups, grant overrides and the revision counter. Folder names and rules
// are validated by the callers (packages groups and grants); the store keeps
// whatever it is given.

// AddGroup stores a new group, or returns an error wrapping ErrExists.
func (s *Store) AddGroup(ctx context.Context, folder string) error {
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
func (s *Store) EnsureGroup(ctx context.Context, folder string) (created bool, err error) {
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

// RemoveGroup deletes the group and its grant overrides in one transaction,
// or returns an error wrapping ErrNotFound. Routes that target it are left
// in place (the caller warns about them).
func (s *Store) RemoveGroup(ctx context.Context, folder string) error {
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
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
		_, err = tx.ExecContext(ctx, `DELETE FROM grant_overrides WHERE folder = ?`, folder)
		return err
	})
	if err != nil {
		return fmt.Errorf("remove group %s: %w", folder, err)
	}
	return nil
}

// Groups lists every group folder, sorted.
func (s *Store) Groups(ctx context.Context) ([]string, error) {
	fs, err := queryStrings(ctx, s.r, `SELECT folder FROM groups ORDER BY folder`)
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return fs, nil
}

// GroupExists reports whether the group is stored.
func (s *Store) GroupExists(ctx context.Context, folder string) (bool, error) {
	var ok bool
	err := s.r.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM groups WHERE folder = ?)`, folder).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check group %s: %w", folder, err)
	}
	return ok, nil
}

// GrantOverrides returns the folder's stored rules in order (empty when none).
func (s *Store) GrantOverrides(ctx context.Context, folder string) ([]string, error) {
	rules, err := queryStrings(ctx, s.r,
		`SELECT rule FROM grant_overrides WHERE folder = ? ORDER BY position`, folder)
	if err != nil {
		return nil, fmt.Errorf("read grant overrides of %s: %w", folder, err)
	}
	return rules, nil
}

// SetGrantOverrides replaces the folder's rules with rules, in one
// transaction. Setting the list it already has changes nothing (and does not
// bump the revision).
func (s *Store) SetGrantOverrides(ctx context.Context, folder string, rules []string) error {
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		old, err := queryStrings(ctx, tx,
			`SELECT rule FROM grant_overrides WHERE folder = ? ORDER BY position`, folder)
		if err != nil {
			return err
		}
		if slices.Equal(old, rules) {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM grant_overrides WHERE folder = ?`, folder); err != nil {
			return err
		}
		for i, r := range rules {
			_, err := tx.ExecContext(ctx,
				`INSERT INTO grant_overrides (folder, position, rule) VALUES (?, ?, ?)`, folder, i, r)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set grant overrides of %s: %w", folder, err)
	}
	return nil
}

// AllGrantOverrides returns every folder's rules, in order.
func (s *Store) AllGrantOverrides(ctx context.Context) (map[string][]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT folder, rule FROM grant_overrides ORDER BY folder, position`)
	if err != nil {
		return nil, fmt.Errorf("read grant overrides: %w", err)
	}
	defer rows.Close()
	all := map[string][]string{}
	for rows.Next() {
		var folder, rule string
		if err := rows.Scan(&folder, &rule); err != nil {
			return nil, fmt.Errorf("read grant overrides: %w", err)
		}
		all[folder] = append(all[folder], rule)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read grant overrides: %w", err)
	}
	return all, nil
}

// Revision is a counter that changes whenever groups, routes or grant
// overrides change, by this process or another one (the CLI). A running
// gateway polls it and reloads when it moves. Messages do not change it.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	var n int64
	if err := s.r.QueryRowContext(ctx, `SELECT n FROM revision WHERE id = 1`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read revision: %w", err)
	}
	return n, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// queryStrings returns the first column of every row (an empty, non-nil
// slice when there are none).
func queryStrings(ctx context.Context, q querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
