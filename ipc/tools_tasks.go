package ipc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/scheduler"
	"switchboard/store"
)

// The task tools: a group schedules prompts for its own folder, answering in
// a chat it owns (the chat check is Authorize's), and manages the tasks of
// its subtree. Validation is the scheduler's, through the Backend, the same
// code as `switchboard task`.

const (
	scheduleDesc = `When to run. A 5-field cron "minute hour day-of-month month day-of-week" ("0 9 * * 1-5": 09:00 on weekdays; ` +
		`"*/30 8-18 * * *": every half hour from 08:00 to 18:30), a descriptor (@hourly, @daily, @weekly, @monthly, @yearly), ` +
		`an interval ("every 30m", "@every 1h30m"; at least 10s, counted from now), or a one-shot RFC 3339 instant ` +
		`("2026-12-24T18:00:00+01:00"; without an offset it is wall time in timezone).`
	timezoneDesc = "IANA time zone the schedule is evaluated in, e.g. Europe/Berlin or America/New_York. Default: the gateway's configured zone."
	taskIDDesc   = "The task id (list_tasks shows them)."
)

// scheduleTask is the tool whose schedule param has many spellings of one
// schedule (Authorize checks scheduler.Spelling's).
const scheduleTask = "schedule_task"

func taskTools() []*toolDef {
	return []*toolDef{
		{tool: newTool(scheduleTask, "Schedule a task",
			"Schedule a prompt to run later, once or repeatedly, as an autonomous turn of your group: when it falls due a turn "+
				"starts with the prompt in a <task id=\"…\" run=\"…\"> element (trigger \"task\"), and its reply goes to chat_jid, "+
				"even where that chat's route only observes. Use it for reminders, recurring reports and follow-ups (\"check the "+
				"deploy in 30 minutes\"). Do not use it to answer now (just reply), and look at list_tasks first so you do not "+
				"schedule a duplicate. Cron runs in timezone: a time skipped by a daylight-saving jump fires at the first instant "+
				"after the gap, a time repeated when clocks go back fires once. preview_schedule shows the fire times without "+
				"creating anything. Returns the task: {\"id\", \"status\", \"next_run\" (RFC 3339 in its zone), ...}.",
			additive,
			chatParam("The chat the task's turns answer in, e.g. web:lobby; your group must own it. Usually the chat you are answering now."),
			mcp.WithString("prompt", mcp.Required(), mcp.Description(fmt.Sprintf("What to do when the task runs, with every "+
				"detail the turn needs: it may start without the conversation's context (at most %d KiB).", scheduler.MaxPrompt>>10))),
			mcp.WithString("schedule", mcp.Required(), mcp.Description(scheduleDesc)),
			mcp.WithString("timezone", mcp.Description(timezoneDesc)),
			mcp.WithString("context_mode", mcp.Enum(scheduler.ContextGroup, scheduler.ContextIsolated), mcp.Description(
				"group (default): each run continues your group's session in the chat and sees its conversation; isolated: "+
					"each run starts a fresh session, for self-contained jobs that should not fill the chat's context.")),
			mcp.WithString("missed", mcp.Enum(string(scheduler.MissedSkip), string(scheduler.MissedOnce), string(scheduler.MissedAll)),
				mcp.Description("Runs that fell due while the gateway was down (more than a minute late, or followed by a newer due slot): skip "+
					"(default) waits for the next slot; once runs one catch-up (the latest missed slot); all runs every missed slot in order "+
					"(at most 100).")),
		), run: runScheduleTask},
		{tool: newTool("list_tasks", "List scheduled tasks",
			"List the scheduled tasks of your group and its subgroups (the operator sees all): id, folder, chat, prompt, "+
				"schedule, timezone, context_mode, missed, status (active, paused, completed, cancelled) and next_run (RFC 3339 "+
				"in the task's zone, null when none is left). Look here before schedule_task to avoid duplicates, and for the "+
				"id that pause_task, resume_task, cancel_task and inspect_tasks take. Returns {\"tasks\": [...]}.",
			readOnly,
		), run: runListTasks},
		{tool: newTool("pause_task", "Pause a task",
			"Pause a task of your group or a subgroup: it stops firing but keeps its schedule, so resume_task continues it. "+
				"For a temporary stop; to end a task for good use cancel_task. Returns the task.",
			additive,
			mcp.WithInteger("id", mcp.Required(), mcp.Min(1), mcp.Description(taskIDDesc)),
		), run: taskStatusRunner(scheduler.StatusPaused)},
		{tool: newTool("resume_task", "Resume a task",
			"Resume a paused task. It continues from its next slot after now: slots that passed while it was paused do not "+
				"run. A completed or cancelled task cannot be resumed; schedule a new one. Returns the task with its next_run.",
			additive,
			mcp.WithInteger("id", mcp.Required(), mcp.Min(1), mcp.Description(taskIDDesc)),
		), run: taskStatusRunner(scheduler.StatusActive)},
		{tool: newTool("cancel_task", "Cancel a task",
			"Cancel a task for good: it never runs again (inspect_tasks still shows its history). This cannot be undone; "+
				"to stop it for a while use pause_task. Returns the task.",
			destructive,
			mcp.WithInteger("id", mcp.Required(), mcp.Min(1), mcp.Description(taskIDDesc)),
		), run: taskStatusRunner(scheduler.StatusCancelled)},
		{tool: newTool("inspect_tasks", "Inspect tasks and their runs",
			"Show tasks with their run history, newest run first: slot (the scheduled time), started, duration_ms, status "+
				"(fired: its turn is queued or running; succeeded; failed; skipped: no turn ran, the error says why), turn_id and error. Use it to see whether a task ran "+
				"and why a run failed. With id, that task; without, every task of your group and its subgroups (the operator: "+
				"all). Returns {\"tasks\": [{...the task, \"runs\": [...]}]}.",
			readOnly,
			mcp.WithInteger("id", mcp.Min(1), mcp.Description("Only this task. Omit for all of them.")),
			limitParam(10, 100, "runs per task"),
		), run: runInspectTasks},
		{tool: newTool("preview_schedule", "Preview a schedule",
			"List the next fire times of a schedule without creating anything, to check a cron expression, a zone or a "+
				"daylight-saving transition before schedule_task. Times are RFC 3339 with the zone's offset; a one-shot lists "+
				"at most one (none when it is past). Returns {\"schedule\", \"timezone\", \"kind\", \"next\": [...]}.",
			readOnly,
			mcp.WithString("schedule", mcp.Required(), mcp.Description(scheduleDesc)),
			mcp.WithString("timezone", mcp.Description(timezoneDesc)),
			mcp.WithInteger("count", mcp.Min(1), mcp.Max(scheduler.MaxPreview),
				mcp.Description(fmt.Sprintf("How many fire times (default %d, at most %d).", scheduler.DefaultPreview, scheduler.MaxPreview))),
		), run: runPreviewSchedule},
	}
}

