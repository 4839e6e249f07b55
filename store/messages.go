package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"switchboard/adapters"
)

// Limits for the message listing methods (MessagesAfter, MessagesBefore,
// Thread): a limit <= 0 means DefaultLimit, and a larger one than MaxLimit is
// cut to MaxLimit. Callers page with the sequence cursor.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Message is a stored chat message, inbound or the bot's own. Its identity is
// (ChatJID, ID); Seq is the store's cursor, increasing in insertion order.
type Message struct {
	Seq         int64
	ChatJID     adapters.JID
	ID          adapters.MessageID // platform message id, unique within the chat only
	Sender      adapters.JID
	SenderName  string
	Text        string
	Topic       string
	ReplyTo     adapters.MessageID
	Verb        adapters.Verb
	FromBot     bool
	OtherBot    bool // sent by another bot or a webhook: never starts a turn
	Deleted     bool // deleted on the platform; the text is kept for the record
	Time        time.Time
	Edited      time.Time // the last edit; zero when never edited
	Attachments []adapters.Attachment
}

const msgColumns = `seq, chat_jid, msg_id, sender, sender_name, text, topic, reply_to, verb, from_bot, time_ms, attachments, other_bot, deleted, edited_ms`

// insertMsgHead is the INSERT of a message row (msgInsertCols values) up
// to its VALUES: insertMsg and msgRows' statements of many rows.
const insertMsgHead = `INSERT INTO messages
	(chat_jid, msg_id, sender, sender_name, text, topic, reply_to, verb, from_bot, time_ms, attachments, created_ms, other_bot)
	VALUES`

// prepare readies the statements on the insert path, which runs tens of
// thousands of times a minute.
func (s *Store) prepare(ctx context.Context) error {
	var err error
	s.insertMsg, err = s.w.PrepareContext(ctx, insertMsgHead+` (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (chat_jid, msg_id) DO NOTHING`)
	if err != nil {
		return fmt.Errorf("prepare insert message: %w", err)
	}
	s.msgSeqByID, err = s.w.PrepareContext(ctx, `SELECT seq FROM messages WHERE chat_jid = ? AND msg_id = ?`)
	if err != nil {
		return fmt.Errorf("prepare message lookup: %w", err)
	}
	s.insertWorkStmt, err = s.w.PrepareContext(ctx, insertWorkSQL)
	if err != nil {
		return fmt.Errorf("prepare insert work: %w", err)
	}
	s.touchChat, err = s.w.PrepareContext(ctx, `INSERT INTO chats (jid, platform, first_seen_ms, last_seq)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (jid) DO UPDATE SET last_seq = max(chats.last_seq, excluded.last_seq)`)
	if err != nil {
		return fmt.Errorf("prepare chat update: %w", err)
	}
	return nil
}

// InsertMessage stores m in one transaction and sets m.Seq. A message whose
// (ChatJID, ID) is already stored is not stored again: inserted is false, the
// stored row is unchanged and m.Seq is set to its seq. A zero m.Time is set
// to now. The chat's row is created if missing and its last_seq advanced.
// An empty ChatJID or ID is refused with ErrInvalidMessage.
func (s *Store) InsertMessage(ctx context.Context, m *Message) (inserted bool, err error) {
	n, err := s.InsertMessages(ctx, []*Message{m})
	return n == 1, err
}

// InsertMessages stores ms in one transaction with InsertMessage's semantics
// per message (a repeat within ms is a duplicate of its first occurrence) and
// returns how many were new. If any message fails, nothing is stored and no
// Seq is changed. It is EnqueueMessages without work: the same few
// statements of many rows.
func (s *Store) InsertMessages(ctx context.Context, ms []*Message) (inserted int, err error) {
	es := make([]Enqueue, len(ms))
	for i, m := range ms {
		es[i].Message = m
	}
	if err := s.EnqueueMessages(ctx, es); err != nil {
		return 0, err
	}
	for _, e := range es {
		if e.Inserted {
			inserted++
		}
	}
	return inserted, nil
}

