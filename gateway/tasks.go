package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"switchboard/scheduler"
	"switchboard/store"
)

// The Gateway starts the turns of scheduled tasks. Over the SQL store, the
// scheduler queues each turn in the transaction that claims its slot
// (store.ClaimAndQueue) and then calls StartTurns; Fire is the Firer of a
// store that cannot queue.
var _ scheduler.TurnStarter = (*Gateway)(nil)

// Fire implements scheduler.Firer: it queues the task's prompt as a task
// turn of its folder, addressed to the folder directly (never through routes,
// so observe and mention-only routes cannot swallow it), and starts it.
func (g *Gateway) Fire(ctx context.Context, t scheduler.Task, slot time.Time, runID int64) error {
	if err := g.st.QueueTaskTurn(ctx, t.ID, runID); err != nil {
		return err
	}
	g.queue.kick(t.Folder)
	g.metrics.fires.Inc()
	g.metrics.lateness.Observe(max(time.Since(slot), 0).Seconds())
	return nil
}

// StartTurns implements scheduler.TurnStarter: the turns are queued already
// (work items like Fire's); it kicks each folder's worker once.
func (g *Gateway) StartTurns(ctx context.Context, fires []scheduler.Fired) {
	kicked := map[string]bool{}
	for _, f := range fires {
		g.metrics.fires.Inc()
		g.metrics.lateness.Observe(max(time.Since(f.Slot), 0).Seconds())
		if !kicked[f.Task.Folder] {
			kicked[f.Task.Folder] = true
			g.queue.kick(f.Task.Folder)
		}
	}
}

// startScheduler recovers interrupted runs, applies missed-run policies and
// starts the due loop; it stops with ctx.
func (g *Gateway) startScheduler(ctx context.Context, wg *sync.WaitGroup) error {
	if n, err := g.st.RecoverRuns(ctx); err != nil {
		return err
	} else if n > 0 {
		g.log.Warn("task runs left unsettled by a crash were settled from their turn records or marked failed", "count", n)
	}
	if err := g.sched.Startup(ctx, time.Now()); err != nil {
		return fmt.Errorf("scheduler start-up: %w", err)
	}
	wg.Go(func() {
		if err := g.sched.Run(ctx); err != nil && ctx.Err() == nil {
			g.log.Error("scheduler stopped", "err", err)
		}
	})
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
