package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// Agent sessions: the session a folder continues in each chat and topic.

// SessionRow is an agent session a folder continues in a chat and topic.
type SessionRow struct {
	Folder    groups.Folder
	ChatJID   adapters.JID
	Topic     string
	SessionID string
	Updated   time.Time
}

// FolderSessions lists folder's stored agent sessions, most recently
// updated first.
func (s *Store) FolderSessions(ctx context.Context, folder groups.Folder) ([]SessionRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT folder, chat_jid, topic, session_id, updated_ms FROM sessions
		WHERE folder = ? ORDER BY updated_ms DESC, chat_jid, topic`, folder)
	out, err := collect(rows, err, func(sc scanner) (SessionRow, error) {
		var r SessionRow
		err := sc.Scan(&r.Folder, &r.ChatJID, &r.Topic, &r.SessionID, msTime(&r.Updated))
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read sessions of %s: %w", folder, err)
	}
	return out, nil
}

// Session returns the agent session of a folder in a chat and topic ("" when fresh).
func (s *Store) Session(ctx context.Context, folder groups.Folder, chat adapters.JID, topic string) (string, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT session_id FROM sessions WHERE folder = ? AND chat_jid = ? AND topic = ?`, folder, chat, topic).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read session: %w", err)
	}
	return id, nil
}

// SetSession stores the session a folder continues in a chat and topic.
func (s *Store) SetSession(ctx context.Context, folder groups.Folder, chat adapters.JID, topic, id string) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error { return saveSession(ctx, tx, folder, chat, topic, id, s.nowMS()) })
}

func saveSession(ctx context.Context, tx *sql.Tx, folder groups.Folder, chat adapters.JID, topic, id string, now int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO sessions (folder, chat_jid, topic, session_id, updated_ms) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (folder, chat_jid, topic) DO UPDATE SET session_id = excluded.session_id, updated_ms = excluded.updated_ms`,
		folder, chat, topic, id, now)
	if err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// ResetSessions forgets every session of folder; its next turns start fresh.
func (s *Store) ResetSessions(ctx context.Context, folder groups.Folder) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE folder = ?`, folder)
		if err != nil {
			return fmt.Errorf("reset sessions: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}

// DropSession forgets the session of a folder in a chat and topic if it is
// still id (a session saved meanwhile stays); the next turn there starts
// fresh. It reports whether it forgot one.
func (s *Store) DropSession(ctx context.Context, folder groups.Folder, chat adapters.JID, topic, id string) (bool, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE folder = ? AND chat_jid = ? AND topic = ? AND session_id = ?`, folder, chat, topic, id)
		if err != nil {
			return fmt.Errorf("drop session: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n > 0, err
}
