package store

import (
	"context"
	"fmt"
)

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
