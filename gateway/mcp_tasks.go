package gateway

import (
	"context"

	"switchboard/groups"
	"switchboard/ops"
	"switchboard/scheduler"
	"switchboard/store"
)

// mcpTasks implements ipc.TaskStore: the gateway side of the MCP
// task tools, the same AddTask and SetTaskStatus
// as `switchboard task`, then a Wake so the scheduler sees the change now
// rather than at its next poll.
type mcpTasks struct{ *mcpDeps }

func (b mcpTasks) AddTask(ctx context.Context, spec scheduler.TaskSpec) (scheduler.Task, error) {
	t, err := ops.AddTask(ctx, b.st, spec, b.timezone)
	if err != nil {
		return t, err
	}
	b.wakeScheduler()
	return t, nil
}

func (b mcpTasks) Task(ctx context.Context, id int64) (scheduler.Task, bool, error) {
	t, err := b.st.Task(ctx, id)
	if err != nil {
		return t, false, ignoreNotFound(err)
	}
	return t, true, nil
}

func (b mcpTasks) Tasks(ctx context.Context, folder groups.Folder) ([]scheduler.Task, error) {
	return b.st.Tasks(ctx, folder, true)
}

func (b mcpTasks) SetTaskStatus(ctx context.Context, id int64, status scheduler.TaskStatus) (scheduler.Task, error) {
	t, err := ops.SetTaskStatus(ctx, b.st, id, status)
	if err != nil {
		return t, err
	}
	b.wakeScheduler()
	return t, nil
}

func (b mcpTasks) TaskRuns(ctx context.Context, id int64, limit int) ([]store.TaskRun, error) {
	return b.st.TaskRuns(ctx, id, limit)
}

func (b mcpTasks) DefaultTimezone() string { return b.timezone }
