package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/groups"
	"switchboard/scheduler"
	"switchboard/scheduler/schedulertest"
)

// The SQL store honours the scheduler's Store contract, claim-once included.
func TestTaskStoreConformance(t *testing.T) {
	schedulertest.TestStore(t, func(t *testing.T) schedulertest.Harness {
		s := newStore(t)
		ctx := t.Context()
		return schedulertest.Harness{
			Store: s,
			AddTask: func(task scheduler.Task) int64 {
				if _, err := s.EnsureGroup(ctx, task.Folder); err != nil {
					t.Fatal(err)
				}
				got, err := s.AddTask(ctx, task)
				if err != nil {
					t.Fatal(err)
				}
				return got.ID
			},
			Task: func(id int64) scheduler.Task {
				got, err := s.Task(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				return got
			},
			Runs: func(taskID int64) []schedulertest.Run {
				runs, err := s.TaskRuns(ctx, taskID, 1000)
				if err != nil {
					t.Fatal(err)
				}
				out := make([]schedulertest.Run, 0, len(runs))
				for i := len(runs) - 1; i >= 0; i-- { // oldest first
					r := runs[i]
					out = append(out, schedulertest.Run{ID: r.ID, Slot: r.Slot, Status: r.Status, Reason: r.Error})
				}
				return out
			},
			Queued: func() []schedulertest.Turn {
				rows, err := s.Read().QueryContext(ctx, `SELECT run_id, task_id, folder, chat_jid, prompt, isolated FROM work
					WHERE run_id > 0 ORDER BY id`)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				var out []schedulertest.Turn
				for rows.Next() {
					var q schedulertest.Turn
					if err := rows.Scan(&q.RunID, &q.TaskID, &q.Folder, &q.ChatJID, &q.Prompt, &q.Isolated); err != nil {
						t.Fatal(err)
					}
					out = append(out, q)
				}
				if err := rows.Err(); err != nil {
					t.Fatal(err)
				}
				return out
			},
			RemoveFolder: func(folder groups.Folder) {
				if _, err := s.RemoveGroup(ctx, folder); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

func TestTaskStatusLifecycle(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	next := time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)
	task, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "p", Spec: "@daily", Kind: scheduler.KindCron,
		Timezone: "UTC", Context: "group", Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: next})
	if err != nil {
		t.Fatal(err)
	}
	rev0, _ := s.Revision(ctx)
	if err := s.SetTaskStatus(ctx, task.ID, scheduler.StatusPaused, nil); err != nil {
		t.Fatal(err)
	}
	if rev, _ := s.Revision(ctx); rev == rev0 {
		t.Error("pausing a task did not bump the revision; a running gateway would not notice")
	}
	got, _ := s.Task(ctx, task.ID)
	if got.Status != scheduler.StatusPaused || !got.Next.Equal(next) {
		t.Errorf("paused task = %+v, want paused with its Next kept", got)
	}
	if err := s.SetTaskStatus(ctx, task.ID, scheduler.StatusCancelled, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetTaskStatus(ctx, task.ID, scheduler.StatusActive, nil); err == nil {
		t.Error("a cancelled task was resumed")
	}
	// Advancing next_s (every fire) must not look like a configuration change.
	t2, _ := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "p", Spec: "@hourly", Kind: scheduler.KindCron,
		Timezone: "UTC", Context: "group", Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: next})
	rev1, _ := s.Revision(ctx)
	if _, claimed, err := s.ClaimRun(ctx, scheduler.Advance{TaskID: t2.ID, From: next, Next: next.Add(time.Hour), HasNext: true}, next); err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if rev, _ := s.Revision(ctx); rev != rev1 {
		t.Error("a fire bumped the revision")
	}
	list, err := s.Tasks(ctx, "main", true)
	if err != nil || len(list) != 2 {
		t.Fatalf("tasks: %v %v", list, err)
	}
}

// The turn ClaimAndQueue queues is the task turn the gateway runs: a
// trigger item of the task's folder and chat, with its prompt, task, run
// and context; QueueTaskTurn queues the same, and refuses a folder that is
// gone. A run whose turn is queued is not "interrupted".
func TestQueuedTaskTurn(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	next := time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)
	add := func(context string) scheduler.Task {
		task, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "summarise " + context, Spec: "@daily",
			Kind: scheduler.KindCron, Timezone: "UTC", Context: context, Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: next})
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	isolated, group := add(scheduler.ContextIsolated), add(scheduler.ContextGroup)
	claim := func(id int64) int64 {
		runIDs, errs, err := s.ClaimAndQueue(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: id, From: next, Next: next.Add(24 * time.Hour), HasNext: true}, Slot: next}})
		if err != nil || runIDs[0] == 0 || errs[0] != nil {
			t.Fatalf("ClaimAndQueue = %v %v %v", runIDs, errs, err)
		}
		return runIDs[0]
	}
	run1 := claim(isolated.ID)
	run2, err := s.ClaimRuns(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: group.ID, From: next, Next: next.Add(24 * time.Hour), HasNext: true}, Slot: next}})
	if err != nil || run2[0] == 0 {
		t.Fatalf("ClaimRuns = %v %v", run2, err)
	}
	if err := s.QueueTaskTurn(ctx, group.ID, run2[0]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.RecoverRuns(ctx); err != nil || n != 0 {
		t.Errorf("RecoverRuns = %d %v; runs with a queued turn are not interrupted", n, err)
	}
	for _, want := range []WorkItem{
		{Folder: "main", ChatJID: "web:lobby", Mode: "trigger", Trigger: TriggerTask, Prompt: "summarise isolated", TaskID: isolated.ID, RunID: run1, Isolated: true},
		{Folder: "main", ChatJID: "web:lobby", Mode: "trigger", Trigger: TriggerTask, Prompt: "summarise group", TaskID: group.ID, RunID: run2[0]},
	} {
		b, ok, err := s.NextBatch(ctx, "main", 10)
		if err != nil || !ok || len(b.Items) != 1 {
			t.Fatalf("NextBatch = %+v %v %v, want one task item", b, ok, err)
		}
		got := b.Items[0]
		got.ID, got.Created = 0, time.Time{}
		if got != want {
			t.Errorf("queued item\n got %+v\nwant %+v", got, want)
		}
		if err := s.FinishBatch(ctx, b, Turn{ID: "t" + got.Prompt, Folder: "main", Status: "succeeded"}, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RemoveGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	err = s.QueueTaskTurn(ctx, group.ID, run2[0])
	if err == nil || err.Error() != "group main no longer exists" {
		t.Errorf("QueueTaskTurn for a removed group = %v, want \"group main no longer exists\"", err)
	}
	if folders, _ := s.PendingFolders(ctx); len(folders) != 0 {
		t.Errorf("work queued for a removed group: %v", folders)
	}
}

// A task turn's outcome is written to its run in the turn's own transaction
// (FinishBatch). RecoverRuns, at start-up, fails a run with no turn queued
// as interrupted and leaves a run whose turn is still queued to that turn.
func TestRecoverRuns(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	next := time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)
	claim := func() (taskID, runID int64) {
		task, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "p", Spec: "@daily", Kind: scheduler.KindCron,
			Timezone: "UTC", Context: scheduler.ContextGroup, Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: next})
		if err != nil {
			t.Fatal(err)
		}
		runIDs, err := s.ClaimRuns(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: task.ID, From: next, Next: next.Add(24 * time.Hour), HasNext: true}, Slot: next}})
		if err != nil || runIDs[0] == 0 {
			t.Fatalf("ClaimRuns = %v %v", runIDs, err)
		}
		return task.ID, runIDs[0]
	}
	finishedTask, finishedRun := claim()
	if err := s.QueueTaskTurn(ctx, finishedTask, finishedRun); err != nil {
		t.Fatal(err)
	}
	b, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatalf("NextBatch = %v %v", ok, err)
	}
	turn := Turn{ID: "turn-1", Folder: "main", ChatJID: "web:lobby", Trigger: TriggerTask, TaskID: finishedTask, RunID: finishedRun,
		Attempt: 1, Duration: 1500 * time.Millisecond, Status: "failed", Error: "agent exited with status 2"}
	if err := s.FinishBatch(ctx, b, turn, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	run := func(taskID int64) TaskRun {
		runs, err := s.TaskRuns(ctx, taskID, 10)
		if err != nil || len(runs) != 1 {
			t.Fatalf("TaskRuns(%d) = %+v %v", taskID, runs, err)
		}
		return runs[0]
	}
	if got := run(finishedTask); got.Status != "failed" || got.TurnID != "turn-1" || got.Duration != 1500*time.Millisecond || got.Error != turn.Error {
		t.Errorf("finished run = %+v, want the turn's outcome (failed, turn-1, 1500 ms, %q) written with the turn", got, turn.Error)
	}
	lostTask, _ := claim()
	queuedTask, queuedRun := claim()
	if err := s.QueueTaskTurn(ctx, queuedTask, queuedRun); err != nil {
		t.Fatal(err)
	}

	if n, err := s.RecoverRuns(ctx); err != nil || n != 1 {
		t.Fatalf("RecoverRuns = %d %v, want the lost run settled", n, err)
	}
	if got := run(finishedTask); got.TurnID != "turn-1" {
		t.Errorf("RecoverRuns rewrote a settled run: %+v", got)
	}
	if got := run(lostTask); got.Status != "failed" || !strings.HasPrefix(got.Error, "interrupted") {
		t.Errorf("lost run = %+v, want failed as interrupted", got)
	}
	if got := run(queuedTask); got.Status != scheduler.RunFired {
		t.Errorf("queued run = %+v, want still fired (its turn will run)", got)
	}
	if n, err := s.RecoverRuns(ctx); err != nil || n != 0 {
		t.Errorf("second RecoverRuns = %d %v, want nothing left to settle", n, err)
	}
}

