package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// OutboxKind is what an outbox item is.
type OutboxKind string

const (
	OutboxSend   OutboxKind = "send"   // a message sent by a folder or the operator (the default)
	OutboxReply  OutboxKind = "reply"  // a turn's reply
	OutboxNotice OutboxKind = "notice" // the gateway's own notice to a chat: its failure leaves no notice
	OutboxFile   OutboxKind = "file"   // a file upload: FilePath is the file, Text its caption
)

// OutboxStatus is where an outbox item is in its delivery.
type OutboxStatus string

const (
	OutboxPending OutboxStatus = "pending" // waiting to be sent (maybe for a retry)
	OutboxSending OutboxStatus = "sending" // claimed by a sender
	OutboxSent    OutboxStatus = "sent"    // delivered
	OutboxFailed  OutboxStatus = "failed"  // given up on, for good
)

// OutboxItem is a message waiting for, or done with, delivery.
type OutboxItem struct {
	ID          int64
	Key         string // idempotency key: one row per reply, ever
	Kind        OutboxKind
	Folder      groups.Folder // sender folder ("" for the operator); receives failure notices
	ChatJID     adapters.JID
	Topic       string
	ReplyTo     adapters.MessageID
	Text        string
	Status      OutboxStatus
	Attempts    int
	NextAttempt time.Time
	Error       string
	PlatformID  adapters.MessageID // the first part's id once it was sent
	Created     time.Time
	PartsSent   int    // parts of a split text already delivered
	FilePath    string // kind file: the file, relative to Folder's directory; Text is its caption
}

const outboxColumns = `id, key, kind, folder, chat_jid, topic, reply_to, text, status, attempts, next_attempt_ms, error, platform_id, created_ms, parts_sent, file_path`

func scanOutbox(sc scanner) (OutboxItem, error) {
	var o OutboxItem
	err := sc.Scan(&o.ID, &o.Key, &o.Kind, &o.Folder, &o.ChatJID, &o.Topic, &o.ReplyTo, &o.Text, &o.Status, &o.Attempts,
		msTime(&o.NextAttempt), &o.Error, &o.PlatformID, msTime(&o.Created), &o.PartsSent, &o.FilePath)
	return o, err
}

// AddOutbox queues o. A second item with the same Key is not queued again:
// the first one is returned.
func (s *Store) AddOutbox(ctx context.Context, o OutboxItem) (OutboxItem, error) {
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error { return insertOutbox(ctx, tx, &o, s.nowMS()) })
	if err != nil {
		return o, err
	}
	return s.outboxByKey(ctx, o.Key)
}

func insertOutbox(ctx context.Context, tx *sql.Tx, o *OutboxItem, now int64) error {
	if o.Key == "" || o.ChatJID == "" {
		return errors.New("queue outbox: key and chat are required")
	}
	if o.Kind == "" {
		o.Kind = OutboxSend
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO outbox (key, kind, folder, chat_jid, topic, reply_to, text, created_ms, file_path)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		o.Key, o.Kind, o.Folder, o.ChatJID, o.Topic, o.ReplyTo, o.Text, now, o.FilePath)
	if err != nil {
		return fmt.Errorf("queue outbox: %w", err)
	}
	return nil
}

func (s *Store) outboxByKey(ctx context.Context, key string) (OutboxItem, error) {
	o, err := scanOutbox(s.w.QueryRowContext(ctx, `SELECT `+outboxColumns+` FROM outbox WHERE key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return o, fmt.Errorf("outbox item %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return o, fmt.Errorf("read outbox item %q: %w", key, err)
	}
	return o, nil
}

// OutboxByKey returns the item with key (ErrNotFound when none).
func (s *Store) OutboxByKey(ctx context.Context, key string) (OutboxItem, error) {
	return s.outboxByKey(ctx, key)
}

// DueOutbox returns pending items due at now, at most one per chat: the
// chat's oldest unfinished item, so replies arrive in order and a chat whose
// head is waiting (rate limit, retry) does not hold up other chats.
func (s *Store) DueOutbox(ctx context.Context, now time.Time, limit int) ([]OutboxItem, error) {
	return s.queryOutbox(ctx, `SELECT `+outboxColumns+` FROM outbox o
		WHERE status = 'pending' AND next_attempt_ms <= ?
		AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_jid = o.chat_jid AND e.status IN ('pending', 'sending') AND e.id < o.id)
		ORDER BY id LIMIT ?`, toMS(now), limit)
}

// NextOutboxAt is when the earliest chat head (the oldest unfinished item of
// its chat, as DueOutbox picks them) falls due. Items queued behind a head
// are not counted: they become due when their head is done, not before, and
// counting them would make a sender that sleeps until "the next due item"
// spin while a head waits out a rate limit or is being sent.
func (s *Store) NextOutboxAt(ctx context.Context) (time.Time, bool, error) {
	var at sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT min(next_attempt_ms) FROM outbox o WHERE status = 'pending'
		AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.chat_jid = o.chat_jid AND e.status IN ('pending', 'sending') AND e.id < o.id)`).Scan(&at); err != nil {
		return time.Time{}, false, fmt.Errorf("read outbox: %w", err)
	}
	if !at.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(at.Int64), true, nil
}

