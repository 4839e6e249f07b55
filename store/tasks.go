package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"switchboard/groups"
	"switchboard/routing"
	"switchboard/scheduler"
)

// The Store implements scheduler.Store and scheduler.ClaimQueuer with the
// methods below; the contract of each is documented on those interfaces.
var (
	_ scheduler.Store       = (*Store)(nil)
	_ scheduler.ClaimQueuer = (*Store)(nil)
)

// TaskRun is one run of a task.
type TaskRun struct {
	ID       int64
	TaskID   int64
	Slot     time.Time
	Status   string // fired | succeeded | failed | stopped | skipped (RunSkipped)
	Started  time.Time
	Duration time.Duration
	TurnID   string
	Error    string
	CostUSD  float64 // what its turn reported costing
}

const taskColumns = `id, folder, chat_jid, prompt, spec, kind, timezone, context, missed, status, next_s, created_by`

func scanTask(sc scanner) (scheduler.Task, error) {
	var t scheduler.Task
	var kind, missed string
	var next int64
	err := sc.Scan(&t.ID, &t.Folder, &t.ChatJID, &t.Prompt, &t.Spec, &kind, &t.Timezone, &t.Context, &missed, &t.Status, &next, &t.CreatedBy)
	t.Kind, t.Missed = scheduler.Kind(kind), scheduler.Missed(missed)
	if next != 0 {
		t.Next = time.Unix(next, 0).UTC()
	}
	return t, err
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// AddTask stores t (its ID is ignored) and returns it with its new ID. The
// caller validates it and sets Next.
func (s *Store) AddTask(ctx context.Context, t scheduler.Task) (scheduler.Task, error) {
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO tasks (folder, chat_jid, prompt, spec, kind, timezone, context, missed, status, next_s, created_by, created_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, t.Folder, t.ChatJID, t.Prompt, t.Spec, string(t.Kind), t.Timezone, t.Context,
			string(t.Missed), t.Status, unixOrZero(t.Next), t.CreatedBy, s.nowMS())
		if err != nil {
			return fmt.Errorf("add task: %w", err)
		}
		t.ID, err = res.LastInsertId()
		return err
	})
	return t, err
}

// Task returns one task (ErrNotFound).
func (s *Store) Task(ctx context.Context, id int64) (scheduler.Task, error) {
	t, err := scanTask(s.r.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return t, fmt.Errorf("task %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return t, fmt.Errorf("read task %d: %w", id, err)
	}
	return t, nil
}

// Tasks lists tasks, oldest first; folder "" means all folders, otherwise the
// folder and its descendants when subtree is set.
func (s *Store) Tasks(ctx context.Context, folder groups.Folder, subtree bool) ([]scheduler.Task, error) {
	q := `SELECT ` + taskColumns + ` FROM tasks WHERE ? = '' OR folder = ? OR (? AND folder LIKE ? ESCAPE '\') ORDER BY id`
	rows, err := s.r.QueryContext(ctx, q, folder, folder, subtree, escapeLike(string(folder))+"/%")
	out, err := collect(rows, err, scanTask)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// SetTaskStatus changes a task's status, and its Next when next is non-nil.
// A cancelled or completed task cannot change status again, except that a
// completed task whose last run is still queued (a one-shot claimed while
// its group's agent was busy) can be cancelled. Cancelling or pausing a
// task also skips its runs still queued (skipQueuedRuns).
func (s *Store) SetTaskStatus(ctx context.Context, id int64, status scheduler.TaskStatus, next *time.Time) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		var cur scheduler.TaskStatus
		var queued bool
		if err := tx.QueryRowContext(ctx, `SELECT status, EXISTS (SELECT 1 FROM work w WHERE w.task_id = t.id AND w.task_id > 0 AND w.started_ms = 0)
			FROM tasks t WHERE id = ?`, id).Scan(&cur, &queued); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %d: %w", id, ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("task %d: %w", id, err)
		}
		cancelQueued := cur == scheduler.StatusCompleted && status == scheduler.StatusCancelled && queued
		if (cur == scheduler.StatusCancelled || cur == scheduler.StatusCompleted) && !cancelQueued {
			return fmt.Errorf("task %d is %s: %w", id, cur, ErrTaskFinished)
		}
		q, args := `UPDATE tasks SET status = ? WHERE id = ?`, []any{status, id}
		if next != nil {
			q, args = `UPDATE tasks SET status = ?, next_s = ? WHERE id = ?`, []any{status, unixOrZero(*next), id}
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("task %d: %w", id, err)
		}
		if status == scheduler.StatusCancelled || status == scheduler.StatusPaused {
			return skipQueuedRuns(ctx, tx, id, fmt.Sprintf("the task was %s before the run started", status))
		}
		return nil
	})
}

