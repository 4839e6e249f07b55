package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/adapters"
)

// AdapterValue reads the value adapter persisted under key; ok is false when
// there is none or it expired.
func (s *Store) AdapterValue(ctx context.Context, adapter, key string) (value string, ok bool, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT value FROM adapter_values
		WHERE adapter = ? AND key = ? AND (expires_ms = 0 OR expires_ms > ?)`, adapter, key, s.nowMS()).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s value %q: %w", adapter, key, err)
	}
	return value, true, nil
}

// SetAdapterValue persists value under (adapter, key) for ttl (0: until
// overwritten). Expired values are swept now and then by the same call.
func (s *Store) SetAdapterValue(ctx context.Context, adapter, key, value string, ttl time.Duration) error {
	if adapter == "" || key == "" {
		return errors.New("set adapter value: empty adapter or key")
	}
	now := s.nowMS()
	var expires int64
	if ttl > 0 {
		expires = now + ttl.Milliseconds()
	}
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO adapter_values (adapter, key, value, expires_ms) VALUES (?, ?, ?, ?)
			ON CONFLICT (adapter, key) DO UPDATE SET value = excluded.value, expires_ms = excluded.expires_ms`,
			adapter, key, value, expires); err != nil {
			return err
		}
		// Sweep a few expired rows per write: bounded work, no timer.
		_, err := tx.ExecContext(ctx, `DELETE FROM adapter_values WHERE rowid IN
			(SELECT rowid FROM adapter_values WHERE expires_ms > 0 AND expires_ms <= ? LIMIT 16)`, now)
		return err
	})
	if err != nil {
		return fmt.Errorf("set %s value %q: %w", adapter, key, err)
	}
	return nil
}

// ChatHead is a chat with its newest stored message.
type ChatHead struct {
	JID      adapters.JID
	LastID   adapters.MessageID // platform id of the newest stored message; "" when none
	LastTime time.Time          // its time; zero when none
}

// ChatHeads lists the chats of platform with their newest stored message.
func (s *Store) ChatHeads(ctx context.Context, platform string) ([]ChatHead, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT c.jid, coalesce(m.msg_id, ''), coalesce(m.time_ms, 0)
		FROM chats c LEFT JOIN messages m ON m.seq = c.last_seq
		WHERE c.platform = ? ORDER BY c.jid`, platform)
	out, err := collect(rows, err, func(sc scanner) (ChatHead, error) {
		var h ChatHead
		err := sc.Scan(&h.JID, &h.LastID, msTime(&h.LastTime))
		return h, err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s chats: %w", platform, err)
	}
	return out, nil
}

// ValuesByKey returns, for every adapter (namespace) that has one, its
// value under key: the persisted adapter states, for example.
func (s *Store) ValuesByKey(ctx context.Context, key string) (map[string]string, error) {
	out := map[string]string{}
	rows, err := s.r.QueryContext(ctx, `SELECT adapter, value FROM adapter_values
		WHERE key = ? AND (expires_ms = 0 OR expires_ms > ?)`, key, s.nowMS())
	err = each(rows, err, func(sc scanner) error {
		var a, v string
		err := sc.Scan(&a, &v)
		out[a] = v
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s values: %w", key, err)
	}
	return out, nil
}
