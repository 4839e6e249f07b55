package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"switchboard/adapters"
)

// EnqueueMessage stores m and, only if it is new, the work it creates, in
// one transaction: a crash can never keep one without the other. Work items
// get m's Seq. inserted is false for a duplicate (m.Seq is the original's).
func (s *Store) EnqueueMessage(ctx context.Context, m *Message, work []WorkItem) (inserted bool, err error) {
	e := []Enqueue{{Message: m, Work: work}}
	if err := s.EnqueueMessages(ctx, e); err != nil {
		return false, err
	}
	return e[0].Inserted, nil
}

// Enqueue is one message and the work it creates, for EnqueueMessages.
type Enqueue struct {
	Message  *Message
	Work     []WorkItem
	Inserted bool // set by EnqueueMessages: false for a duplicate
}

// EnqueueMessages is EnqueueMessage for many messages in one transaction
// (group commit): each message with its work, or — a duplicate, also of an
// earlier message in es — nothing. It sets each Message's Seq and Time and
// each Inserted. If anything fails, nothing is stored and no field changes;
// the caller can retry the messages one by one to isolate a bad one.
//
// The messages go in with few statements of many rows each (multiInsert),
// their seqs in the order of es; each chat's row is updated once, with its
// highest new seq, which is what one update per message would leave. The
// work goes in with one row for each run of a chat and topic's messages
// with the same work (workRuns: fewer entries in the work table and its
// indexes a transaction), and the readers (NextBatch, StartedBatch, the
// observed context) still see an item a message.
func (s *Store) EnqueueMessages(ctx context.Context, es []Enqueue) error {
	for i := range es {
		if err := validMessage(es[i].Message); err != nil {
			return fmt.Errorf("insert message %d of %d: %w", i+1, len(es), err)
		}
		for j, w := range es[i].Work {
			if err := checkWork(w); err != nil {
				return fmt.Errorf("insert message %d of %d (%s in %s), work item %d: %w", i+1, len(es), es[i].Message.ID, es[i].Message.ChatJID, j+1, err)
			}
		}
	}
	uniq, dupOf := firstOccurrences(es)
	// Preparing needs the writer connection, which the transaction holds.
	if err := s.msgRows.prepareUpTo(ctx, s.w, len(uniq)); err != nil {
		return err
	}
	nWork := 0
	for _, e := range es {
		nWork += len(e.Work)
	}
	if err := s.workRows.prepareUpTo(ctx, s.w, nWork); err != nil {
		return err
	}
	seqs := make([]int64, len(es))
	times := make([]int64, len(es))
	news := make([]bool, len(es))
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		for i, e := range es {
			if times[i] = toMS(e.Message.Time); times[i] == 0 {
				times[i] = now
			}
		}
		if err := s.insertMessages(ctx, tx, es, uniq, times, now, seqs, news); err != nil {
			return err
		}
		var chats []adapters.JID
		last := map[adapters.JID]int64{}
		for i, e := range es {
			if dupOf[i] >= 0 {
				seqs[i] = seqs[dupOf[i]]
				continue
			}
			if !news[i] {
				continue
			}
			chat := e.Message.ChatJID
			if _, ok := last[chat]; !ok {
				chats = append(chats, chat)
			}
			last[chat] = max(last[chat], seqs[i])
		}
		if err := s.insertWorkRows(ctx, tx, workRuns(es, dupOf, news, seqs), now); err != nil {
			return err
		}
		touch := tx.StmtContext(ctx, s.touchChat)
		for _, chat := range chats {
			if err := touchChat(ctx, touch, chat, now, last[chat]); err != nil {
				return fmt.Errorf("insert message in %s: %w", chat, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range es {
		es[i].Message.Seq, es[i].Message.Time, es[i].Inserted = seqs[i], fromMS(times[i]), news[i]
	}
	return nil
}

// firstOccurrences lists the entries of es whose message is the first of
// its identity in es (uniq), and for each entry the index of the earlier
// one it repeats, or -1 (dupOf).
func firstOccurrences(es []Enqueue) (uniq, dupOf []int) {
	first := make(map[msgKey]int, len(es))
	uniq = make([]int, 0, len(es))
	dupOf = make([]int, len(es))
	for i, e := range es {
		k := msgKey{e.Message.ChatJID, e.Message.ID}
		if j, ok := first[k]; ok {
			dupOf[i] = j
			continue
		}
		first[k] = i
		dupOf[i] = -1
		uniq = append(uniq, i)
	}
	return uniq, dupOf
}

// insertMessages inserts the messages es[uniq] (no two alike), in order,
// and sets their seqs and news (see insertRows).
func (s *Store) insertMessages(ctx context.Context, tx *sql.Tx, es []Enqueue, uniq []int, times []int64, now int64, seqs []int64, news []bool) error {
	sel := tx.StmtContext(ctx, s.msgSeqByID)
	for _, n := range rowChunks(len(uniq)) {
		if n == 1 {
			i := uniq[0]
			var err error
			if seqs[i], news[i], err = insertRow(ctx, tx.StmtContext(ctx, s.insertMsg), sel, es[i].Message, times[i], now); err != nil {
				return fmt.Errorf("insert message %s in %s: %w", es[i].Message.ID, es[i].Message.ChatJID, err)
			}
		} else {
			st, err := s.msgRows.stmt(n)
			if err != nil {
				return err
			}
			if err := insertRows(ctx, tx.StmtContext(ctx, st), sel, es, uniq[:n], times, now, seqs, news); err != nil {
				return err
			}
		}
		uniq = uniq[n:]
	}
	return nil
}

// msgKey is a message's identity.
type msgKey struct {
	chat adapters.JID
	id   adapters.MessageID
}

// insertRows inserts the messages es[idx] (no two alike) with st, a
// msgRows statement of len(idx) rows, and sets their seqs and news; a
// message stored before keeps its seq (looked up with sel) and is not new.
func insertRows(ctx context.Context, st, sel *sql.Stmt, es []Enqueue, idx []int, times []int64, now int64, seqs []int64, news []bool) error {
	args := make([]any, 0, len(idx)*msgInsertCols)
	for _, i := range idx {
		m := es[i].Message
		att, err := encodeAttachments(m.Attachments)
		if err != nil {
			return fmt.Errorf("insert message %s in %s: %w", m.ID, m.ChatJID, err)
		}
		args = append(args, m.ChatJID, m.ID, m.Sender, m.SenderName, m.Text, m.Topic,
			m.ReplyTo, m.Verb, m.FromBot, times[i], att, now, m.OtherBot)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("insert messages: %w", err)
	}
	got := make(map[msgKey]int64, len(idx))
	for rows.Next() {
		var k msgKey
		var seq int64
		if err := rows.Scan(&seq, &k.chat, &k.id); err != nil {
			rows.Close()
			return fmt.Errorf("insert messages: %w", err)
		}
		got[k] = seq
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("insert messages: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("insert messages: %w", err)
	}
	for _, i := range idx {
		m := es[i].Message
		if seq, ok := got[msgKey{m.ChatJID, m.ID}]; ok {
			seqs[i], news[i] = seq, true
			continue
		}
		if err := sel.QueryRowContext(ctx, m.ChatJID, m.ID).Scan(&seqs[i]); err != nil {
			return fmt.Errorf("insert message %s in %s: look up duplicate: %w", m.ID, m.ChatJID, err)
		}
	}
	return nil
}

// msgInsertCols is the number of values a message row takes in insertMsg
// and in msgRows' statements.
const msgInsertCols = 13

// maxRowsLog bounds a multiInsert statement to 1<<maxRowsLog rows.
const maxRowsLog = 7

// multiInsert is an INSERT of many rows, one statement for each power of
// two of rows from 2 to 1<<maxRowsLog, prepared on the writer at first use
// (a single row goes in with a plain statement, insertMsg, unless one is
// set: then from 1).
//
// Why many rows per statement: inside a transaction SQLite opens a
// statement journal for each INSERT into messages (the full-text index's
// trigger makes it a write to two tables) and calls the FTS5 table's
// xSavepoint, where FTS5 writes the terms it holds in memory to disk as a
// new index segment, which its automerge merges again later. With one
// INSERT a message that was a segment a message, the largest part of a
// group commit's cost; with one INSERT of many rows it is one segment for
// all of them, written at the next statement or at commit. Work rows go
// in so too (insertWorkRows): fewer statements, less CPU a message.
type multiInsert struct {
	head string // INSERT INTO t (columns) VALUES
	cols int    // values a row
	tail string // after the rows: ON CONFLICT, RETURNING
	one  bool   // a statement for one row too

	mu    sync.Mutex
	stmts [maxRowsLog + 1]*sql.Stmt // by log2 of the rows
}

// prepareUpTo prepares, on db (the writer, outside a transaction), the
// statements of every power of two of rows from 2 (or 1: r.one) up to n
// that are not prepared yet: those that rowChunks may ask for any m <= n
// rows.
//
// r.mu is not held while preparing: that waits for the writer connection,
// which a transaction calling stmt may hold.
func (r *multiInsert) prepareUpTo(ctx context.Context, db *sql.DB, n int) error {
	row := "(" + strings.TrimSuffix(strings.Repeat("?, ", r.cols), ", ") + ")"
	k0 := 1
	if r.one {
		k0 = 0
	}
	for k := k0; k <= maxRowsLog && 1<<k <= n; k++ {
		r.mu.Lock()
		have := r.stmts[k] != nil
		r.mu.Unlock()
		if have {
			continue
		}
		st, err := db.PrepareContext(ctx, r.head+" "+strings.TrimSuffix(strings.Repeat(row+", ", 1<<k), ", ")+" "+r.tail)
		if err != nil {
			return fmt.Errorf("prepare insert of %d rows: %w", 1<<k, err)
		}
		r.mu.Lock()
		if r.stmts[k] == nil {
			r.stmts[k], st = st, nil
		}
		r.mu.Unlock()
		if st != nil { // prepared meanwhile by another caller
			st.Close()
		}
	}
	return nil
}

// stmt returns the prepared statement for n rows, n a power of two from 2
// (or 1) to 1<<maxRowsLog (see prepareUpTo).
func (r *multiInsert) stmt(n int) (*sql.Stmt, error) {
	k := 0
	for 1<<k < n {
		k++
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.stmts[k]; st != nil && 1<<k == n {
		return st, nil
	}
	return nil, fmt.Errorf("insert of %d rows: not prepared", n)
}

// maxRun bounds the messages one work row stands for: no more than a
// gateway turn takes (its batch of 100), since NextBatch hands a row out
// whole, even when it alone is more than its max.
const maxRun = 100

// runKey is a chat and topic: runs of messages form within one.
type runKey struct {
	chat  adapters.JID
	topic string
}

// openRun is the run that the next message of a chat and topic may join:
// its rows in workRuns' list, its first entry in es and its length.
type openRun struct {
	at, first, n int
}

// workRuns is the work rows of the new messages of es (seqs and news as
// insertMessages set them), in the order of es, with runs coalesced: a new
// message of a chat and topic whose work is the same as that of the
// message before it in the same chat and topic in es (every column but
// seq) joins that message's rows (their seqEnd becomes its seq) instead of
// adding its own. A message of the chat and topic that is a duplicate,
// creates no work, or other work ends the run, so every message of the
// chat and topic with a seq in [seq, seqEnd] is one of the run's: its seqs
// were all allocated in this transaction, in the order of es. A run stays
// within maxRun messages, and within one chat and topic: a message with
// work addressed to another chat or topic gets rows of its own.
func workRuns(es []Enqueue, dupOf []int, news []bool, seqs []int64) []workRow {
	var rows []workRow
	open := map[runKey]openRun{}
	for i, e := range es {
		k := runKey{e.Message.ChatJID, e.Message.Topic}
		if dupOf[i] >= 0 || !news[i] {
			delete(open, k)
			continue
		}
		if r, ok := open[k]; ok && r.n < maxRun && sameWork(es[r.first].Work, e.Work) {
			for j := range e.Work {
				rows[r.at+j].seqEnd = seqs[i]
			}
			r.n++
			open[k] = r
			continue
		}
		delete(open, k)
		at := len(rows)
		for _, w := range e.Work {
			w.Seq = seqs[i]
			rows = append(rows, workRow{WorkItem: w})
		}
		if runnable(k, e.Work) {
			open[k] = openRun{at: at, first: i, n: 1}
		}
	}
	return rows
}

// runnable reports whether work, the work of a message of k, may start a
// run: it is some, and all of it is addressed to k.
func runnable(k runKey, work []WorkItem) bool {
	for _, w := range work {
		if w.ChatJID != k.chat || w.Topic != k.topic {
			return false
		}
	}
	return len(work) > 0
}

// sameWork reports whether a and b are the same work items but for Seq.
func sameWork(a, b []WorkItem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		x.Seq, y.Seq = 0, 0
		if x != y {
			return false
		}
	}
	return true
}

// insertWorkRows inserts ws, in order, with few statements of many rows
// (workRows, whose statements take seq_end; a row alone too).
func (s *Store) insertWorkRows(ctx context.Context, tx *sql.Tx, ws []workRow, now int64) error {
	for _, n := range rowChunks(len(ws)) {
		st, err := s.workRows.stmt(n)
		if err != nil {
			return err
		}
		args := make([]any, 0, n*workInsertCols)
		for _, w := range ws[:n] {
			args = append(args, w.Folder, w.ChatJID, w.Topic, w.Seq, w.Mode, w.Trigger, w.Prompt, w.Origin,
				w.TaskID, w.RunID, w.Isolated, now, w.Chain, w.seqEnd)
		}
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("insert work: %w", err)
		}
		ws = ws[n:]
	}
	return nil
}

// initInserts sets up the multi-row inserts of EnqueueMessages.
func (s *Store) initInserts() {
	s.workRows.head = `INSERT INTO work (` + workInsertColumns + `, seq_end) VALUES`
	s.workRows.cols = workInsertCols + 1
	s.workRows.one = true
	s.msgRows.head = insertMsgHead
	s.msgRows.cols = msgInsertCols
	s.msgRows.tail = `ON CONFLICT (chat_jid, msg_id) DO NOTHING RETURNING seq, chat_jid, msg_id`
}

// close closes the statements prepared so far.
func (r *multiInsert) close() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for k, st := range r.stmts {
		if st != nil {
			errs = append(errs, st.Close())
			r.stmts[k] = nil
		}
	}
	return errs
}

// rowChunks splits n rows into multiInsert statements: powers of two,
// largest first, so that a batch takes few statements of few shapes.
func rowChunks(n int) []int {
	var cs []int
	for n > 0 {
		c := 1 << maxRowsLog
		for c > n {
			c >>= 1
		}
		cs = append(cs, c)
		n -= c
	}
	return cs
}