// taskView is a task as the tools show it.
type taskView struct {
	ID        int64          `json:"id"`
	Folder    groups.Folder  `json:"folder"`
	ChatJID   string         `json:"chat_jid"`
	Prompt    string         `json:"prompt"`
	Schedule  string         `json:"schedule"`
	Kind      scheduler.Kind `json:"kind"`
	Timezone  string         `json:"timezone"`
	Context   string         `json:"context_mode"`
	Missed    string         `json:"missed"`
	Status    string         `json:"status"`
	NextRun   *string        `json:"next_run"` // null: no slot left
	CreatedBy string         `json:"created_by"`
}

// inspectedTask is a task with its recent runs.
type inspectedTask struct {
	taskView
	Runs []runView `json:"runs"`
}

type runView struct {
	ID         int64   `json:"id"`
	Slot       string  `json:"slot"`
	Started    string  `json:"started"`
	DurationMS int64   `json:"duration_ms"`
	Status     string  `json:"status"`
	TurnID     string  `json:"turn_id,omitempty"`
	Error      string  `json:"error,omitempty"`
	CostUSD    float64 `json:"cost_usd,omitempty"`
}

// zoneOf is the task's zone (UTC if it no longer loads).
func zoneOf(tz string) *time.Location {
	loc, err := scheduler.LoadZone(tz)
	if err != nil {
		return time.UTC
	}
	return loc
}

func viewTask(t scheduler.Task) taskView {
	v := taskView{ID: t.ID, Folder: t.Folder, ChatJID: t.ChatJID, Prompt: t.Prompt, Schedule: t.Spec, Kind: t.Kind,
		Timezone: t.Timezone, Context: t.Context, Missed: string(t.Missed), Status: string(t.Status), CreatedBy: t.CreatedBy}
	if n := t.NextRun(); !n.IsZero() {
		next := n.In(zoneOf(t.Timezone)).Format(time.RFC3339)
		v.NextRun = &next
	}
	return v
}

func viewRuns(runs []store.TaskRun, tz string) []runView {
	loc := zoneOf(tz)
	out := make([]runView, len(runs))
	for i, r := range runs {
		out[i] = runView{ID: r.ID, Slot: r.Slot.In(loc).Format(time.RFC3339), Started: r.Started.In(loc).Format(time.RFC3339),
			DurationMS: r.Duration.Milliseconds(), Status: r.Status, TurnID: r.TurnID, Error: r.Error, CostUSD: r.CostUSD}
	}
	return out
}