// A run's start is when its turn started, not when its slot fell due: a run
// queued behind a busy agent shows when it really ran (task runs,
// inspect_tasks), its start and duration both its turn's.
func TestRunStartIsItsTurnsStart(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Hour).Truncate(time.Second).UTC()
	task, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "p", Spec: "@daily", Kind: scheduler.KindCron,
		Timezone: "UTC", Context: scheduler.ContextGroup, Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: slot})
	if err != nil {
		t.Fatal(err)
	}
	runIDs, errs, err := s.ClaimAndQueue(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: task.ID, From: slot, Next: slot.Add(24 * time.Hour), HasNext: true}, Slot: slot}})
	if err != nil || errs[0] != nil || runIDs[0] == 0 {
		t.Fatalf("ClaimAndQueue = %v %v %v", runIDs, errs, err)
	}
	b, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatalf("NextBatch = %v %v", ok, err)
	}
	// The agent was busy for 25 minutes: the turn starts then, and runs 90 s.
	started := time.Now().Add(25 * time.Minute).Truncate(time.Millisecond)
	turn := Turn{ID: "turn-1", Folder: "main", ChatJID: "web:lobby", Trigger: TriggerTask, TaskID: task.ID, RunID: runIDs[0],
		Attempt: 1, Started: started, Duration: 90 * time.Second, Status: TurnSucceeded}
	if err := s.FinishBatch(ctx, b, turn, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	runs, err := s.TaskRuns(ctx, task.ID, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("TaskRuns = %+v %v", runs, err)
	}
	if r := runs[0]; !r.Started.Equal(started) || r.Duration != 90*time.Second || !r.Slot.Equal(slot) {
		t.Errorf("run = slot %s, started %s, %s; want slot %s, started %s (its turn's start), 1m30s", r.Slot, r.Started, r.Duration, slot, started)
	}
}

