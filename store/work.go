package store

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// Trigger is why a turn runs (SWITCHBOARD_TRIGGER): its first work item's.
type Trigger string

// Triggers of work items and turns.
const (
	TriggerMessage  Trigger = "message"  // a routed chat message
	TriggerInject   Trigger = "inject"   // a message injected by the CLI or an agent
	TriggerTask     Trigger = "task"     // a scheduled task's prompt
	TriggerDelegate Trigger = "delegate" // a prompt from an ancestor group
	TriggerEscalate Trigger = "escalate" // a prompt from a descendant group
)

// WorkItem is one thing a folder has to do: a routed or injected message
// (Seq > 0) or a prompt (task, delegate, escalate).
type WorkItem struct {
	ID       int64 // its work row: the items of a run of messages share one (workItemsOf)
	Folder   groups.Folder
	ChatJID  adapters.JID
	Topic    string
	Seq      int64  // the message; 0 for prompts
	Mode     string // "trigger" | "observe"
	Trigger  Trigger
	Prompt   string
	Origin   groups.Folder
	TaskID   int64
	RunID    int64
	Isolated bool
	Attempts int // failed attempts (the agent failed or timed out)
	Crashes  int // attempts a gateway crash interrupted
	// Chain is how many agent hops (delegate_group, escalate_group, an
	// agent's inject_message) led to this item: 0 for chat messages, tasks
	// and the operator's injects.
	Chain   int
	Created time.Time
	// Steered: the message was written into a turn while it ran
	// (SteerMessage stored the row started under that turn), and no turn
	// was started on it since (MarkStarted). Whether that turn took it is
	// what its outcome says (the gateway's awaitTurn).
	Steered bool
}

// Batch is the next turn of a folder: trigger items of one chat and topic,
// the messages they carry, observed context, and delivery-failure notices.
type Batch struct {
	Folder      groups.Folder
	ChatJID     adapters.JID
	Topic       string
	Items       []WorkItem // trigger items, oldest first (Items[0] decides the turn's trigger)
	Observed    []Message
	Messages    []Message
	Notices     []Notice
	Reactions   []ReactionNote // reactions to the bot's messages since the folder's last turn
	observedIDs []int64
	// shownBy, when set (Unix ms), leaves out the observed context,
	// notices and reactions stored after it: a started turn's prompt
	// (StartedBatch) did not show them, so its FinishBatch keeps them.
	shownBy int64
}

// Notice is a delivery failure reported in the folder's next prompt.
type Notice struct {
	ID      int64
	Folder  groups.Folder
	ChatJID adapters.JID
	Text    string
	Error   string
	Created time.Time
}

// maxObserved bounds the observed context carried into one prompt; older
// observed rows of the same chat and topic are dropped when a turn consumes them.
const maxObserved = 50

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

// workRow is a work row as stored: an item and, when the row stands for a
// run of messages (EnqueueMessages, workRuns), the seq of the run's last
// message; 0 when it stands for Seq alone.
type workRow struct {
	WorkItem
	seqEnd int64
}

// workInsertCols is the values of a row of insertWorkSQL.
const workInsertCols = 13

// insertWorkSQL inserts a row that stands for one message or prompt
// (seq_end 0); runs go in with workRows' statements, which take seq_end.
const insertWorkSQL = `INSERT INTO work (` + workInsertColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// workInsertColumns are the columns of insertWorkSQL; workRows' statements
// add seq_end.
const workInsertColumns = `folder, chat_jid, topic, seq, mode, trigger, prompt, origin, task_id, run_id, isolated, created_ms, chain`

func checkWork(w WorkItem) error {
	var missing []string
	for _, f := range []struct {
		name, value string
	}{{"folder", string(w.Folder)}, {"chat", string(w.ChatJID)}, {"mode", w.Mode}, {"trigger", string(w.Trigger)}} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("insert work: %s empty; folder, chat, mode and trigger are required", strings.Join(missing, ", "))
	}
	return nil
}

func insertWork(ctx context.Context, tx *sql.Tx, w WorkItem, now int64) error {
	if err := checkWork(w); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, insertWorkSQL, w.Folder, w.ChatJID, w.Topic, w.Seq, w.Mode, w.Trigger, w.Prompt, w.Origin,
		w.TaskID, w.RunID, w.Isolated, now, w.Chain)
	if err != nil {
		return fmt.Errorf("insert work: %w", err)
	}
	return nil
}

