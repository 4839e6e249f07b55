package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// EditMessage replaces the text and attachments of the stored message
// (m.ChatJID, m.ID) and records when (m.Edited, default now); the FTS index
// follows. An update that changes neither is no edit and leaves the
// message as it was. A message that was never stored is stored as m (it
// starts no turn: no work is queued). m.Seq is set either way.
func (s *Store) EditMessage(ctx context.Context, m *Message) (existed bool, err error) {
	if err := validMessage(m); err != nil {
		return false, fmt.Errorf("edit message: %w", err)
	}
	att, err := encodeAttachments(m.Attachments)
	if err != nil {
		return false, err
	}
	err = writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		if m.Edited.IsZero() {
			m.Edited = fromMS(now)
		}
		// An update that changes neither the text nor the attachments (a
		// Discord embed resolved, a pin) is no edit: the message is left as
		// it is, not shown as edited.
		err := tx.QueryRowContext(ctx, `UPDATE messages SET text = ?, attachments = coalesce(?, attachments), edited_ms = ?
			WHERE chat_jid = ? AND msg_id = ? AND (text IS NOT ? OR (? IS NOT NULL AND attachments IS NOT ?)) RETURNING seq`,
			m.Text, att, toMS(m.Edited), m.ChatJID, m.ID, m.Text, att, att).Scan(&m.Seq)
		if err == sql.ErrNoRows {
			err = tx.QueryRowContext(ctx, `SELECT seq FROM messages WHERE chat_jid = ? AND msg_id = ?`, m.ChatJID, m.ID).Scan(&m.Seq)
		}
		if err == nil {
			existed = true
			return nil
		}
		if err != sql.ErrNoRows {
			return err
		}
		if m.Time.IsZero() {
			m.Time = fromMS(now)
		}
		seq, _, err := insertOne(ctx, tx.StmtContext(ctx, s.insertMsg), tx.StmtContext(ctx, s.msgSeqByID),
			tx.StmtContext(ctx, s.touchChat), m, toMS(m.Time), now)
		m.Seq = seq
		return err
	})
	if err != nil {
		return false, fmt.Errorf("edit message %s in %s: %w", m.ID, m.ChatJID, err)
	}
	return existed, nil
}

// DeleteMessage marks the stored message (chat, id) deleted and returns its
// seq; 0 when no such message is stored.
func (s *Store) DeleteMessage(ctx context.Context, chat adapters.JID, id adapters.MessageID) (int64, error) {
	var seq int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `UPDATE messages SET deleted = 1 WHERE chat_jid = ? AND msg_id = ? RETURNING seq`, chat, id).Scan(&seq)
		if err == sql.ErrNoRows {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("delete message %s in %s: %w", id, chat, err)
	}
	return seq, nil
}

// Reaction is one sender's reaction to a message.
type Reaction struct {
	ChatJID    adapters.JID
	MsgID      adapters.MessageID
	Sender     adapters.JID
	SenderName string
	Emoji      string
	Removed    bool // the reaction was taken back
	Time       time.Time
}

// ReactionNote is a reaction to one of the bot's messages, waiting for the
// owning folder's next prompt.
type ReactionNote struct {
	ID     int64
	Folder groups.Folder
	Reaction
}

// SetReaction records r (or, when r.Removed, forgets it); recording it again
// changes nothing. With noteFolder set, the reaction is also kept for that
// folder's next prompt. It returns the seq of the message reacted to, 0 when
// that message is not stored.
func (s *Store) SetReaction(ctx context.Context, r Reaction, noteFolder groups.Folder) (int64, error) {
	if r.ChatJID == "" || r.MsgID == "" || r.Sender == "" || r.Emoji == "" {
		return 0, fmt.Errorf("%w: a reaction needs a chat, a message id, a sender and an emoji", ErrInvalidMessage)
	}
	var seq int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if r.Time.IsZero() {
			r.Time = fromMS(s.nowMS())
		}
		var res sql.Result
		var err error
		if r.Removed {
			res, err = tx.ExecContext(ctx, `DELETE FROM reactions WHERE chat_jid = ? AND msg_id = ? AND sender = ? AND emoji = ?`,
				r.ChatJID, r.MsgID, r.Sender, r.Emoji)
		} else {
			res, err = tx.ExecContext(ctx, `INSERT INTO reactions (chat_jid, msg_id, sender, emoji, time_ms) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT DO NOTHING`, r.ChatJID, r.MsgID, r.Sender, r.Emoji, toMS(r.Time))
		}
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n > 0 && noteFolder != "" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO reaction_notes (folder, chat_jid, msg_id, sender, sender_name, emoji, removed, time_ms)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, noteFolder, r.ChatJID, r.MsgID, r.Sender, r.SenderName, r.Emoji, r.Removed, toMS(r.Time)); err != nil {
				return err
			}
		}
		err = tx.QueryRowContext(ctx, `SELECT seq FROM messages WHERE chat_jid = ? AND msg_id = ?`, r.ChatJID, r.MsgID).Scan(&seq)
		if err == sql.ErrNoRows {
			return nil
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record reaction to %s in %s: %w", r.MsgID, r.ChatJID, err)
	}
	return seq, nil
}

// Reactions lists the reactions to a message, oldest first.
func (s *Store) Reactions(ctx context.Context, chat adapters.JID, id adapters.MessageID) ([]Reaction, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT sender, emoji, time_ms FROM reactions WHERE chat_jid = ? AND msg_id = ? ORDER BY time_ms, sender`, chat, id)
	out, err := collect(rows, err, func(sc scanner) (Reaction, error) {
		r := Reaction{ChatJID: chat, MsgID: id}
		err := sc.Scan(&r.Sender, &r.Emoji, msTime(&r.Time))
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("read reactions of %s in %s: %w", id, chat, err)
	}
	return out, nil
}

// reactionNotes reads up to 20 of folder's pending reaction notes.
func (s *Store) reactionNotes(ctx context.Context, folder groups.Folder, byMS int64) ([]ReactionNote, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, folder, chat_jid, msg_id, sender, sender_name, emoji, removed, time_ms
		FROM reaction_notes WHERE folder = ? AND time_ms <= ? ORDER BY id LIMIT 20`, folder, byMS)
	out, err := collect(rows, err, func(sc scanner) (ReactionNote, error) {
		var n ReactionNote
		err := sc.Scan(&n.ID, &n.Folder, &n.ChatJID, &n.MsgID, &n.Sender, &n.SenderName, &n.Emoji, &n.Removed, msTime(&n.Time))
		return n, err
	})
	if err != nil {
		return nil, fmt.Errorf("read reaction notes: %w", err)
	}
	return out, nil
}