// A task waits with at most one run: a slot that falls due while the
// task's previous run is still queued (its group's agent busy with a long
// turn, or a task firing faster than its turns finish) is recorded
// skipped, saying why, instead of queueing runs that then go back to back
// ahead of the group's chat messages for as long as the backlog lasts. The
// missed runs a catch-up claims (missed: all, one claim each) all queue,
// and so does the on-time slot after them.
func TestTaskWaitsWithOneRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	task, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "p", Spec: "every 10s", Kind: scheduler.KindInterval,
		Timezone: "UTC", Context: scheduler.ContextGroup, Missed: scheduler.MissedAll, Status: scheduler.StatusActive, Next: now})
	if err != nil {
		t.Fatal(err)
	}
	next := now
	claim := func(missed bool) (int64, error) {
		now = now.Add(time.Millisecond) // each claim its own transaction, a moment later
		c := scheduler.Claim{Advance: scheduler.Advance{TaskID: task.ID, From: next, Next: next.Add(10 * time.Second), HasNext: true}, Slot: next, Missed: missed}
		next = next.Add(10 * time.Second)
		runIDs, errs, err := s.ClaimAndQueue(ctx, []scheduler.Claim{c})
		if err != nil || runIDs[0] == 0 {
			t.Fatalf("ClaimAndQueue = %v %v %v", runIDs, errs, err)
		}
		return runIDs[0], errs[0]
	}
	queued := func() int {
		var n int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM work WHERE task_id = ?`, task.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A catch-up after downtime claims three missed slots, one by one: all queue.
	for i := range 3 {
		if _, err := claim(true); err != nil || queued() != i+1 {
			t.Fatalf("catch-up slot %d: err %v, %d queued; want every missed slot queued", i+1, err, queued())
		}
	}
	// The slot due at the restart itself is on time: it queues behind them.
	if _, err := claim(false); err != nil || queued() != 4 {
		t.Fatalf("the on-time slot after a catch-up: err %v, %d queued; want it queued too", err, queued())
	}
	// The agent is still busy when the next slot falls due on time.
	now = now.Add(10 * time.Second)
	runID, err := claim(false)
	if !errors.Is(err, scheduler.ErrRunWaiting) || queued() != 4 {
		t.Errorf("an on-time slot behind a waiting on-time run: err %v, %d queued; want skipped (ErrRunWaiting), still 4 queued", err, queued())
	}
	runs, err := s.TaskRuns(ctx, task.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r := runs[0]; r.ID != runID || r.Status != RunSkipped || !strings.Contains(r.Error, "previous run has not started") {
		t.Errorf("the skipped run = %+v, want skipped, saying the previous run has not started", r)
	}
	// Once the waiting runs have started, the task's next slot queues again.
	for range 4 {
		b, ok, err := s.NextBatch(ctx, "main", 10)
		if err != nil || !ok {
			t.Fatalf("NextBatch = %v %v", ok, err)
		}
		if err := s.FinishBatch(ctx, b, Turn{ID: fmt.Sprint("turn-", b.Items[0].RunID), Folder: "main", ChatJID: "web:lobby", Trigger: TriggerTask,
			TaskID: task.ID, RunID: b.Items[0].RunID, Attempt: 1, Status: TurnSucceeded}, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(10 * time.Second)
	if _, err := claim(false); err != nil || queued() != 1 {
		t.Errorf("a slot after the queue drained: err %v, %d queued; want it queued", err, queued())
	}
	// That run still waits when the gateway goes down; at the restart the
	// policy's missed runs queue behind it all the same.
	for i := range 2 {
		if _, err := claim(true); err != nil || queued() != 2+i {
			t.Errorf("catch-up slot %d behind a waiting run: err %v, %d queued; want it queued", i+1, err, queued())
		}
	}
}

// A task cancelled or paused after its folder's worker loaded the run's
// batch, but before the turn started, does not run: MarkStarted finds the
// work gone (ErrBatchGone), marks nothing, and the run stays skipped with
// the reason the cancel gave (without the check the turn ran and its run
// was recorded succeeded, after the task was cancelled).
func TestMarkStartedRefusesADroppedBatch(t *testing.T) {
	for _, status := range []scheduler.TaskStatus{scheduler.StatusCancelled, scheduler.StatusPaused} {
		t.Run(string(status), func(t *testing.T) {
			s := newStore(t)
			ctx := t.Context()
			if err := s.AddGroup(ctx, "main"); err != nil {
				t.Fatal(err)
			}
			slot := time.Now().Add(-time.Minute).Truncate(time.Second).UTC()
			task, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "p", Spec: "@daily", Kind: scheduler.KindCron,
				Timezone: "UTC", Context: scheduler.ContextGroup, Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: slot})
			if err != nil {
				t.Fatal(err)
			}
			runIDs, errs, err := s.ClaimAndQueue(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: task.ID, From: slot, Next: slot.Add(24 * time.Hour), HasNext: true}, Slot: slot}})
			if err != nil || errs[0] != nil || runIDs[0] == 0 {
				t.Fatalf("ClaimAndQueue = %v %v %v", runIDs, errs, err)
			}
			b, ok, err := s.NextBatch(ctx, "main", 10)
			if err != nil || !ok {
				t.Fatalf("NextBatch = %v %v", ok, err)
			}
			if err := s.SetTaskStatus(ctx, task.ID, status, nil); err != nil {
				t.Fatal(err)
			}
			if err := s.MarkStarted(ctx, b, "turn-1"); !errors.Is(err, ErrBatchGone) {
				t.Fatalf("MarkStarted of a batch whose task was %s = %v, want ErrBatchGone (the turn must not run)", status, err)
			}
			runs, err := s.TaskRuns(ctx, task.ID, 10)
			if err != nil || len(runs) != 1 || runs[0].Status != RunSkipped {
				t.Errorf("runs = %+v %v, want the one run skipped", runs, err)
			}
			if it, err := s.InterruptedTurns(ctx); err != nil || len(it) != 0 {
				t.Errorf("InterruptedTurns = %+v %v, want nothing marked started", it, err)
			}
		})
	}
}

// A task turn whose record the store refused for good is given up
// (GiveUpTurn): its run is failed then, saying why, and its turn id kept,
// not left "fired" (task runs showed it running until the next start,
// which then failed it as "the gateway stopped after claiming this run").
func TestGiveUpTurnFailsItsRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UTC()
	task, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:lobby", Prompt: "p", Spec: "@daily", Kind: scheduler.KindCron,
		Timezone: "UTC", Context: scheduler.ContextGroup, Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: slot})
	if err != nil {
		t.Fatal(err)
	}
	runIDs, errs, err := s.ClaimAndQueue(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: task.ID, From: slot, Next: slot.Add(24 * time.Hour), HasNext: true}, Slot: slot}})
	if err != nil || errs[0] != nil || runIDs[0] == 0 {
		t.Fatalf("ClaimAndQueue = %v %v %v", runIDs, errs, err)
	}
	b, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatalf("NextBatch = %v %v", ok, err)
	}
	if err := s.MarkStarted(ctx, b, "t-1"); err != nil {
		t.Fatal(err)
	}
	if n, err := s.GiveUpTurn(ctx, "t-1", nil); err != nil || n != 1 {
		t.Fatalf("GiveUpTurn = %d, %v; want its 1 row dropped", n, err)
	}
	runs, err := s.TaskRuns(ctx, task.ID, 10)
	if err != nil || len(runs) != 1 {
		t.Fatalf("TaskRuns = %+v %v", runs, err)
	}
	if r := runs[0]; r.Status != scheduler.RunFailed || r.TurnID != "t-1" || !strings.Contains(r.Error, "could not record") {
		t.Errorf("run after its turn was given up = %+v; want failed, turn t-1, saying the turn could not be recorded", r)
	}
	if n, err := s.RecoverRuns(ctx); err != nil || n != 0 {
		t.Errorf("RecoverRuns = %d %v; want nothing left for the next start", n, err)
	}
}