// execWork is insertWork on the prepared statement of the message path.
func execWork(ctx context.Context, st *sql.Stmt, w WorkItem, now int64) error {
	_, err := st.ExecContext(ctx, w.Folder, w.ChatJID, w.Topic, w.Seq, w.Mode, w.Trigger, w.Prompt, w.Origin,
		w.TaskID, w.RunID, w.Isolated, now, w.Chain)
	if err != nil {
		return fmt.Errorf("insert work: %w", err)
	}
	return nil
}

// PendingFolders lists folders with trigger work waiting.
func (s *Store) PendingFolders(ctx context.Context) ([]groups.Folder, error) {
	return queryFolders(ctx, s.r, `SELECT DISTINCT folder FROM work WHERE mode = 'trigger'`)
}

// workItemsOf is the query of the work items of the work rows that rows
// (a subquery of work, whose columns it passes on) selects, oldest row
// first. A row that stands for a run of messages (seq_end > 0, see
// workRuns) reads as one item per message of its chat and topic with a
// seq in [seq, seq_end], in seq order (messages_chat_topic_seq), each with
// the row's ID and its other columns: items that share an ID are one row,
// which FinishBatch, MarkStarted and the like settle once, and which
// NextBatch hands out whole. A run none of whose messages is stored any
// more reads as a row standing for its first seq alone.
func workItemsOf(rows string) string {
	return `SELECT w.id, w.folder, w.chat_jid, w.topic, coalesce(m.seq, w.seq), w.mode, w.trigger, w.prompt, w.origin,
			w.task_id, w.run_id, w.isolated, w.attempts, w.created_ms, w.crashes, w.chain, w.steered
		FROM ` + rows + ` w LEFT JOIN messages m ON w.seq_end > 0 AND m.chat_jid = w.chat_jid AND m.topic = w.topic
			AND m.seq BETWEEN w.seq AND w.seq_end
		ORDER BY w.id, m.seq`
}

// workRowItems is the SQL expression of how many items the work row w
// reads as (workItemsOf): one, or a run's stored messages, at least one.
const workRowItems = `CASE WHEN w.seq_end = 0 THEN 1 ELSE max(1, (SELECT count(*) FROM messages m
	WHERE m.chat_jid = w.chat_jid AND m.topic = w.topic AND m.seq BETWEEN w.seq AND w.seq_end)) END`

func scanWork(sc scanner) (WorkItem, error) {
	var w WorkItem
	err := sc.Scan(&w.ID, &w.Folder, &w.ChatJID, &w.Topic, &w.Seq, &w.Mode, &w.Trigger, &w.Prompt, &w.Origin,
		&w.TaskID, &w.RunID, &w.Isolated, &w.Attempts, msTime(&w.Created), &w.Crashes, &w.Chain, &w.Steered)
	return w, err
}

