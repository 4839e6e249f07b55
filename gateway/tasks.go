package gateway

import (
	"context"
	"fmt"
	"time"

	"switchboard/routing"
	"switchboard/scheduler"
	"switchboard/store"
)

// Fire implements scheduler.Firer: it queues the task's prompt as a task
// turn of its folder, addressed to the folder directly (never through routes,
// so observe and mention-only routes cannot swallow it).
func (g *Gateway) Fire(ctx context.Context, t scheduler.Task, slot time.Time, runID int64) error {
	ok, err := g.st.GroupExists(ctx, t.Folder)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("group %s no longer exists", t.Folder)
	}
	_, err = g.st.Enqueue(ctx, store.WorkItem{Folder: t.Folder, ChatJID: t.ChatJID, Mode: string(routing.Trigger),
		Trigger: TriggerTask, Prompt: t.Prompt, TaskID: t.ID, RunID: runID, Isolated: t.Context == scheduler.ContextIsolated})
	if err != nil {
		return err
	}
	g.log.Info("task fired", "task", t.ID, "folder", t.Folder, "slot", slot.Format(time.RFC3339), "run", runID)
	g.queue.kick(t.Folder)
	return nil
}

// recordRun writes a task turn's outcome to its run row.
func (g *Gateway) recordRun(ctx context.Context, item store.WorkItem, turn store.Turn, final bool) {
	if item.RunID == 0 || !final {
		return
	}
	status := "succeeded"
	if turn.Status != "succeeded" {
		status = "failed"
	}
	if err := g.st.FinishRun(ctx, item.RunID, status, turn.ID, time.Duration(turn.DurationMS)*time.Millisecond, turn.Error); err != nil {
		g.log.Error("record task run", "task", item.TaskID, "run", item.RunID, "err", err)
	}
}

// startScheduler recovers interrupted runs, applies missed-run policies and
// starts the due loop; it stops with ctx.
func (g *Gateway) startScheduler(ctx context.Context) error {
	if n, err := g.st.RecoverRuns(ctx); err != nil {
		return err
	} else if n > 0 {
		g.log.Warn("task runs interrupted by a crash were marked failed", "count", n)
	}
	if err := g.sched.Startup(ctx, time.Now()); err != nil {
		return fmt.Errorf("scheduler start-up: %w", err)
	}
	go func() {
		if err := g.sched.Run(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("scheduler stopped", "err", err)
		}
	}()
	return nil
}

// AddTask validates and stores a task; a running gateway picks it up within
// its poll interval (at once when this is that gateway). Errors name the
// field that is wrong (see scheduler.NewTask); the CLI and the MCP task tools
// both go through here.
func AddTask(ctx context.Context, st *store.Store, spec scheduler.TaskSpec, defaultZone string) (scheduler.Task, error) {
	ok, err := st.GroupExists(ctx, spec.Folder)
	if err != nil {
		return scheduler.Task{}, err
	}
	if !ok {
		return scheduler.Task{}, fmt.Errorf("folder: group %s does not exist", spec.Folder)
	}
	t, err := scheduler.NewTask(spec, defaultZone, time.Now())
	if err != nil {
		return t, err
	}
	return st.AddTask(ctx, t)
}

// SetTaskStatus pauses, resumes or cancels a task. Resuming starts from the
// next slot after now. A task already in status is returned unchanged (so
// resuming an active task cannot drop its next slot). The CLI and the MCP
// task tools both go through here; like AddTask, the change reaches a
// running gateway's scheduler within its poll interval, at once through MCP.
func SetTaskStatus(ctx context.Context, st *store.Store, id int64, status string) (scheduler.Task, error) {
	t, err := st.Task(ctx, id)
	if err != nil || t.Status == status {
		return t, err
	}
	var next *time.Time
	if status == scheduler.StatusActive {
		n, ok, err := scheduler.ResumeNext(t, time.Now())
		if err != nil {
			return t, err
		}
		if !ok {
			status = scheduler.StatusCompleted
		}
		next = &n
	}
	if err := st.SetTaskStatus(ctx, id, status, next); err != nil {
		return t, err
	}
	return st.Task(ctx, id)
}
