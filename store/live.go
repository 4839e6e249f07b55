package store

import (
	"context"
	"fmt"
	"time"

	"switchboard/adapters"
)

// LiveShown is where one message of a turn's live reply shows on its
// platform (adapters.LiveShown): kept while the turn runs, so that the
// next start can clean it up after a crash.
type LiveShown struct {
	TurnID  string
	Part    int // 0: the reply's first message; n: the one it continued in after n messages
	Chat    adapters.JID
	Topic   string
	ID      adapters.MessageID
	Mode    adapters.LiveMode
	Created time.Time
}

// SaveLiveShown records where a live reply message shows, replacing what
// was recorded for its turn and part.
func (s *Store) SaveLiveShown(ctx context.Context, l LiveShown) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO live_replies (turn_id, part, platform, chat_jid, topic, message_id, mode, created_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (turn_id, part) DO UPDATE SET message_id = excluded.message_id, mode = excluded.mode`,
		l.TurnID, l.Part, l.Chat.Platform(), l.Chat, l.Topic, l.ID, l.Mode, s.nowMS())
	if err != nil {
		return fmt.Errorf("record live reply of turn %s: %w", l.TurnID, err)
	}
	return nil
}

// DropLiveShown forgets the live reply messages of turn: they ended
// (finished, aborted or cleaned up).
func (s *Store) DropLiveShown(ctx context.Context, turn string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM live_replies WHERE turn_id = ?`, turn); err != nil {
		return fmt.Errorf("forget live reply of turn %s: %w", turn, err)
	}
	return nil
}

// LiveLeftovers lists the live reply messages recorded and not yet
// dropped, oldest first: after a crash, those still showing.
func (s *Store) LiveLeftovers(ctx context.Context) ([]LiveShown, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT turn_id, part, chat_jid, topic, message_id, mode, created_ms FROM live_replies
		ORDER BY created_ms, turn_id, part`)
	out, err := collect(rows, err, func(sc scanner) (LiveShown, error) {
		var l LiveShown
		err := sc.Scan(&l.TurnID, &l.Part, &l.Chat, &l.Topic, &l.ID, &l.Mode, msTime(&l.Created))
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("read live replies: %w", err)
	}
	return out, nil
}