// NextBatch returns folder's next turn: the oldest trigger item whose chat
// and topic are not waiting for a retry (see FinishBatch) decides the chat
// and topic; message items of that chat and topic (up to max) batch
// together, a prompt item runs alone. ok is false when nothing is ready.
// Items come in whole work rows (workItemsOf): the oldest row's always,
// then the next rows' while the items stay within max.
func (s *Store) NextBatch(ctx context.Context, folder groups.Folder, max int) (Batch, bool, error) {
	first, err := s.workOf(ctx, workItemsOf(`(SELECT * FROM work q WHERE folder = ? AND mode = 'trigger'
		AND NOT EXISTS (SELECT 1 FROM work d WHERE d.folder = q.folder AND d.chat_jid = q.chat_jid AND d.topic = q.topic
			AND d.not_before_ms > 0 AND d.not_before_ms > ?)
		ORDER BY id LIMIT 1)`), folder, s.nowMS())
	if err != nil {
		return Batch{}, false, fmt.Errorf("next batch of %s: %w", folder, err)
	}
	if len(first) == 0 {
		return Batch{}, false, nil
	}
	f := first[0]
	b := Batch{Folder: folder, ChatJID: f.ChatJID, Topic: f.Topic, Items: first}
	if left := max - len(first); f.Seq > 0 && left > 0 {
		// The next rows while their items (workRowItems) fit in what is
		// left; each row is at least one item, so left rows are enough to
		// look at. Only those are expanded: a backlog of runs is not read
		// a hundred messages a row to take none.
		items, err := s.workOf(ctx, workItemsOf(`(SELECT * FROM (SELECT *, sum(`+workRowItems+`) OVER (ORDER BY id) AS upto
			FROM (SELECT * FROM work WHERE folder = ? AND chat_jid = ? AND topic = ? AND mode = 'trigger' AND seq > 0 AND id > ?
				ORDER BY id LIMIT ?) w) WHERE upto <= ?)`), folder, f.ChatJID, f.Topic, f.ID, left, left)
		if err != nil {
			return b, false, fmt.Errorf("next batch of %s: %w", folder, err)
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
	return collect(rows, err, scanWork)
}

// PruneObserved drops the observed-context work rows of each folder, chat
// and topic whose items are all older than its newest maxObserved (counted
// in messages: a row may stand for a run, workRowItems): a prompt never
// shows more, and a chat whose route only observes would otherwise grow
// the queue forever. The messages themselves stay stored and searchable.
func (s *Store) PruneObserved(ctx context.Context) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM work WHERE id IN (
			SELECT id FROM (SELECT id, sum(`+workRowItems+`) OVER (PARTITION BY folder, chat_jid, topic ORDER BY id DESC
					ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS newer
				FROM work w WHERE mode = 'observe') WHERE newer >= ?)`, maxObserved)
		if err != nil {
			return fmt.Errorf("prune observed context: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}

// loadBatch fills in messages, observed context and notices.
func (s *Store) loadBatch(ctx context.Context, b *Batch) error {
	var seqs []any
	for _, it := range b.Items {
		if it.Seq > 0 {
			seqs = append(seqs, it.Seq)
		}
	}
	var err error
	if b.Messages, err = s.messagesBySeq(ctx, seqs); err != nil {
		return err
	}
	shownBy := b.shownBy
	if shownBy == 0 {
		shownBy = math.MaxInt64
	}
	obs, err := s.workOf(ctx, workItemsOf(`(SELECT * FROM work WHERE folder = ? AND chat_jid = ? AND topic = ? AND mode = 'observe'
		AND created_ms <= ?)`), b.Folder, b.ChatJID, b.Topic, shownBy)
	if err != nil {
		return fmt.Errorf("read observed context: %w", err)
	}
	var obsSeqs []any
	for i, w := range obs {
		if i == 0 || w.ID != obs[i-1].ID {
			b.observedIDs = append(b.observedIDs, w.ID)
		}
		if i >= len(obs)-maxObserved {
			obsSeqs = append(obsSeqs, w.Seq)
		}
	}
	if b.Observed, err = s.messagesBySeq(ctx, obsSeqs); err != nil {
		return err
	}
	if b.Reactions, err = s.reactionNotes(ctx, b.Folder, shownBy); err != nil {
		return err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, folder, chat_jid, text, error, created_ms FROM notices WHERE folder = ? AND created_ms <= ?
		ORDER BY id LIMIT 20`, b.Folder, shownBy)
	b.Notices, err = collect(rows, err, func(sc scanner) (Notice, error) {
		var n Notice
		err := sc.Scan(&n.ID, &n.Folder, &n.ChatJID, &n.Text, &n.Error, msTime(&n.Created))
		return n, err
	})
	if err != nil {
		return fmt.Errorf("read notices: %w", err)
	}
	return nil
}

// messagesBySeq reads the messages with these seqs, in seq order (nil when
// seqs is empty).
func (s *Store) messagesBySeq(ctx context.Context, seqs []any) ([]Message, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	return s.queryMessages(ctx, `SELECT `+msgColumns+` FROM messages WHERE seq IN (?`+strings.Repeat(",?", len(seqs)-1)+`) ORDER BY seq`, seqs...)
}

// FinishBatch records a turn and, in the same transaction, queues its
// replies and settles the batch:
//   - a non-zero retryAt: the attempt is counted and the batch stays;
//     its chat and topic are not picked again before retryAt (NextBatch
//     runs the folder's other chats meanwhile);
//   - a succeeded turn consumes the batch's work rows, the observed context
//     and the notices its prompt showed, and saves t.SessionID as the
//     session of the folder in the chat and topic (unless the batch is an
//     isolated task, the id is empty, or t.SessionReset);
//   - a stopped turn (TurnStopped) settles the batch as a succeeded one:
//     what its prompt showed is in its session, which the next turn resumes;
//   - a failed turn that is not retried (given up) consumes only the work
//     rows: the observed context and notices wait for the next turn that
//     gets through;
//   - in every case the turn's MCP token (if any) is revoked.
func (s *Store) FinishBatch(ctx context.Context, b Batch, t Turn, out []OutboxItem, retryAt time.Time) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		now := s.nowMS()
		u := t.Usage
		cost, err := toMicros("cost_usd", u.CostUSD)
		if err != nil {
			return fmt.Errorf("record turn %s: %w", t.ID, err)
		}
		sessionCost, err := toMicros("session cost_usd", u.SessionCost)
		if err != nil {
			return fmt.Errorf("record turn %s: %w", t.ID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO turns (`+turnColumns+`, messages)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Folder, t.ChatJID, t.Topic, t.Trigger, t.TaskID, t.RunID, t.Attempt, toMS(t.Started), t.Duration.Milliseconds(),
			t.Status, t.Error, t.ExitCode, t.SessionID, cost, u.InputTokens, u.OutputTokens, u.CacheCreationTokens,
			u.CacheReadTokens, u.NumTurns, u.APIDuration.Milliseconds(), sessionCost, len(b.Messages)); err != nil {
			return fmt.Errorf("record turn: %w", err)
		}
		if err := addSpend(ctx, tx, t.Folder, toMS(t.Started), cost); err != nil {
			return fmt.Errorf("record turn %s: %w", t.ID, err)
		}
		if err := revokeTurnToken(ctx, tx, t.ID); err != nil {
			return err
		}
		ids := b.itemIDs()
		switch {
		case !retryAt.IsZero():
			if err := execIDs(ctx, tx, `UPDATE work SET attempts = attempts + 1, not_before_ms = ?, started_ms = 0, turn_id = '' WHERE id IN`, ids, toMS(retryAt)); err != nil {
				return err
			}
		case t.Status != TurnSucceeded && t.Status != TurnStopped:
			if err := execIDs(ctx, tx, `DELETE FROM work WHERE id IN`, ids); err != nil {
				return err
			}
		default:
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
			var rids []int64
			for _, r := range b.Reactions {
				rids = append(rids, r.ID)
			}
			if err := execIDs(ctx, tx, `DELETE FROM reaction_notes WHERE id IN`, rids); err != nil {
				return err
			}
			if t.SessionID != "" && !t.SessionReset && !(len(b.Items) > 0 && b.Items[0].Isolated) {
				if err := saveSession(ctx, tx, b.Folder, b.ChatJID, b.Topic, t.SessionID, now); err != nil {
					return err
				}
			}
		}
		if retryAt.IsZero() && t.RunID != 0 {
			if err := settleRun(ctx, tx, t); err != nil {
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

// settleRun writes a task turn's final outcome to its run, in the turn's own
// transaction: a crash can never record the turn without its run.
func settleRun(ctx context.Context, tx *sql.Tx, t Turn) error {
	status := t.Status
	if status != TurnSucceeded && status != TurnStopped {
		status = TurnFailed
	}
	// started becomes the turn's start: a run queued behind a busy agent
	// starts later than it fell due, and its start and duration are its turn's.
	res, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = ?1, turn_id = ?2, duration_ms = ?3, error = ?4,
		started_ms = CASE WHEN ?5 > 0 THEN ?5 ELSE started_ms END WHERE id = ?6`,
		status, t.ID, t.Duration.Milliseconds(), t.Error, toMS(t.Started), t.RunID)
	if err != nil {
		return fmt.Errorf("record run %d: %w", t.RunID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record run %d: %w", t.RunID, ErrNotFound)
	}
	return nil
}

// execIDs runs prefix + " (?, ?, ...)" over ids in chunks; lead are the
// arguments of the placeholders in prefix.
func execIDs(ctx context.Context, tx *sql.Tx, prefix string, ids []int64, lead ...any) error {
	_, err := execIDsN(ctx, tx, prefix, ids, lead...)
	return err
}

// execIDsN is execIDs, returning how many rows the statements changed.
func execIDsN(ctx context.Context, tx *sql.Tx, prefix string, ids []int64, lead ...any) (int64, error) {
	var changed int64
	for len(ids) > 0 {
		n := min(len(ids), 500)
		args := append(make([]any, 0, len(lead)+n), lead...)
		for i := range n {
			args = append(args, ids[i])
		}
		res, err := tx.ExecContext(ctx, prefix+` (?`+strings.Repeat(",?", n-1)+`)`, args...)
		if err != nil {
			return changed, fmt.Errorf("update work: %w", err)
		}
		k, err := res.RowsAffected()
		if err != nil {
			return changed, fmt.Errorf("update work: %w", err)
		}
		changed += k
		ids = ids[n:]
	}
	return changed, nil
}

// DeferChat holds folder's pending trigger work of chat and topic until
// until: NextBatch skips that chat and topic meanwhile (its messages stay
// stored and queued, none is dropped), and the folder's other chats go on.
func (s *Store) DeferChat(ctx context.Context, folder groups.Folder, chat adapters.JID, topic string, until time.Time) error {
	_, err := s.w.ExecContext(ctx, `UPDATE work SET not_before_ms = ? WHERE folder = ? AND chat_jid = ? AND topic = ? AND mode = 'trigger'`,
		toMS(until), folder, chat, topic)
	if err != nil {
		return fmt.Errorf("defer %s in %s: %w", chat, folder, err)
	}
	return nil
}

// ResumeChat lifts a hold that DeferChat set until exactly until: the
// chat and topic's rows held by it are ready again. A hold set since with
// another time (a retry wait, another pause) stays; it reports whether
// anything was lifted.
func (s *Store) ResumeChat(ctx context.Context, folder groups.Folder, chat adapters.JID, topic string, until time.Time) (bool, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE work SET not_before_ms = 0 WHERE folder = ? AND chat_jid = ? AND topic = ? AND mode = 'trigger'
		AND not_before_ms = ?`, folder, chat, topic, toMS(until))
	if err != nil {
		return false, fmt.Errorf("resume %s in %s: %w", chat, folder, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// MarkStarted records that turn started on the batch: a crash before
// FinishBatch then counts as an attempt at the next start (RecoverStarted),
// unless the next gateway awaits the turn's outcome (InterruptedTurns,
// StartedBatch). A steered row (SteerMessage) started so is one no more:
// the turn's prompt shows it.
//
// When any of the batch's rows is gone (dropped since NextBatch loaded
// it: its task cancelled or paused, its group removed), nothing is marked
// and it returns ErrBatchGone: the turn does not run.
func (s *Store) MarkStarted(ctx context.Context, b Batch, turn string) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		ids := slices.Compact(slices.Sorted(slices.Values(b.itemIDs())))
		marked, err := execIDsN(ctx, tx, `UPDATE work SET started_ms = ?, turn_id = ?, steered = 0 WHERE id IN`, ids, s.nowMS(), turn)
		if err != nil {
			return err
		}
		if marked < int64(len(ids)) {
			return ErrBatchGone
		}
		return nil
	})
}

// ResetStarted forgets that the batch's turn started: it was stopped by a
// shutdown, not by a fault, and runs again at the next start uncounted.
func (s *Store) ResetStarted(ctx context.Context, b Batch) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		return execIDs(ctx, tx, `UPDATE work SET started_ms = 0, turn_id = '' WHERE id IN`, b.itemIDs())
	})
}