// skipQueuedRuns drops task id's queued turns that have not started (runs
// that fell due while its folder was busy) and records their runs as
// skipped with reason: a cancelled or paused task does not go on firing
// from the queue.
func skipQueuedRuns(ctx context.Context, tx *sql.Tx, id int64, reason string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = ?1, error = ?2 WHERE id IN
		(SELECT run_id FROM work WHERE task_id = ?3 AND task_id > 0 AND trigger = ?4 AND started_ms = 0 AND run_id > 0)`,
		RunSkipped, reason, id, TriggerTask); err != nil {
		return fmt.Errorf("task %d: skip queued runs: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM work WHERE task_id = ?1 AND task_id > 0 AND trigger = ?2 AND started_ms = 0`, id, TriggerTask); err != nil {
		return fmt.Errorf("task %d: skip queued runs: %w", id, err)
	}
	return nil
}

// DueTasks implements scheduler.Store. It reads on the reader pool, like
// NextDue: they see every committed claim, and holding the one writer
// connection while rows are scanned would stall message inserts.
func (s *Store) DueTasks(ctx context.Context, now time.Time, limit int) ([]scheduler.Task, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+taskColumns+` FROM tasks WHERE status = 'active' AND next_s > 0 AND next_s <= ?
		ORDER BY next_s, id LIMIT ?`, now.Unix(), limit)
	out, err := collect(rows, err, scanTask)
	if err != nil {
		return nil, fmt.Errorf("due tasks: %w", err)
	}
	return out, nil
}

// NextDue implements scheduler.Store.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT min(next_s) FROM tasks WHERE status = 'active' AND next_s > 0`).Scan(&next); err != nil {
		return time.Time{}, false, fmt.Errorf("next due: %w", err)
	}
	if !next.Valid {
		return time.Time{}, false, nil
	}
	return time.Unix(next.Int64, 0).UTC(), true, nil
}

// advanceSQL applies step 4 of ClaimRuns when the task is active at From
// (?4): Next becomes ?1, and a task with no slot left (?1 = 0) completes.
// Leaving status unchanged otherwise does not fire the revision trigger.
const advanceSQL = `UPDATE tasks SET next_s = ?1, status = CASE WHEN ?1 = 0 THEN 'completed' ELSE status END,
	skipped = skipped + ?2 WHERE id = ?3 AND status = 'active' AND next_s = ?4`