func runScheduleTask(ctx context.Context, c *call) (any, error) {
	chat := c.str("chat_jid")
	if _, err := adapters.ParseJID(chat); err != nil {
		return nil, fmt.Errorf("chat_jid: %w", err)
	}
	t, err := c.b.AddTask(ctx, scheduler.TaskSpec{Folder: c.folder, ChatJID: chat, Prompt: c.str("prompt"),
		Schedule: c.str("schedule"), Timezone: c.str("timezone"), Context: c.str("context_mode"), Missed: c.str("missed"),
		CreatedBy: string(c.folder)})
	if err != nil {
		return nil, err
	}
	return viewTask(t), nil
}

// subtreeOf is the folder whose subtree the caller may see: its own, or all
// ("") for the operator.
func (c *call) subtreeOf() groups.Folder {
	if c.tier == 0 {
		return ""
	}
	return c.folder
}

func runListTasks(ctx context.Context, c *call) (any, error) {
	tasks, err := c.b.Tasks(ctx, c.subtreeOf())
	if err != nil {
		return nil, err
	}
	out := make([]taskView, len(tasks))
	for i, t := range tasks {
		out[i] = viewTask(t)
	}
	return map[string]any{"tasks": out}, nil
}

// ownTask returns task id if it is in the caller's subtree.
func (c *call) ownTask(ctx context.Context, id int64) (scheduler.Task, error) {
	t, found, err := c.b.Task(ctx, id)
	if err != nil {
		return t, err
	}
	if !found {
		return t, fmt.Errorf("task %d does not exist (list_tasks shows the tasks you can see)", id)
	}
	if c.tier != 0 && !c.folder.Contains(t.Folder) {
		return t, fmt.Errorf("task %d belongs to group %s, outside your subtree (%s)", id, t.Folder, c.folder)
	}
	return t, nil
}

func taskStatusRunner(status scheduler.TaskStatus) func(context.Context, *call) (any, error) {
	return func(ctx context.Context, c *call) (any, error) {
		id := int64(c.int("id", 0))
		t, err := c.ownTask(ctx, id)
		if err != nil {
			return nil, err
		}
		finished := fmt.Errorf("task %d is %s and cannot change any more; schedule a new task instead", id, t.Status)
		if t.Status == status && (t.Status == scheduler.StatusCompleted || t.Status == scheduler.StatusCancelled) {
			return viewTask(t), nil
		}
		// A completed task can still be cancelled while its last run waits
		// in the queue (the store decides).
		if t.Status == scheduler.StatusCancelled || (t.Status == scheduler.StatusCompleted && status != scheduler.StatusCancelled) {
			return nil, finished
		}
		t, err = c.b.SetTaskStatus(ctx, id, status)
		if errors.Is(err, store.ErrTaskFinished) {
			return nil, finished
		}
		if err != nil {
			return nil, err
		}
		return viewTask(t), nil
	}
}

func runInspectTasks(ctx context.Context, c *call) (any, error) {
	var tasks []scheduler.Task
	if c.has("id") {
		t, err := c.ownTask(ctx, int64(c.int("id", 0)))
		if err != nil {
			return nil, err
		}
		tasks = []scheduler.Task{t}
	} else {
		var err error
		if tasks, err = c.b.Tasks(ctx, c.subtreeOf()); err != nil {
			return nil, err
		}
	}
	limit := clamp(c.int("limit", 0), 10, 100)
	out := make([]inspectedTask, len(tasks))
	for i, t := range tasks {
		runs, err := c.b.TaskRuns(ctx, t.ID, limit)
		if err != nil {
			return nil, err
		}
		out[i] = inspectedTask{taskView: viewTask(t), Runs: viewRuns(runs, t.Timezone)}
	}
	return map[string]any{"tasks": out}, nil
}

func runPreviewSchedule(_ context.Context, c *call) (any, error) {
	tz := c.str("timezone")
	if tz == "" {
		tz = c.b.DefaultTimezone()
	}
	loc, err := scheduler.LoadZone(tz)
	if err != nil {
		return nil, fmt.Errorf("timezone: %w", err)
	}
	spec := c.str("schedule")
	s, err := scheduler.Parse(spec, tz)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	slots, err := scheduler.Preview(spec, tz, time.Now(), c.int("count", 0))
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	next := make([]string, len(slots))
	for i, t := range slots {
		next[i] = t.In(loc).Format(time.RFC3339)
	}
	return map[string]any{"schedule": s.Spec(), "timezone": loc.String(), "kind": s.Kind(), "next": next}, nil
}
