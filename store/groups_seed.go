package store

import (
	"context"
	"database/sql"
	"fmt"

	"switchboard/groups"
)

// EnsureGroups creates, in one transaction, the groups of folders that do
// not exist yet, and returns those it created, in the order given. It is
// EnsureGroup for the config's list at start: ten thousand groups one
// transaction each took seconds.
func (s *Store) EnsureGroups(ctx context.Context, folders []groups.Folder) ([]groups.Folder, error) {
	var created []groups.Folder
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		created = nil // a retried transaction starts over
		st, err := tx.PrepareContext(ctx, `INSERT INTO groups (folder, created_ms) VALUES (?, ?) ON CONFLICT (folder) DO NOTHING`)
		if err != nil {
			return err
		}
		defer st.Close()
		now := s.nowMS()
		for _, f := range folders {
			res, err := st.ExecContext(ctx, f, now)
			if err != nil {
				return fmt.Errorf("group %s: %w", f, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 1 {
				created = append(created, f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ensure groups: %w", err)
	}
	return created, nil
}
