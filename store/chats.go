package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchboard/adapters"
)

// Chat is a chat the gateway has seen.
type Chat struct {
	JID       adapters.JID
	Platform  string
	Name      string
	FirstSeen time.Time
	LastSeq   int64 // seq of the newest stored message, 0 when none
}

// UpsertChat creates the chat or updates it. A non-empty Name or Platform
// replaces the stored one; an empty one keeps it. FirstSeen (zero: now) only
// moves earlier and LastSeq only moves forward. An empty Platform is taken
// from the JID.
func (s *Store) UpsertChat(ctx context.Context, c Chat) error {
	if c.JID == "" {
		return errors.New("upsert chat: empty jid")
	}
	if c.Platform == "" {
		c.Platform = platformOf(c.JID)
	}
	firstSeen := toMS(c.FirstSeen)
	if firstSeen == 0 {
		firstSeen = s.nowMS()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO chats (jid, platform, name, first_seen_ms, last_seq)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (jid) DO UPDATE SET
			platform = CASE WHEN excluded.platform <> '' THEN excluded.platform ELSE chats.platform END,
			name = CASE WHEN excluded.name <> '' THEN excluded.name ELSE chats.name END,
			first_seen_ms = min(chats.first_seen_ms, excluded.first_seen_ms),
			last_seq = max(chats.last_seq, excluded.last_seq)`,
		c.JID, c.Platform, c.Name, firstSeen, c.LastSeq)
	if err != nil {
		return fmt.Errorf("upsert chat %s: %w", c.JID, err)
	}
	return nil
}

// Chats lists every known chat, ordered by JID.
func (s *Store) Chats(ctx context.Context) ([]Chat, error) {
	rows, err := s.r.QueryContext(ctx,
		`SELECT jid, platform, name, first_seen_ms, last_seq FROM chats ORDER BY jid`)
	cs, err := collect(rows, err, func(sc scanner) (Chat, error) {
		var c Chat
		err := sc.Scan(&c.JID, &c.Platform, &c.Name, msTime(&c.FirstSeen), &c.LastSeq)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("list chats: %w", err)
	}
	return cs, nil
}