// ClaimOutbox moves a pending item to sending and counts the attempt; false
// when it was not pending (someone else has it).
func (s *Store) ClaimOutbox(ctx context.Context, id int64) (bool, error) {
	return s.outboxUpdate(ctx, `UPDATE outbox SET status = 'sending', attempts = attempts + 1 WHERE id = ? AND status = 'pending'`, id)
}

// OutboxSent marks a sending item delivered and stores the bot's message
// (bot.Seq is set), in one transaction. platformID is the first part's id:
// it is kept when the item already has one.
func (s *Store) OutboxSent(ctx context.Context, id int64, platformID adapters.MessageID, bot *Message) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		if _, err := tx.ExecContext(ctx, `UPDATE outbox SET status = 'sent', platform_id = CASE WHEN platform_id = '' THEN ? ELSE platform_id END,
			error = '', done_ms = ? WHERE id = ?`, platformID, now, id); err != nil {
			return fmt.Errorf("mark sent: %w", err)
		}
		return storeBotMessage(ctx, s, tx, bot, now)
	})
}

// OutboxPartSent records that part n (1-based) of a split item was
// delivered as platformID and stores it as the bot's message, in one
// transaction, so a retry resumes at the next part and never resends one.
func (s *Store) OutboxPartSent(ctx context.Context, id int64, n int, platformID adapters.MessageID, bot *Message) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		if _, err := tx.ExecContext(ctx, `UPDATE outbox SET parts_sent = ?, platform_id = CASE WHEN platform_id = '' THEN ? ELSE platform_id END
			WHERE id = ?`, n, platformID, id); err != nil {
			return fmt.Errorf("record part %d: %w", n, err)
		}
		return storeBotMessage(ctx, s, tx, bot, now)
	})
}

func storeBotMessage(ctx context.Context, s *Store, tx *sql.Tx, bot *Message, now int64) error {
	if bot == nil {
		return nil
	}
	if bot.Time.IsZero() {
		bot.Time = fromMS(now)
	}
	seq, _, err := insertOne(ctx, tx.StmtContext(ctx, s.insertMsg), tx.StmtContext(ctx, s.msgSeqByID), tx.StmtContext(ctx, s.touchChat), bot, toMS(bot.Time), now)
	bot.Seq = seq
	return err
}

// OutboxDefer makes a pending item due at next, without counting an
// attempt (its platform is paused by a rate limit).
func (s *Store) OutboxDefer(ctx context.Context, id int64, next time.Time) error {
	_, err := s.outboxUpdate(ctx, `UPDATE outbox SET next_attempt_ms = ? WHERE id = ? AND status = 'pending'`, toMS(next), id)
	return err
}

// OutboxRetry puts a sending item back to pending, due at next.
func (s *Store) OutboxRetry(ctx context.Context, id int64, next time.Time, reason string) error {
	_, err := s.outboxUpdate(ctx, `UPDATE outbox SET status = 'pending', next_attempt_ms = ?, error = ? WHERE id = ? AND status = 'sending'`, toMS(next), reason, id)
	return err
}

// OutboxFailed marks an item failed for good and, when it came from a
// folder, leaves a notice for that folder's next prompt.
func (s *Store) OutboxFailed(ctx context.Context, id int64, reason string) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error { return failOutbox(ctx, tx, id, reason, s.nowMS()) })
}