func validMessage(m *Message) error {
	switch {
	case m == nil:
		return fmt.Errorf("%w: nil", ErrInvalidMessage)
	case m.ChatJID == "":
		return fmt.Errorf("%w: empty chat jid (message id %q)", ErrInvalidMessage, m.ID)
	case m.ID == "":
		return fmt.Errorf("%w: empty platform message id in %s", ErrInvalidMessage, m.ChatJID)
	}
	return nil
}

func insertOne(ctx context.Context, ins, sel, touch *sql.Stmt, m *Message, timeMS, now int64) (seq int64, inserted bool, err error) {
	seq, inserted, err = insertRow(ctx, ins, sel, m, timeMS, now)
	if err != nil || !inserted {
		return seq, inserted, err
	}
	if err := touchChat(ctx, touch, m.ChatJID, now, seq); err != nil {
		return 0, false, err
	}
	return seq, true, nil
}

// insertRow inserts m's row, or finds the seq of the message stored with
// its (ChatJID, ID) before; the caller updates the chat's row (touchChat).
func insertRow(ctx context.Context, ins, sel *sql.Stmt, m *Message, timeMS, now int64) (seq int64, inserted bool, err error) {
	att, err := encodeAttachments(m.Attachments)
	if err != nil {
		return 0, false, err
	}
	res, err := ins.ExecContext(ctx, m.ChatJID, m.ID, m.Sender, m.SenderName, m.Text, m.Topic,
		m.ReplyTo, m.Verb, m.FromBot, timeMS, att, now, m.OtherBot)
	if err != nil {
		return 0, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, false, err
	}
	if n == 0 {
		if err := sel.QueryRowContext(ctx, m.ChatJID, m.ID).Scan(&seq); err != nil {
			return 0, false, fmt.Errorf("look up duplicate: %w", err)
		}
		return seq, false, nil
	}
	if seq, err = res.LastInsertId(); err != nil {
		return 0, false, err
	}
	return seq, true, nil
}

// touchChat creates the chat's row if it is missing and advances its
// last_seq to seq if that is higher.
func touchChat(ctx context.Context, touch *sql.Stmt, chat adapters.JID, now, seq int64) error {
	if _, err := touch.ExecContext(ctx, chat, platformOf(chat), now, seq); err != nil {
		return fmt.Errorf("update chat: %w", err)
	}
	return nil
}

// platformOf is the part of a JID before the first ':'.
func platformOf(jid adapters.JID) string {
	p, _, ok := strings.Cut(string(jid), ":")
	if !ok {
		return ""
	}
	return p
}

func encodeAttachments(a []adapters.Attachment) (any, error) {
	if len(a) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode attachments: %w", err)
	}
	return string(b), nil
}

// scanMessage reads msgColumns, followed by extra destinations.
func scanMessage(sc scanner, m *Message, extra ...any) error {
	var att sql.NullString
	dest := append([]any{&m.Seq, &m.ChatJID, &m.ID, &m.Sender, &m.SenderName, &m.Text, &m.Topic,
		&m.ReplyTo, &m.Verb, &m.FromBot, msTime(&m.Time), &att, &m.OtherBot, &m.Deleted, msTime(&m.Edited)}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return err
	}
	m.Attachments = nil
	if att.Valid && att.String != "" {
		if err := json.Unmarshal([]byte(att.String), &m.Attachments); err != nil {
			return fmt.Errorf("decode attachments of message %d: %w", m.Seq, err)
		}
	}
	return nil
}

// Message returns the message with that seq, or an error wrapping ErrNotFound.
func (s *Store) Message(ctx context.Context, seq int64) (Message, error) {
	var m Message
	err := scanMessage(s.r.QueryRowContext(ctx, `SELECT `+msgColumns+` FROM messages WHERE seq = ?`, seq), &m)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("message %d: %w", seq, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("read message %d: %w", seq, err)
	}
	return m, nil
}

