package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/adapters"
)

// LiveState is what a live reply record stands for.
type LiveState string

const (
	// LiveShowing: a message showing the reply so far, which becomes part
	// of the final or is cleaned up.
	LiveShowing LiveState = "live"
	// LivePart: part of the reply, finished mid-turn as a message of its
	// own: delivered, its Text kept to match the final's parts.
	LivePart LiveState = "part"
	// LiveEnded: a message the platform ended (its final went out as a new
	// message); left over, it is cleaned up.
	LiveEnded LiveState = "ended"
)

// LiveShown is where one message of a turn's live reply shows on its
// platform (adapters.LiveShown): kept while the turn runs and until its
// reply is delivered, so that the next start can clean it up, or finish
// the delivery through it, after a crash.
type LiveShown struct {
	TurnID  string
	Part    int       // 0: the reply's first message; n: the one it continued in after n messages
	State   LiveState // "" is LiveShowing
	Chat    adapters.JID
	Topic   string
	ID      adapters.MessageID
	Mode    adapters.LiveMode
	ReplyTo adapters.MessageID // the message the reply answers
	Text    string             // a LivePart's text
	Created time.Time
}

// SaveLiveShown records where a live reply message shows, replacing what
// was recorded for its turn and part.
func (s *Store) SaveLiveShown(ctx context.Context, l LiveShown) error {
	if l.State == "" {
		l.State = LiveShowing
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO live_replies (turn_id, part, platform, chat_jid, topic, message_id, mode, created_ms, state, text, reply_to)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (turn_id, part) DO UPDATE SET message_id = excluded.message_id, mode = excluded.mode,
			state = excluded.state, text = excluded.text`,
		l.TurnID, l.Part, l.Chat.Platform(), l.Chat, l.Topic, l.ID, l.Mode, s.nowMS(), l.State, l.Text, l.ReplyTo)
	if err != nil {
		return fmt.Errorf("record live reply of turn %s: %w", l.TurnID, err)
	}
	return nil
}

// EndLiveShown marks the message showing turn's live reply ended: the
// platform ended it, and the final goes out as a new message.
func (s *Store) EndLiveShown(ctx context.Context, turn string) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE live_replies SET state = 'ended' WHERE turn_id = ? AND state = 'live'`, turn); err != nil {
		return fmt.Errorf("record live reply of turn %s ended: %w", turn, err)
	}
	return nil
}

// DropLiveShown forgets every record of turn's live reply: its reply was
// delivered, or it ended without one.
func (s *Store) DropLiveShown(ctx context.Context, turn string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM live_replies WHERE turn_id = ?`, turn); err != nil {
		return fmt.Errorf("forget live reply of turn %s: %w", turn, err)
	}
	return nil
}

// DropLiveShowing forgets the message showing turn's live reply (it was
// removed or cleaned up) and keeps the parts it finished.
func (s *Store) DropLiveShowing(ctx context.Context, turn string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM live_replies WHERE turn_id = ? AND state != 'part'`, turn); err != nil {
		return fmt.Errorf("forget live reply of turn %s: %w", turn, err)
	}
	return nil
}

// DropLiveParts forgets turn's parts from part from on: they no longer
// begin its reply (its final differs), whether or not they still show.
func (s *Store) DropLiveParts(ctx context.Context, turn string, from int) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM live_replies WHERE turn_id = ? AND state = 'part' AND part >= ?`, turn, from); err != nil {
		return fmt.Errorf("forget live reply parts of turn %s: %w", turn, err)
	}
	return nil
}

// AdoptLiveParts makes the parts turn from delivered before a crash the
// parts of turn to, which answers the same message again.
func (s *Store) AdoptLiveParts(ctx context.Context, from, to string) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE live_replies SET turn_id = ? WHERE turn_id = ? AND state = 'part'`, to, from); err != nil {
		return fmt.Errorf("adopt live reply parts of turn %s: %w", from, err)
	}
	return nil
}

const liveColumns = `turn_id, part, state, chat_jid, topic, message_id, mode, reply_to, text, created_ms`

func scanLive(sc scanner) (LiveShown, error) {
	var l LiveShown
	err := sc.Scan(&l.TurnID, &l.Part, &l.State, &l.Chat, &l.Topic, &l.ID, &l.Mode, &l.ReplyTo, &l.Text, msTime(&l.Created))
	return l, err
}

