package store

import (
	"context"
	"database/sql"
	"fmt"

	"switchboard/routing"
)

// Store methods the MCP tools need beyond the pipeline's.

// SwapRoutes deletes the routes with ids remove and adds add (returned with
// their new IDs), in one transaction: if any id is missing nothing changes
// and the error wraps ErrNotFound. Routes are not validated here.
func (s *Store) SwapRoutes(ctx context.Context, remove []int64, add []routing.Route) ([]routing.Route, error) {
	out := make([]routing.Route, len(add))
	copy(out, add)
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		for _, id := range remove {
			res, err := tx.ExecContext(ctx, `DELETE FROM routes WHERE id = ?`, id)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return fmt.Errorf("route %d: %w", id, ErrNotFound)
			}
		}
		return insertRoutes(ctx, tx, out, s.nowMS())
	})
	if err != nil {
		return nil, fmt.Errorf("swap routes: %w", err)
	}
	return out, nil
}

// SessionRow is an agent session a folder continues in a chat and topic.
type SessionRow struct {
	Folder    string
	ChatJID   string
	Topic     string
	SessionID string
	Updated   int64 // unix ms
}

// FolderSessions lists folder's stored agent sessions, most recently
// updated first.
func (s *Store) FolderSessions(ctx context.Context, folder string) ([]SessionRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT folder, chat_jid, topic, session_id, updated_ms FROM sessions
		WHERE folder = ? ORDER BY updated_ms DESC, chat_jid, topic`, folder)
	if err != nil {
		return nil, fmt.Errorf("read sessions of %s: %w", folder, err)
	}
	defer rows.Close()
	out := []SessionRow{}
	for rows.Next() {
		var r SessionRow
		if err := rows.Scan(&r.Folder, &r.ChatJID, &r.Topic, &r.SessionID, &r.Updated); err != nil {
			return nil, fmt.Errorf("read sessions of %s: %w", folder, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sessions of %s: %w", folder, err)
	}
	return out, nil
}
