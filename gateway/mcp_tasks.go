package gateway

import (
	"context"

	"switchboard/ops"
	"switchboard/scheduler"
	"switchboard/store"
)

// The gateway side of the MCP task tools: the same AddTask and SetTaskStatus
// as `switchboard task`, then a Wake so the scheduler sees the change now
// rather than at its next poll.

func (b mcpBackend) AddTask(ctx context.Context, spec scheduler.TaskSpec) (scheduler.Task, error) {
	t, err := ops.AddTask(ctx, b.g.st, spec, b.g.opt.Timezone)
	if err != nil {
		return t, err
	}
	b.g.sched.Wake()
	return t, nil
}

func (b mcpBackend) Task(ctx context.Context, id int64) (scheduler.Task, bool, error) {
	t, err := b.g.st.Task(ctx, id)
	if err != nil {
		return t, false, ignoreNotFound(err)
	}
	return t, true, nil
}

func (b mcpBackend) Tasks(ctx context.Context, folder string) ([]scheduler.Task, error) {
	return b.g.st.Tasks(ctx, folder, true)
}

func (b mcpBackend) SetTaskStatus(ctx context.Context, id int64, status scheduler.TaskStatus) (scheduler.Task, error) {
	t, err := ops.SetTaskStatus(ctx, b.g.st, id, status)
	if err != nil {
		return t, err
	}
	b.g.sched.Wake()
	return t, nil
}

func (b mcpBackend) TaskRuns(ctx context.Context, id int64, limit int) ([]store.TaskRun, error) {
	return b.g.st.TaskRuns(ctx, id, limit)
}

func (b mcpBackend) DefaultTimezone() string { return b.g.opt.Timezone }