// LiveOf lists the records of turn's live reply by part.
func (s *Store) LiveOf(ctx context.Context, turn string) ([]LiveShown, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+liveColumns+` FROM live_replies WHERE turn_id = ? ORDER BY part`, turn)
	out, err := collect(rows, err, scanLive)
	if err != nil {
		return nil, fmt.Errorf("read live reply of turn %s: %w", turn, err)
	}
	return out, nil
}

// LiveLeftovers lists the live reply records not yet dropped, oldest
// first.
func (s *Store) LiveLeftovers(ctx context.Context) ([]LiveShown, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+liveColumns+` FROM live_replies ORDER BY created_ms, turn_id, part`)
	out, err := collect(rows, err, scanLive)
	if err != nil {
		return nil, fmt.Errorf("read live replies: %w", err)
	}
	return out, nil
}

// LiveRecovery is what a crashed gateway's live reply records call for at
// the next start (RecoverLive).
type LiveRecovery struct {
	// Clean: messages left showing part of a reply that was not delivered
	// through them; once cleaned up, DropLiveShowing.
	Clean []LiveShown
	// Resume: turns whose reply row goes on through their records: its
	// parts are delivered, and its showing message takes the next part.
	Resume []string
	// Orphans: parts delivered by turns that never queued their reply (a
	// crash cut them short), for the turn that answers the same message
	// again (AdoptLiveParts).
	Orphans []LiveShown
}

// RecoverLive sorts the live reply records a crashed gateway left, before
// RecoverOutbox: a turn's reply row that is pending, or that a crash left
// sending while only its live reply's messages had been touched since its
// last recorded part (the next step was an edit of the showing message,
// which is harmless to repeat), is made pending again and resumed; records
// of a delivered or failed reply are dropped, except messages showing
// what was not delivered (not stored as the bot's message), to clean up;
// parts of a turn with no reply row are kept for its re-run up to maxAge.
func (s *Store) RecoverLive(ctx context.Context, maxAge time.Duration) (LiveRecovery, error) {
	var rec LiveRecovery
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		rec = LiveRecovery{}
		rows, err := tx.QueryContext(ctx, `SELECT `+liveColumns+` FROM live_replies ORDER BY created_ms, turn_id, part`)
		all, err := collect(rows, err, scanLive)
		if err != nil {
			return err
		}
		byTurn, order := map[string][]LiveShown{}, []string{}
		for _, l := range all {
			if _, ok := byTurn[l.TurnID]; !ok {
				order = append(order, l.TurnID)
			}
			byTurn[l.TurnID] = append(byTurn[l.TurnID], l)
		}
		for _, turn := range order {
			if err := s.recoverLiveTurn(ctx, tx, turn, byTurn[turn], maxAge, &rec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return LiveRecovery{}, fmt.Errorf("recover live replies: %w", err)
	}
	return rec, nil
}

func (s *Store) recoverLiveTurn(ctx context.Context, tx *sql.Tx, turn string, recs []LiveShown, maxAge time.Duration, rec *LiveRecovery) error {
	key := turn + "/reply"
	var status OutboxStatus
	var sent int
	err := tx.QueryRowContext(ctx, `SELECT status, parts_sent FROM outbox WHERE key = ?`, key).Scan(&status, &sent)
	queued := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	parts, showing := 0, false
	for _, l := range recs {
		parts += boolInt(l.State == LivePart)
		showing = showing || l.State == LiveShowing
	}
	if queued && (status == OutboxPending || status == OutboxSending && (sent < parts || sent == parts && showing)) {
		if _, err := tx.ExecContext(ctx, `UPDATE outbox SET status = 'pending' WHERE key = ? AND status = 'sending'`, key); err != nil {
			return err
		}
		rec.Resume = append(rec.Resume, turn)
		return nil
	}
	drop := func(l LiveShown) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM live_replies WHERE turn_id = ? AND part = ?`, l.TurnID, l.Part)
		return err
	}
	for _, l := range recs {
		var err error
		switch {
		case l.State == LivePart && queued, l.State == LivePart && l.Created.Before(s.now().Add(-maxAge)):
			err = drop(l)
		case l.State == LivePart:
			rec.Orphans = append(rec.Orphans, l)
		case !queued:
			rec.Clean = append(rec.Clean, l)
		default:
			var delivered bool
			err = tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE chat_jid = ? AND msg_id = ? AND from_bot = 1)`, l.Chat, l.ID).Scan(&delivered)
			switch {
			case err == nil && delivered:
				err = drop(l)
			case err == nil:
				rec.Clean = append(rec.Clean, l)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
