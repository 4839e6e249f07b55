package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"switchboard/groups"
)

// Grant overrides: rules stored per group folder on top of the configured
// grants. The rules are validated by the callers (package grants).

// GrantOverrides returns the folder's stored rules in order (empty when none).
func (s *Store) GrantOverrides(ctx context.Context, folder groups.Folder) ([]string, error) {
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
func (s *Store) SetGrantOverrides(ctx context.Context, folder groups.Folder, rules []string) error {
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
func (s *Store) AllGrantOverrides(ctx context.Context) (map[groups.Folder][]string, error) {
	all := map[groups.Folder][]string{}
	rows, err := s.r.QueryContext(ctx, `SELECT folder, rule FROM grant_overrides ORDER BY folder, position`)
	err = each(rows, err, func(sc scanner) error {
		var (
			folder groups.Folder
			rule   string
		)
		err := sc.Scan(&folder, &rule)
		all[folder] = append(all[folder], rule)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read grant overrides: %w", err)
	}
	return all, nil
}
