package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// WorkItem is one thing a folder has to do: a routed or injected message
// (Seq > 0) or a prompt (task, delegate, escalate).
type WorkItem struct {
	ID       int64
	Folder   string
	ChatJID  string
	Topic    string
	Seq      int64  // the message; 0 for prompts
	Mode     string // "trigger" | "observe"
	Trigger  string // message | inject | task | delegate | escalate
	Prompt   string
	Origin   string
	TaskID   int64
	RunID    int64
	Isolated bool
	Attempts int
	Created  int64
}

// Batch is the next turn of a folder: trigger items of one chat and topic,
// the messages they carry, observed context, and delivery-failure notices.
type Batch struct {
	Folder, ChatJID, Topic string
	Items                  []WorkItem // trigger items, oldest first (Items[0] decides the turn's trigger)
	Observed               []Message
	Messages               []Message
	Notices                []Notice
	observedIDs            []int64
}

// Notice is a delivery failure reported in the folder's next prompt.
type Notice struct {
	ID      int64
	Folder  string
	ChatJID string
	Text    string
	Error   string
	Created int64
}

// Turn is the record of one agent run.
type Turn struct {
	ID         string
	Folder     string
	ChatJID    string
	Topic      string
	Trigger    string
	TaskID     int64
	RunID      int64
	Attempt    int
	Started    int64
	DurationMS int64
	Status     string // succeeded | failed
	Error      string
	ExitCode   int
	SessionID  string
}

// maxObserved bounds the observed context carried into one prompt; older
// observed rows of the same chat and topic are dropped when a turn consumes them.
const maxObserved = 50