func failOutbox(ctx context.Context, tx *sql.Tx, id int64, reason string, now int64) error {
	o, err := scanOutbox(tx.QueryRowContext(ctx, `SELECT `+outboxColumns+` FROM outbox WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("fail outbox %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("fail outbox %d: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE outbox SET status = 'failed', error = ?, done_ms = ? WHERE id = ?`, reason, now, id); err != nil {
		return fmt.Errorf("fail outbox %d: %w", id, err)
	}
	if o.Folder == "" || o.Kind == OutboxNotice {
		return nil
	}
	text := o.Text
	if len(text) > 200 {
		text = strings.ToValidUTF8(text[:200], "") + "…"
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO notices (folder, chat_jid, text, error, created_ms) VALUES (?, ?, ?, ?, ?)`, o.Folder, o.ChatJID, text, reason, now)
	if err != nil {
		return fmt.Errorf("record notice: %w", err)
	}
	return nil
}

// RecoverOutbox settles items left in sending by a crash. Those to a
// platform in resend (adapters.StoreDelivered: nothing shows before the
// gateway stores it, so the item cannot have arrived) are pending again,
// to be sent from their next unsent part; every other one fails: it may
// have reached the platform, and each reply is sent at most once. It
// returns how many failed and how many are pending again.
func (s *Store) RecoverOutbox(ctx context.Context, resend ...string) (failed, requeued int, err error) {
	err = writeTx(ctx, s.w, func(tx *sql.Tx) error {
		failed, requeued = 0, 0
		rows, err := tx.QueryContext(ctx, `SELECT id, chat_jid FROM outbox WHERE status = 'sending'`)
		type row struct {
			id   int64
			chat adapters.JID
		}
		its, err := collect(rows, err, func(sc scanner) (r row, err error) { return r, sc.Scan(&r.id, &r.chat) })
		if err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		for _, it := range its {
			if slices.Contains(resend, it.chat.Platform()) {
				if _, err := tx.ExecContext(ctx, `UPDATE outbox SET status = 'pending' WHERE id = ?`, it.id); err != nil {
					return fmt.Errorf("requeue outbox %d: %w", it.id, err)
				}
				requeued++
				continue
			}
			if err := failOutbox(ctx, tx, it.id, "interrupted during delivery by a restart; not resent, it may or may not have arrived", s.nowMS()); err != nil {
				return err
			}
			failed++
		}
		return nil
	})
	return failed, requeued, err
}

func (s *Store) outboxUpdate(ctx context.Context, q string, args ...any) (bool, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("update outbox: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n > 0, err
}

// Outbox lists items of a chat, newest first (all chats when chat is "").
func (s *Store) Outbox(ctx context.Context, chat adapters.JID, limit int) ([]OutboxItem, error) {
	q := `SELECT ` + outboxColumns + ` FROM outbox WHERE (? = '' OR chat_jid = ?) ORDER BY id DESC LIMIT ?`
	return s.queryOutbox(ctx, q, chat, chat, clampLimit(limit))
}

func (s *Store) queryOutbox(ctx context.Context, q string, args ...any) ([]OutboxItem, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	out, err := collect(rows, err, scanOutbox)
	if err != nil {
		err = fmt.Errorf("read outbox: %w", err)
	}
	return out, err
}

// OutboxChatsSince lists the chats that folder queued items to, under keys
// starting with keyPrefix, since since: the chats a turn interrupted by a
// stop already answered through a tool.
func (s *Store) OutboxChatsSince(ctx context.Context, folder groups.Folder, keyPrefix string, since time.Time) ([]adapters.JID, error) {
	rows, err := s.r.QueryContext(ctx, outboxChatsSinceSQL, folder, keyPrefix, keyPrefix, toMS(since))
	chats, err := collect(rows, err, scanOne[adapters.JID])
	if err != nil {
		return nil, fmt.Errorf("read outbox of %s: %w", folder, err)
	}
	return chats, nil
}

// outboxChatsSinceSQL is OutboxChatsSince's query: by outbox_created (the
// planner, knowing nothing of the rows, would scan outbox_chat).
const outboxChatsSinceSQL = `SELECT DISTINCT chat_jid FROM outbox INDEXED BY outbox_created WHERE folder = ? AND substr(key, 1, length(?)) = ? AND created_ms >= ?`

// Spoken is a delivered message a folder sent to a chat (a reply, a send or
// a file, not the gateway's own notice): where the bot spoke for the folder.
// Topic is where it was addressed; Stored, where the platform put it when
// that differs (a Slack reply to a channel message opens a thread under it).
type Spoken struct {
	Folder  groups.Folder
	ChatJID adapters.JID
	Topic   string
	Stored  string
	At      time.Time
}

// spokenSinceSQL is SpokenSince's query: by outbox_sent_done (the planner
// would read every sent row through outbox_due's status).
const spokenSinceSQL = `SELECT o.folder, o.chat_jid, o.topic, COALESCE(m.topic, o.topic), o.done_ms
		FROM outbox o INDEXED BY outbox_sent_done LEFT JOIN messages m ON m.chat_jid = o.chat_jid AND m.msg_id = o.platform_id
		WHERE o.status = 'sent' AND o.folder != '' AND o.kind != ? AND o.done_ms >= ? ORDER BY o.done_ms, o.id`

// SpokenSince lists the messages folders delivered since since, oldest
// first: the engagements (the bot spoke, follow-ups trigger for a while)
// that a restart would otherwise forget.
func (s *Store) SpokenSince(ctx context.Context, since time.Time) ([]Spoken, error) {
	rows, err := s.r.QueryContext(ctx, spokenSinceSQL, OutboxNotice, toMS(since))
	out, err := collect(rows, err, func(sc scanner) (sp Spoken, err error) {
		return sp, sc.Scan(&sp.Folder, &sp.ChatJID, &sp.Topic, &sp.Stored, msTime(&sp.At))
	})
	if err != nil {
		return nil, fmt.Errorf("read where the bot spoke: %w", err)
	}
	return out, nil
}
