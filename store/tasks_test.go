package store

import (
	"testing"
	"time"

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