// EnqueueMessage stores m and, only if it is new, the work it creates, in
// one transaction: a crash can never keep one without the other. Work items
// get m's Seq. inserted is false for a duplicate (m.Seq is the original's).
func (s *Store) EnqueueMessage(ctx context.Context, m *Message, work []WorkItem) (inserted bool, err error) {
	if err := validMessage(m); err != nil {
		return false, err
	}
	var seq, tm int64
	err = writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		tm = m.Time
		if tm == 0 {
			tm = now
		}
		var err error
		seq, inserted, err = insertOne(ctx, tx.StmtContext(ctx, s.insertMsg), tx.StmtContext(ctx, s.msgSeqByID), tx.StmtContext(ctx, s.touchChat), m, tm, now)
		if err != nil || !inserted {
			return err
		}
		for _, w := range work {
			w.Seq = seq
			if err := insertWork(ctx, tx, w, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	m.Seq, m.Time = seq, tm
	return inserted, nil
}

// Enqueue adds a prompt work item (task, delegate, escalate) and returns its id.
func (s *Store) Enqueue(ctx context.Context, w WorkItem) (int64, error) {
	var id int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if err := insertWork(ctx, tx, w, s.nowMS()); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT last_insert_rowid()`).Scan(&id)
	})
	return id, err
}

func insertWork(ctx context.Context, tx *sql.Tx, w WorkItem, now int64) error {
	if w.Folder == "" || w.ChatJID == "" || w.Mode == "" || w.Trigger == "" {
		return fmt.Errorf("insert work: folder, chat, mode and trigger are required")
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO work (folder, chat_jid, topic, seq, mode, trigger, prompt, origin, task_id, run_id, isolated, created_ms)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		w.Folder, w.ChatJID, w.Topic, w.Seq, w.Mode, w.Trigger, w.Prompt, w.Origin, w.TaskID, w.RunID, w.Isolated, now)
	if err != nil {
		return fmt.Errorf("insert work: %w", err)
	}
	return nil
}

// PendingFolders lists folders with trigger work waiting.
func (s *Store) PendingFolders(ctx context.Context) ([]string, error) {
	return queryStrings(ctx, s.r, `SELECT DISTINCT folder FROM work WHERE mode = 'trigger'`)
}

const workColumns = `id, folder, chat_jid, topic, seq, mode, trigger, prompt, origin, task_id, run_id, isolated, attempts, created_ms`

func scanWork(sc scanner) (WorkItem, error) {
	var w WorkItem
	err := sc.Scan(&w.ID, &w.Folder, &w.ChatJID, &w.Topic, &w.Seq, &w.Mode, &w.Trigger, &w.Prompt, &w.Origin,
		&w.TaskID, &w.RunID, &w.Isolated, &w.Attempts, &w.Created)
	return w, err
}

// NextBatch returns folder's next turn: the oldest trigger item decides the
// chat and topic; message items of that chat and topic (up to max) batch
// together, a prompt item runs alone. ok is false when nothing is pending.
func (s *Store) NextBatch(ctx context.Context, folder string, max int) (Batch, bool, error) {
	row := s.r.QueryRowContext(ctx, `SELECT `+workColumns+` FROM work WHERE folder = ? AND mode = 'trigger' ORDER BY id LIMIT 1`, folder)
	first, err := scanWork(row)
	if err == sql.ErrNoRows {
		return Batch{}, false, nil
	}
	if err != nil {
		return Batch{}, false, fmt.Errorf("next batch of %s: %w", folder, err)
	}
	b := Batch{Folder: folder, ChatJID: first.ChatJID, Topic: first.Topic, Items: []WorkItem{first}}
	if first.Seq > 0 {
		items, err := s.workOf(ctx, `SELECT `+workColumns+` FROM work WHERE folder = ? AND chat_jid = ? AND topic = ?
			AND mode = 'trigger' AND seq > 0 AND id > ? ORDER BY id LIMIT ?`, folder, first.ChatJID, first.Topic, first.ID, max-1)
		if err != nil {
			return b, false, err
		}
		b.Items = append(b.Items, items...)
	}
	if err := s.loadBatch(ctx, &b); err != nil {
		return b, false, err
	}
	return b, true, nil
}

func (s *Store) workOf(ctx context.Context, q string, args ...any) ([]WorkItem, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read work: %w", err)
	}
	defer rows.Close()
	var out []WorkItem
	for rows.Next() {
		w, err := scanWork(rows)
		if err != nil {
			return nil, fmt.Errorf("read work: %w", err)
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// loadBatch fills in messages, observed context and notices.
func (s *Store) loadBatch(ctx context.Context, b *Batch) error {
	var seqs []any
	for _, it := range b.Items {
		if it.Seq > 0 {
			seqs = append(seqs, it.Seq)
		}
	}
	if len(seqs) > 0 {
		msgs, err := s.queryMessages(ctx, `SELECT `+msgColumns+` FROM messages WHERE seq IN (?`+strings.Repeat(",?", len(seqs)-1)+`) ORDER BY seq`, seqs...)
		if err != nil {
			return err
		}
		b.Messages = msgs
	}
	obs, err := s.workOf(ctx, `SELECT `+workColumns+` FROM work WHERE folder = ? AND chat_jid = ? AND topic = ? AND mode = 'observe' ORDER BY id`,
		b.Folder, b.ChatJID, b.Topic)
	if err != nil {
		return err
	}
	var obsSeqs []any
	for i, w := range obs {
		b.observedIDs = append(b.observedIDs, w.ID)
		if i >= len(obs)-maxObserved {
			obsSeqs = append(obsSeqs, w.Seq)
		}
	}
	if len(obsSeqs) > 0 {
		msgs, err := s.queryMessages(ctx, `SELECT `+msgColumns+` FROM messages WHERE seq IN (?`+strings.Repeat(",?", len(obsSeqs)-1)+`) ORDER BY seq`, obsSeqs...)
		if err != nil {
			return err
		}
		b.Observed = msgs
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, folder, chat_jid, text, error, created_ms FROM notices WHERE folder = ? ORDER BY id LIMIT 20`, b.Folder)
	if err != nil {
		return fmt.Errorf("read notices: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n Notice
		if err := rows.Scan(&n.ID, &n.Folder, &n.ChatJID, &n.Text, &n.Error, &n.Created); err != nil {
			return fmt.Errorf("read notices: %w", err)
		}
		b.Notices = append(b.Notices, n)
	}
	return rows.Err()
}

// FinishBatch records a turn and, in the same transaction, either consumes
// the batch (its work rows, the observed context and notices it showed) and
// queues its replies, or — retry — counts the attempt and keeps the batch.
func (s *Store) FinishBatch(ctx context.Context, b Batch, t Turn, out []OutboxItem, retry bool) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		if _, err := tx.ExecContext(ctx, `INSERT INTO turns (id, folder, chat_jid, topic, trigger, task_id, run_id, attempt, started_ms,
			duration_ms, status, error, exit_code, session_id, messages) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Folder, t.ChatJID, t.Topic, t.Trigger, t.TaskID, t.RunID, t.Attempt, t.Started, t.DurationMS,
			t.Status, t.Error, t.ExitCode, t.SessionID, len(b.Messages)); err != nil {
			return fmt.Errorf("record turn: %w", err)
		}
		ids := make([]int64, 0, len(b.Items))
		for _, it := range b.Items {
			ids = append(ids, it.ID)
		}
		if retry {
			if err := execIDs(ctx, tx, `UPDATE work SET attempts = attempts + 1 WHERE id IN`, ids); err != nil {
				return err
			}
		} else {
			if err := execIDs(ctx, tx, `DELETE FROM work WHERE id IN`, append(ids, b.observedIDs...)); err != nil {
				return err
			}
			var nids []int64
			for _, n := range b.Notices {
				nids = append(nids, n.ID)
			}
			if err := execIDs(ctx, tx, `DELETE FROM notices WHERE id IN`, nids); err != nil {
				return err
			}
		}
		for _, o := range out {
			if err := insertOutbox(ctx, tx, &o, now); err != nil {
				return err
			}
		}
		return nil
	})
}

func execIDs(ctx context.Context, tx *sql.Tx, prefix string, ids []int64) error {
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := make([]any, n)
		for i := range n {
			args[i] = ids[i]
		}
		if _, err := tx.ExecContext(ctx, prefix+` (?`+strings.Repeat(",?", n-1)+`)`, args...); err != nil {
			return fmt.Errorf("update work: %w", err)
		}
		ids = ids[n:]
	}
	return nil
}

// Session returns the agent session of a folder in a chat and topic ("" when fresh).
func (s *Store) Session(ctx context.Context, folder, chat, topic string) (string, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT session_id FROM sessions WHERE folder = ? AND chat_jid = ? AND topic = ?`, folder, chat, topic).Scan(&id)
	if err == sql.ErrNoRows {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read session: %w", err)
	}
	return id, nil
}

// SetSession stores the session a folder continues in a chat and topic.
func (s *Store) SetSession(ctx context.Context, folder, chat, topic, id string) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sessions (folder, chat_jid, topic, session_id, updated_ms) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (folder, chat_jid, topic) DO UPDATE SET session_id = excluded.session_id, updated_ms = excluded.updated_ms`,
			folder, chat, topic, id, s.nowMS())
		if err != nil {
			return fmt.Errorf("save session: %w", err)
		}
		return nil
	})
}

// ResetSessions forgets every session of folder; its next turns start fresh.
func (s *Store) ResetSessions(ctx context.Context, folder string) (int64, error) {
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

// Turns returns folder's most recent turn records, newest first.
func (s *Store) Turns(ctx context.Context, folder string, limit int) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, folder, chat_jid, topic, trigger, task_id, run_id, attempt, started_ms, duration_ms,
		status, error, exit_code, session_id FROM turns WHERE folder = ? ORDER BY started_ms DESC, rowid DESC LIMIT ?`, folder, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("read turns: %w", err)
	}
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		var t Turn
		if err := rows.Scan(&t.ID, &t.Folder, &t.ChatJID, &t.Topic, &t.Trigger, &t.TaskID, &t.RunID, &t.Attempt, &t.Started,
			&t.DurationMS, &t.Status, &t.Error, &t.ExitCode, &t.SessionID); err != nil {
			return nil, fmt.Errorf("read turns: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
