package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"switchboard/groups"
	"switchboard/scheduler"
)

// The Gateway starts the turns of scheduled tasks. Over the SQL store, the
// scheduler queues each turn in the transaction that claims its slot
// (store.ClaimAndQueue) and then calls StartTurns; Fire is the Firer of a
// store that cannot queue.
var _ scheduler.TurnStarter = (*Gateway)(nil)

// Fire implements scheduler.Firer: it queues the task's prompt as a task
// turn of its folder, addressed to the folder directly (never through routes,
// so observe and mention-only routes cannot swallow it), and starts it;
// while a used-up budget holds the folder the run is skipped instead
// (budgetGuard.skipHeld).
func (g *Gateway) Fire(ctx context.Context, t scheduler.Task, slot time.Time, runID int64) error {
	if err := g.st.QueueTaskTurn(ctx, t.ID, runID); err != nil {
		return err
	}
	g.budget.skipHeld(ctx, t.Folder)
	g.workers.kick(t.Folder)
	g.metrics.fires.Inc()
	g.metrics.lateness.Observe(max(time.Since(slot), 0).Seconds())
	return nil
}

// StartTurns implements scheduler.TurnStarter: the turns are queued already
// (work items like Fire's); it kicks each folder's worker once. Like Fire,
// it first skips the runs of a folder a used-up budget holds.
func (g *Gateway) StartTurns(ctx context.Context, fires []scheduler.Fired) {
	kicked := map[groups.Folder]bool{}
	for _, f := range fires {
		g.metrics.fires.Inc()
		g.metrics.lateness.Observe(max(time.Since(f.Slot), 0).Seconds())
		if !kicked[f.Task.Folder] {
			kicked[f.Task.Folder] = true
			g.budget.skipHeld(ctx, f.Task.Folder)
			g.workers.kick(f.Task.Folder)
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