// Interrupted is a turn that was running when the gateway stopped: its
// work rows are still marked started.
type Interrupted struct {
	TurnID  string // "" for rows started before the store kept turn ids
	Folder  groups.Folder
	Started time.Time
	// ChatJID and Topic are where the turn runs (of its first row): a
	// turn to await can be stopped from its chat before its batch is read.
	ChatJID adapters.JID
	Topic   string
}

// InterruptedTurns lists the turns whose work rows are still marked
// started, oldest first: at start, the turns an earlier gateway did not
// record.
func (s *Store) InterruptedTurns(ctx context.Context) ([]Interrupted, error) {
	// chat_jid and topic are those of the row with min(started_ms) (SQLite's
	// bare columns beside one min()).
	rows, err := s.r.QueryContext(ctx, `SELECT turn_id, folder, min(started_ms), chat_jid, topic FROM work WHERE started_ms > 0
		GROUP BY turn_id, folder ORDER BY 3, 1`)
	out, err := collect(rows, err, func(sc scanner) (Interrupted, error) {
		var it Interrupted
		err := sc.Scan(&it.TurnID, &it.Folder, msTime(&it.Started), &it.ChatJID, &it.Topic)
		return it, err
	})
	if err != nil {
		return nil, fmt.Errorf("read interrupted turns: %w", err)
	}
	return out, nil
}

