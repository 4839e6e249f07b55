package ops

import (
	"context"
	"fmt"
	"time"

	"switchboard/scheduler"
	"switchboard/store"
)

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
func SetTaskStatus(ctx context.Context, st *store.Store, id int64, status scheduler.TaskStatus) (scheduler.Task, error) {
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