// advance applies a.
func advance(ctx context.Context, tx *sql.Tx, a scheduler.Advance, skipped int) (bool, error) {
	res, err := tx.ExecContext(ctx, advanceSQL, advanceArgs(a, skipped)...)
	if err != nil {
		return false, fmt.Errorf("advance task %d: %w", a.TaskID, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func advanceArgs(a scheduler.Advance, skipped int) []any {
	next := int64(0)
	if a.HasNext {
		next = unixOrZero(a.Next)
	}
	return []any{next, skipped, a.TaskID, a.From.Unix()}
}

// ClaimRuns implements scheduler.Store: one write transaction for the
// whole batch, its statements prepared once. Each claim does the
// compare-and-set first, so a refused claim changes nothing and a duplicate
// slot still advances.
func (s *Store) ClaimRuns(ctx context.Context, claims []scheduler.Claim) ([]int64, error) {
	runIDs, _, err := s.claimRuns(ctx, claims, false)
	return runIDs, err
}

// ClaimAndQueue implements scheduler.ClaimQueuer: ClaimRuns that, in the
// same transaction, queues the task turn of each slot it claims (the work
// item QueueTaskTurn queues) or, when the task's group is gone, records the
// run failed.
func (s *Store) ClaimAndQueue(ctx context.Context, claims []scheduler.Claim) ([]int64, []error, error) {
	return s.claimRuns(ctx, claims, true)
}

// claimRuns is ClaimRuns, and ClaimAndQueue when queue is set.
//
// The statements run under a context without ctx's cancellation: the
// driver runs each statement given a cancellable context on a goroutine of
// its own, a handoff that costs more than the statement. The transaction is
// still bound to ctx, so cancelling ctx still rolls the whole batch back.
func (s *Store) claimRuns(ctx context.Context, claims []scheduler.Claim, queue bool) ([]int64, []error, error) {
	runIDs, errs := make([]int64, len(claims)), make([]error, len(claims))
	if len(claims) == 0 {
		return runIDs, errs, nil
	}
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		ctx := context.WithoutCancel(ctx)
		st, err := prepareClaims(ctx, tx, queue)
		if err != nil {
			return fmt.Errorf("claim runs: %w", err)
		}
		defer st.close()
		now := s.nowMS()
		for i, c := range claims {
			if runIDs[i], err = st.claim(ctx, c, now); err != nil {
				return fmt.Errorf("claim run of task %d: %w", c.TaskID, err)
			}
			if !queue || runIDs[i] == 0 {
				continue
			}
			if errs[i], err = st.queue(ctx, tx, c.TaskID, runIDs[i], now, c.Missed); err != nil {
				return fmt.Errorf("queue run %d of task %d: %w", runIDs[i], c.TaskID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return runIDs, errs, nil
}

// claimStmts are the statements of one claimRuns transaction.
type claimStmts struct {
	adv, ins, work *sql.Stmt // work is nil unless queueing
}

// prepareClaims prepares the statements of a claimRuns transaction, the
// queueing one only when queue is set.
func prepareClaims(ctx context.Context, tx *sql.Tx, queue bool) (*claimStmts, error) {
	st := &claimStmts{}
	var err error
	if st.adv, err = tx.PrepareContext(ctx, advanceSQL); err == nil {
		st.ins, err = tx.PrepareContext(ctx, insertRunSQL)
	}
	if err == nil && queue {
		st.work, err = tx.PrepareContext(ctx, queueTaskSQL)
	}
	if err != nil {
		st.close()
		return nil, err
	}
	return st, nil
}

func (st *claimStmts) close() {
	for _, s := range []*sql.Stmt{st.adv, st.ins, st.work} {
		if s != nil {
			s.Close()
		}
	}
}

// claim applies one claim and returns its run id (0: not claimed).
func (st *claimStmts) claim(ctx context.Context, c scheduler.Claim, nowMS int64) (int64, error) {
	res, err := st.adv.ExecContext(ctx, advanceArgs(c.Advance, 0)...)
	if err != nil {
		return 0, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return 0, nil
	}
	if res, err = st.ins.ExecContext(ctx, c.TaskID, c.Slot.Unix(), nowMS); err != nil {
		return 0, err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return 0, nil
	}
	return res.LastInsertId()
}

// queue queues the turn of run runID of task taskID or, when it cannot run,
// marks the run failed (skipped when the task's previous run still waits)
// and returns why (reason); err is a storage failure.
func (st *claimStmts) queue(ctx context.Context, tx *sql.Tx, taskID, runID, nowMS int64, missed bool) (reason, err error) {
	reason, err = queueTask(ctx, tx, st.work, taskID, runID, nowMS, missed)
	if reason == nil || err != nil {
		return reason, err
	}
	return reason, settleUnqueued(ctx, tx, runID, reason)
}

// settleUnqueued records run runID, whose turn was not queued, with reason:
// skipped behind a waiting run (errRunWaiting), else failed.
func settleUnqueued(ctx context.Context, tx *sql.Tx, runID int64, reason error) error {
	status := "failed"
	if errors.Is(reason, errRunWaiting) {
		status = RunSkipped
	}
	_, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = ?, error = ? WHERE id = ?`, status, reason.Error(), runID)
	return err
}

// errRunWaiting is why a run is not queued behind the task's previous run
// that has not started yet.
var errRunWaiting = fmt.Errorf("%w (its group's agent is still busy), so this one is skipped: a task waits with at most one run",
	scheduler.ErrRunWaiting)

// ClaimRun is ClaimRuns for one slot.
func (s *Store) ClaimRun(ctx context.Context, a scheduler.Advance, slot time.Time) (runID int64, claimed bool, err error) {
	runIDs, err := s.ClaimRuns(ctx, []scheduler.Claim{{Advance: a, Slot: slot}})
	if err != nil {
		return 0, false, err
	}
	return runIDs[0], runIDs[0] != 0, nil
}

const insertRunSQL = `INSERT INTO task_runs (task_id, slot_s, status, started_ms) VALUES (?, ?, 'fired', ?)
	ON CONFLICT (task_id, slot_s) DO NOTHING`

// queueTaskSQL queues the turn of run ?2 of task ?1, created at ?3: the
// task's prompt into its folder as a trigger work item of its chat, to run
// in a fresh session when the task is isolated; ?7 marks a missed run its
// policy runs (a catch-up, which queues them one by one). It queues nothing
// when the task's group is gone (or the task lacks a folder or chat), or,
// for an on-time run, when an on-time run of the task queued earlier (before
// ?3, not by this same claim) has not started: a task that falls due faster
// than its turns finish, or behind a long turn, does not pile up runs that
// then go back to back ahead of the group's chat messages.
const queueTaskSQL = `INSERT INTO work (folder, chat_jid, mode, trigger, prompt, task_id, run_id, isolated, created_ms, missed)
	SELECT t.folder, t.chat_jid, ?4, ?5, t.prompt, t.id, ?2, t.context = ?6, ?3, ?7 FROM tasks t
	WHERE t.id = ?1 AND t.folder <> '' AND t.chat_jid <> ''
		AND EXISTS (SELECT 1 FROM groups g WHERE g.folder = t.folder)
		AND (?7 OR NOT EXISTS (SELECT 1 FROM work w WHERE w.task_id = ?1 AND w.task_id > 0 AND w.started_ms = 0 AND NOT w.missed AND w.created_ms < ?3))`

// queueTask runs queueTaskSQL (on st when it is prepared; missed is its
// ?7) and, when it queued nothing, returns why as reason; err is a storage
// failure.
func queueTask(ctx context.Context, tx *sql.Tx, st *sql.Stmt, taskID, runID, nowMS int64, missed bool) (reason, err error) {
	args := []any{taskID, runID, nowMS, string(routing.Trigger), TriggerTask, scheduler.ContextIsolated, missed}
	var res sql.Result
	if st != nil {
		res, err = st.ExecContext(ctx, args...)
	} else {
		res, err = tx.ExecContext(ctx, queueTaskSQL, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("insert work: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, nil
	}
	var folder, chat string
	var groupExists, waiting bool
	err = tx.QueryRowContext(ctx, `SELECT folder, chat_jid, EXISTS (SELECT 1 FROM groups g WHERE g.folder = t.folder),
		EXISTS (SELECT 1 FROM work w WHERE w.task_id = t.id AND w.task_id > 0 AND w.started_ms = 0 AND NOT w.missed AND w.created_ms < ?)
		FROM tasks t WHERE id = ?`, nowMS, taskID).Scan(&folder, &chat, &groupExists, &waiting)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("task %d: %w", taskID, ErrNotFound), nil
	case err != nil:
		return nil, err
	case folder == "" || chat == "":
		return fmt.Errorf("task %d has no folder or chat", taskID), nil
	case !groupExists:
		return fmt.Errorf("group %s no longer exists", folder), nil
	case waiting && !missed:
		return errRunWaiting, nil
	}
	return fmt.Errorf("task %d: its turn was not queued", taskID), nil
}

// QueueTaskTurn queues the turn of run runID of task taskID, as
// ClaimAndQueue does for the runs it claims, in a transaction of its own
// (as a missed run: queued even behind the task's waiting runs, since a
// Firer is not told which runs are missed ones). It fails, queueing
// nothing, when the task's group no longer exists.
func (s *Store) QueueTaskTurn(ctx context.Context, taskID, runID int64) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		reason, err := queueTask(ctx, tx, nil, taskID, runID, s.nowMS(), true)
		if err != nil {
			return fmt.Errorf("queue run %d of task %d: %w", runID, taskID, err)
		}
		return reason
	})
}

// SkipRuns implements scheduler.Store.
func (s *Store) SkipRuns(ctx context.Context, a scheduler.Advance, skipped int) (bool, error) {
	var ok bool
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		var err error
		ok, err = advance(ctx, tx, a, skipped)
		return err
	})
	return ok, err
}

// FailRun implements scheduler.Store.
func (s *Store) FailRun(ctx context.Context, runID int64, reason string) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM task_runs WHERE id = ?`, runID).Scan(&n); err != nil {
			return fmt.Errorf("fail run %d: %w", runID, err)
		}
		if n == 0 {
			return fmt.Errorf("fail run %d: %w", runID, ErrNotFound)
		}
		_, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = 'failed', error = ? WHERE id = ? AND status = 'fired'`, reason, runID)
		return err
	})
}

// RecoverRuns fails, at start-up, runs left "fired" with no queued turn: a
// run lost between its claim and the queueing of its turn (only possible on
// the plain Fire path; ClaimAndQueue does both in one transaction). It will
// not run, since each slot fires at most once, and its history says why. A
// run whose turn finished was settled in that turn's transaction
// (FinishBatch), and one whose turn is still queued is left to that turn.
func (s *Store) RecoverRuns(ctx context.Context) (int64, error) {
	var n int64
	err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE task_runs SET status = 'failed',
			error = 'interrupted: the gateway stopped after claiming this run and before queueing its turn'
			WHERE status = 'fired' AND id NOT IN (SELECT run_id FROM work WHERE run_id > 0)`)
		if err != nil {
			return fmt.Errorf("recover interrupted runs: %w", err)
		}
		n, _ = res.RowsAffected()
		return nil
	})
	return n, err
}

// TaskRuns lists a task's runs, newest first.
func (s *Store) TaskRuns(ctx context.Context, taskID int64, limit int) ([]TaskRun, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT r.id, r.task_id, r.slot_s, r.status, r.started_ms, r.duration_ms, r.turn_id, r.error,
		COALESCE((SELECT cost_micros FROM turns t WHERE t.id = r.turn_id AND r.turn_id <> ''), 0)
		FROM task_runs r WHERE r.task_id = ? ORDER BY r.slot_s DESC, r.id DESC LIMIT ?`, taskID, clampLimit(limit))
	out, err := collect(rows, err, func(sc scanner) (TaskRun, error) {
		var r TaskRun
		var slot int64
		err := sc.Scan(&r.ID, &r.TaskID, &slot, &r.Status, msTime(&r.Started), msDuration(&r.Duration), &r.TurnID, &r.Error, usdMicros(&r.CostUSD))
		r.Slot = time.Unix(slot, 0).UTC()
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

func escapeLike(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '_' || s[i] == '\\' {
			out = append(out, '\\')
		}
		out = append(out, s[i])
	}
	return string(out)
}