// RecoverStarted counts a crash for every batch whose turn was running when
// the gateway died, except the turns in keep (the gateway awaits their
// outcome: StartedBatch, RecoverTurn), and returns how many work rows that
// touched.
func (s *Store) RecoverStarted(ctx context.Context, keep ...string) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		args := []any{}
		q := `UPDATE work SET crashes = crashes + 1, started_ms = 0, turn_id = '' WHERE started_ms > 0`
		if len(keep) > 0 {
			q += ` AND turn_id NOT IN (?` + strings.Repeat(",?", len(keep)-1) + `)`
			for _, k := range keep {
				args = append(args, k)
			}
		}
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("recover interrupted turns: %w", err)
	}
	return n, nil
}

// RecoverTurn counts a crash for the work rows of turn still marked
// started (its outcome never came) and revokes its MCP token; it returns
// how many rows that touched.
func (s *Store) RecoverTurn(ctx context.Context, turn string) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE work SET crashes = crashes + 1, started_ms = 0, turn_id = '' WHERE started_ms > 0 AND turn_id = ?`, turn)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		return revokeTurnToken(ctx, tx, turn)
	})
	if err != nil {
		return 0, fmt.Errorf("recover interrupted turn %s: %w", turn, err)
	}
	return n, nil
}

// GiveUpTurn drops the work rows of turn still marked started, fails the
// task run of a task turn (left "fired", task runs showed it running until
// the next start failed it as lost before its turn was queued), queues
// notice for the chat when there were any rows (nil: none) and revokes the
// turn's MCP token, in one transaction, and returns how many rows it
// dropped. It is for a turn whose outcome the store refused for good
// (FinishBatch failed Permanent): left started, its batch would be picked
// again and its agent run again for the same messages. The messages stay
// stored; no turn is recorded.
func (s *Store) GiveUpTurn(ctx context.Context, turn string, notice *OutboxItem) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = 'failed', turn_id = ?1,
			error = 'the gateway could not record this run''s turn (internal error); it was given up'
			WHERE status = 'fired' AND id IN (SELECT run_id FROM work WHERE started_ms > 0 AND turn_id = ?1 AND run_id > 0)`, turn); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM work WHERE started_ms > 0 AND turn_id = ?`, turn)
		if err != nil {
			return err
		}
		n, _ = res.RowsAffected()
		if n > 0 && notice != nil {
			if err := insertOutbox(ctx, tx, notice, s.nowMS()); err != nil {
				return err
			}
		}
		return revokeTurnToken(ctx, tx, turn)
	})
	if err != nil {
		return 0, fmt.Errorf("give up turn %s: %w", turn, err)
	}
	return n, nil
}

// StartedBatch is the batch of the work rows that turn started on and
// that are still marked started, with what NextBatch would load with them;
// ok is false when there are none.
func (s *Store) StartedBatch(ctx context.Context, turn string) (Batch, bool, error) {
	items, err := s.workOf(ctx, workItemsOf(`(SELECT * FROM work WHERE turn_id = ? AND started_ms > 0 AND mode = 'trigger')`), turn)
	if err != nil {
		return Batch{}, false, fmt.Errorf("batch of turn %s: %w", turn, err)
	}
	if len(items) == 0 {
		return Batch{}, false, nil
	}
	var started int64
	if err := s.r.QueryRowContext(ctx, `SELECT min(started_ms) FROM work WHERE turn_id = ? AND started_ms > 0`, turn).Scan(&started); err != nil {
		return Batch{}, false, fmt.Errorf("batch of turn %s: %w", turn, err)
	}
	b := Batch{Folder: items[0].Folder, ChatJID: items[0].ChatJID, Topic: items[0].Topic, Items: items, shownBy: started}
	if err := s.loadBatch(ctx, &b); err != nil {
		return b, false, err
	}
	return b, true, nil
}

// itemIDs lists the work rows of b's items, each once: the items of a row
// that stands for a run of messages are adjacent and share its ID.
func (b Batch) itemIDs() []int64 {
	ids := make([]int64, 0, len(b.Items))
	for i, it := range b.Items {
		if i == 0 || it.ID != b.Items[i-1].ID {
			ids = append(ids, it.ID)
		}
	}
	return ids
}