// MessageByID returns the message with that platform id in that chat, or an
// error wrapping ErrNotFound.
func (s *Store) MessageByID(ctx context.Context, chatJID adapters.JID, id adapters.MessageID) (Message, error) {
	var m Message
	err := scanMessage(s.r.QueryRowContext(ctx,
		`SELECT `+msgColumns+` FROM messages WHERE chat_jid = ? AND msg_id = ?`, chatJID, id), &m)
	if errors.Is(err, sql.ErrNoRows) {
		return Message{}, fmt.Errorf("message %s in %s: %w", id, chatJID, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("read message %s in %s: %w", id, chatJID, err)
	}
	return m, nil
}

// MessagesAfter returns up to limit messages of the chat with seq > afterSeq,
// in ascending seq.
func (s *Store) MessagesAfter(ctx context.Context, chatJID adapters.JID, afterSeq int64, limit int) ([]Message, error) {
	ms, err := s.queryMessages(ctx, `SELECT `+msgColumns+` FROM messages
		WHERE chat_jid = ? AND seq > ? ORDER BY seq LIMIT ?`,
		chatJID, afterSeq, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("read messages of %s after %d: %w", chatJID, afterSeq, err)
	}
	return ms, nil
}

// MessagesBefore returns the limit newest messages of the chat with
// seq < beforeSeq (beforeSeq <= 0: the newest overall), in ascending seq.
func (s *Store) MessagesBefore(ctx context.Context, chatJID adapters.JID, beforeSeq int64, limit int) ([]Message, error) {
	if beforeSeq <= 0 {
		beforeSeq = math.MaxInt64
	}
	ms, err := s.queryMessages(ctx, `SELECT `+msgColumns+` FROM messages
		WHERE chat_jid = ? AND seq < ? ORDER BY seq DESC LIMIT ?`,
		chatJID, beforeSeq, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("read messages of %s before %d: %w", chatJID, beforeSeq, err)
	}
	slices.Reverse(ms)
	return ms, nil
}

// Thread returns the limit newest messages of the chat whose topic is topic,
// in ascending seq; topic "" is the chat's main channel. For a non-empty
// topic the thread's root message (the one whose platform id is the topic,
// as with Slack thread_ts and Telegram forum topics) is part of the thread
// even when it has no topic itself, and counts toward limit.
func (s *Store) Thread(ctx context.Context, chatJID adapters.JID, topic string, limit int) ([]Message, error) {
	n := clampLimit(limit)
	ms, err := s.queryMessages(ctx, `SELECT `+msgColumns+` FROM messages WHERE seq IN (
			SELECT seq FROM (SELECT seq FROM messages WHERE chat_jid = ?1 AND topic = ?2 ORDER BY seq DESC LIMIT ?3)
			UNION
			SELECT seq FROM messages WHERE chat_jid = ?1 AND msg_id = ?2 AND ?2 <> ''
		) ORDER BY seq DESC LIMIT ?3`,
		chatJID, topic, n)
	if err != nil {
		return nil, fmt.Errorf("read thread %q of %s: %w", topic, chatJID, err)
	}
	slices.Reverse(ms)
	return ms, nil
}

func (s *Store) queryMessages(ctx context.Context, query string, args ...any) ([]Message, error) {
	rows, err := s.r.QueryContext(ctx, query, args...)
	return collect(rows, err, func(sc scanner) (Message, error) {
		var m Message
		err := scanMessage(sc, &m)
		return m, err
	})
}

// LastSeq is the highest message seq stored, 0 when there are none.
func (s *Store) LastSeq(ctx context.Context) (int64, error) {
	var seq int64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM messages`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read last seq: %w", err)
	}
	return seq, nil
}

func clampLimit(limit int) int {
	if limit <= 0 {
		return DefaultLimit
	}
	return min(limit, MaxLimit)
}
