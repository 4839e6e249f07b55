package ipc_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testwait"
	"switchboard/ops"
	"switchboard/scheduler"
)

// task is a task as the task tools return it.
type task struct {
	ID        int64   `json:"id"`
	Folder    string  `json:"folder"`
	ChatJID   string  `json:"chat_jid"`
	Prompt    string  `json:"prompt"`
	Schedule  string  `json:"schedule"`
	Kind      string  `json:"kind"`
	Timezone  string  `json:"timezone"`
	Context   string  `json:"context_mode"`
	Missed    string  `json:"missed"`
	Status    string  `json:"status"`
	NextRun   *string `json:"next_run"`
	CreatedBy string  `json:"created_by"`
	Runs      []struct {
		Slot       string `json:"slot"`
		Started    string `json:"started"`
		DurationMS int64  `json:"duration_ms"`
		Status     string `json:"status"`
		TurnID     string `json:"turn_id"`
		Error      string `json:"error"`
	} `json:"runs"`
}

type taskList struct {
	Tasks []task `json:"tasks"`
}

func (l taskList) ids() []int64 {
	var ids []int64
	for _, t := range l.Tasks {
		ids = append(ids, t.ID)
	}
	return ids
}

// TestTaskToolsLifecycle: a tier-1 group schedules a task for itself,
// finds it in list_tasks and the store, pauses, resumes and cancels it;
// finished tasks and unknown ids are errors that say so.
func TestTaskToolsLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	var tk task
	call(t, c, "schedule_task", map[string]any{"chat_jid": "web:acme", "prompt": "post the standup reminder",
		"schedule": "0 9 * * 1-5", "timezone": "Europe/Berlin", "context_mode": "isolated", "missed": "all"}).decode(t, &tk)
	if tk.ID == 0 || tk.Folder != "acme" || tk.CreatedBy != "acme" || tk.ChatJID != "web:acme" || tk.Status != "active" ||
		tk.Kind != "cron" || tk.Timezone != "Europe/Berlin" || tk.Context != "isolated" || tk.Missed != "all" || tk.NextRun == nil {
		t.Fatalf("scheduled task %+v", tk)
	}
	next, err := time.Parse(time.RFC3339, *tk.NextRun)
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	_, offset := next.In(berlin).Zone()
	if local := next.In(berlin); local.Hour() != 9 || local.Weekday() == time.Saturday || local.Weekday() == time.Sunday ||
		!strings.HasSuffix(*tk.NextRun, fmt.Sprintf("+%02d:00", offset/3600)) || !next.After(time.Now()) {
		t.Errorf("next_run %s is not the next weekday 09:00 in Berlin with Berlin's offset", *tk.NextRun)
	}
	stored, err := h.st.Task(context.Background(), tk.ID)
	if err != nil || stored.Folder != "acme" || stored.Prompt != "post the standup reminder" || !stored.Next.Equal(next) {
		t.Errorf("stored task %+v, %v", stored, err)
	}

	var list taskList
	call(t, c, "list_tasks", nil).decode(t, &list)
	if len(list.Tasks) != 1 || list.Tasks[0].ID != tk.ID || list.Tasks[0].Runs != nil {
		t.Errorf("list_tasks %+v", list)
	}
	for _, step := range []struct{ tool, want string }{
		{"pause_task", "paused"}, {"pause_task", "paused"}, {"resume_task", "active"}, {"cancel_task", "cancelled"},
	} {
		var got task
		call(t, c, step.tool, map[string]any{"id": tk.ID}).decode(t, &got)
		if got.Status != step.want {
			t.Errorf("%s: status %s, want %s", step.tool, got.Status, step.want)
		}
		// A cancelled task never runs again: no next_run, as task list
		// shows it (CONTRACT §10 "cancelled tasks stop for good").
		if step.want == "cancelled" && got.NextRun != nil {
			t.Errorf("%s: next_run %s, want null", step.tool, *got.NextRun)
		}
	}
	if r := call(t, c, "resume_task", map[string]any{"id": tk.ID}); !r.IsError || !strings.Contains(r.Text, "cancelled") {
		t.Errorf("resume after cancel: %+v", r)
	}
	var inspected taskList
	call(t, c, "inspect_tasks", map[string]any{"id": tk.ID}).decode(t, &inspected)
	if len(inspected.Tasks) != 1 || inspected.Tasks[0].Status != "cancelled" || inspected.Tasks[0].NextRun != nil || inspected.Tasks[0].Runs == nil || len(inspected.Tasks[0].Runs) != 0 {
		t.Errorf("inspect_tasks %+v", inspected)
	}
	for _, tool := range []string{"pause_task", "inspect_tasks"} {
		if r := call(t, c, tool, map[string]any{"id": 4242}); !r.IsError || r.refused() || !strings.Contains(r.Text, "task 4242 does not exist") {
			t.Errorf("%s of an unknown task: %+v", tool, r)
		}
	}
	// Which tiers see which task tools (CONTRACT §7).
	for _, g := range tierGroups {
		var want []string
		switch g.tier {
		case 0, 1:
			want = []string{"cancel_task", "inspect_tasks", "list_tasks", "pause_task", "preview_schedule", "resume_task", "schedule_task"}
		case 2:
			want = []string{"inspect_tasks", "list_tasks"}
		}
		var got []string
		for _, name := range listed(t, h.connect(t, g.folder, true)) {
			if strings.Contains(name, "task") || name == "preview_schedule" {
				got = append(got, name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("tier %d lists task tools %v, want %v", g.tier, got, want)
		}
	}
}

// TestScheduleTaskErrorsNameTheField: a bad schedule, zone, mode, policy or
// prompt is an isError result naming the field, with the scheduler's reason;
// nothing is stored.
func TestScheduleTaskErrorsNameTheField(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"bad cron", map[string]any{"schedule": "0 25 * * *"}, []string{"schedule: ", "0 25 * * *", "5-field cron"}},
		{"never fires", map[string]any{"schedule": "0 0 30 2 *"}, []string{"schedule: ", "never fires"}},
		{"zone prefix", map[string]any{"schedule": "CRON_TZ=UTC 0 9 * * *"}, []string{"schedule: ", "timezone field"}},
		{"past instant", map[string]any{"schedule": "2001-01-01T00:00:00Z"}, []string{"schedule ", "already past"}},
		{"short interval", map[string]any{"schedule": "every 5s"}, []string{"schedule: ", "shorter than the minimum 10s"}},
		{"bad zone", map[string]any{"timezone": "Mars/Base"}, []string{"timezone: ", "Mars/Base", "IANA"}},
		{"local zone", map[string]any{"timezone": "Local"}, []string{"timezone: "}},
		{"bad mode", map[string]any{"context_mode": "solo"}, []string{"context_mode", "group, isolated"}},
		{"bad missed", map[string]any{"missed": "never"}, []string{"missed", "skip, once, all"}},
		{"empty prompt", map[string]any{"prompt": "  "}, []string{"prompt: empty"}},
		{"huge prompt", map[string]any{"prompt": strings.Repeat("x", scheduler.MaxPrompt+1)}, []string{"prompt: ", "at most"}},
		{"no schedule", map[string]any{"schedule": nil}, []string{"missing required param schedule"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"chat_jid": "web:acme", "prompt": "p", "schedule": "@daily"}
			for k, v := range tc.args {
				args[k] = v
			}
			r := call(t, c, "schedule_task", args)
			if !r.IsError || r.refused() {
				t.Fatalf("want an error, got %+v", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Text, w) {
					t.Errorf("error %q does not mention %q", r.Text, w)
				}
			}
		})
	}
	if tasks, err := h.st.Tasks(context.Background(), "", false); err != nil || len(tasks) != 0 {
		t.Errorf("tasks stored after refused calls: %v %v", tasks, err)
	}
}

// TestTaskToolsSubtree: a group sees and changes the tasks of its subtree
// only, the operator all of them; a task's chat must be owned by the
// caller's subtree, and its folder is always the caller's own.
func TestTaskToolsSubtree(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	root, acme := h.connect(t, "root", true), h.connect(t, "acme", true)
	eng := h.connect(t, "acme/eng", true)
	var rootTask, acmeTask, onAcmeChat task
	call(t, root, "schedule_task", map[string]any{"chat_jid": "web:root", "prompt": "operator report", "schedule": "@weekly"}).decode(t, &rootTask)
	call(t, acme, "schedule_task", map[string]any{"chat_jid": "web:eng", "prompt": "eng digest", "schedule": "every 1h"}).decode(t, &acmeTask)
	// The operator may schedule on any chat, but the task is its own.
	call(t, root, "schedule_task", map[string]any{"chat_jid": "web:acme", "prompt": "audit", "schedule": "@monthly"}).decode(t, &onAcmeChat)
	if acmeTask.Folder != "acme" || onAcmeChat.Folder != "root" || onAcmeChat.CreatedBy != "root" {
		t.Errorf("folders: acme's task in %s, operator's in %s (created by %s)", acmeTask.Folder, onAcmeChat.Folder, onAcmeChat.CreatedBy)
	}
	// A subgroup's task, as the operator's CLI would add it.
	engTask, err := ops.AddTask(ctx, h.st, scheduler.TaskSpec{Folder: "acme/eng", ChatJID: "web:eng", Prompt: "triage",
		Schedule: "@hourly", CreatedBy: "operator"}, "UTC")
	if err != nil {
		t.Fatal(err)
	}

	for _, v := range []struct {
		folder groups.Folder
		want   []int64
	}{
		{"root", []int64{rootTask.ID, acmeTask.ID, onAcmeChat.ID, engTask.ID}},
		{"acme", []int64{acmeTask.ID, engTask.ID}},
		{"acme/eng", []int64{engTask.ID}},
	} {
		for _, tool := range []string{"list_tasks", "inspect_tasks"} {
			var l taskList
			call(t, h.connect(t, v.folder, true), tool, nil).decode(t, &l)
			if !slices.Equal(l.ids(), v.want) {
				t.Errorf("%s %s: tasks %v, want %v", v.folder, tool, l.ids(), v.want)
			}
		}
	}

	outside := fmt.Sprintf("task %d belongs to group root, outside your subtree", rootTask.ID)
	for _, tool := range []string{"pause_task", "resume_task", "cancel_task", "inspect_tasks"} {
		if r := call(t, acme, tool, map[string]any{"id": rootTask.ID}); !r.IsError || !strings.Contains(r.Text, outside) {
			t.Errorf("acme %s on the operator's task: %+v", tool, r)
		}
	}
	if r := call(t, eng, "inspect_tasks", map[string]any{"id": acmeTask.ID}); !r.IsError || !strings.Contains(r.Text, "belongs to group acme, outside your subtree") {
		t.Errorf("acme/eng inspecting its parent's task: %+v", r)
	}
	if got, _ := h.st.Task(ctx, rootTask.ID); got.Status != "active" {
		t.Errorf("the operator's task is %s after refused calls", got.Status)
	}
	// Down the tree is allowed: acme pauses its subgroup's task.
	var paused task
	call(t, acme, "pause_task", map[string]any{"id": engTask.ID}).decode(t, &paused)
	if paused.Status != "paused" || paused.Folder != "acme/eng" {
		t.Errorf("acme pausing acme/eng's task: %+v", paused)
	}
	// The task's chat must be owned by the caller's subtree.
	for _, chat := range []string{"web:root", "web:nobody"} {
		if r := call(t, acme, "schedule_task", map[string]any{"chat_jid": chat, "prompt": "x", "schedule": "@daily"}); !r.refused() {
			t.Errorf("acme scheduling on %s: %+v", chat, r)
		}
	}
	// Tier 2 reads but does not schedule.
	if r := call(t, eng, "schedule_task", map[string]any{"chat_jid": "web:eng", "prompt": "x", "schedule": "@daily"}); !r.refused() {
		t.Errorf("tier 2 schedule_task: %+v", r)
	}
	if r := call(t, eng, "pause_task", map[string]any{"id": engTask.ID}); !r.refused() {
		t.Errorf("tier 2 pause_task: %+v", r)
	}
}

// TestScheduledTaskRuns: a task scheduled over MCP fires at its instant as a
// task turn of the caller's folder, its stdout reply goes to the task's
// chat, and inspect_tasks shows the run with its turn.
func TestScheduledTaskRuns(t *testing.T) {
	h := newHarnessAgent(t, nil, []string{"sh", "-c", `cat >/dev/null; echo "ran $SWITCHBOARD_TRIGGER $SWITCHBOARD_TASK_ID"`})
	c := h.connect(t, "acme", true)
	at := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second)
	var tk task
	call(t, c, "schedule_task", map[string]any{"chat_jid": "web:acme", "prompt": "say hi", "schedule": at.Format(time.RFC3339)}).decode(t, &tk)
	if tk.Kind != "once" || tk.NextRun == nil {
		t.Fatalf("one-shot task %+v", tk)
	}
	var run task
	testwait.For(t, 15*time.Second, "the task's run to succeed", func() bool {
		var l taskList
		call(t, c, "inspect_tasks", map[string]any{"id": tk.ID}).decode(t, &l)
		run = l.Tasks[0]
		return len(run.Runs) == 1 && run.Runs[0].Status == "succeeded"
	})
	r := run.Runs[0]
	slot, _ := time.Parse(time.RFC3339, r.Slot)
	started, _ := time.Parse(time.RFC3339, r.Started)
	if !slot.Equal(at) || started.Before(at) || r.TurnID == "" || r.Error != "" || run.Status != "completed" || run.NextRun != nil {
		t.Errorf("task after its run %+v (slot %s)", run, at.Format(time.RFC3339))
	}
	want := fmt.Sprintf("ran task %d", tk.ID)
	testwait.For(t, 10*time.Second, "the reply in web:acme", func() bool {
		for _, m := range h.web.sends() {
			if m.Chat == "web:acme" && m.Text == want {
				return true
			}
		}
		return false
	})
}

// TestPreviewSchedule: fire times in the zone with its offset, the default
// zone when none is given, and errors naming the field.
func TestPreviewSchedule(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	var p struct {
		Schedule string   `json:"schedule"`
		Timezone string   `json:"timezone"`
		Kind     string   `json:"kind"`
		Next     []string `json:"next"`
	}
	call(t, c, "preview_schedule", map[string]any{"schedule": "30 2 * * *", "timezone": "America/New_York", "count": 4}).decode(t, &p)
	ny, _ := time.LoadLocation("America/New_York")
	if p.Timezone != "America/New_York" || p.Kind != "cron" || len(p.Next) != 4 {
		t.Fatalf("preview %+v", p)
	}
	for _, s := range p.Next {
		ts, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		_, off := ts.In(ny).Zone()
		if wantSuffix := fmt.Sprintf("-%02d:00", -off/3600); !strings.HasSuffix(s, wantSuffix) {
			t.Errorf("%s does not carry New York's offset %s", s, wantSuffix)
		}
		// 02:30, or 03:00 on the night the clocks skip 02:30.
		if l := ts.In(ny); !(l.Hour() == 2 && l.Minute() == 30) && !(l.Hour() == 3 && l.Minute() == 0) {
			t.Errorf("slot %s is not 02:30 in New York", l)
		}
	}
	call(t, c, "preview_schedule", map[string]any{"schedule": "every 15m"}).decode(t, &p)
	if p.Timezone != "UTC" || p.Kind != "interval" || len(p.Next) != scheduler.DefaultPreview || !strings.HasSuffix(p.Next[0], "Z") {
		t.Errorf("default preview %+v", p)
	}
	call(t, c, "preview_schedule", map[string]any{"schedule": "2001-01-01T00:00:00Z"}).decode(t, &p)
	if p.Kind != "once" || p.Next == nil || len(p.Next) != 0 {
		t.Errorf("past one-shot preview %+v", p)
	}
	for _, bad := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"schedule": "nonsense"}, "schedule: bad schedule"},
		{map[string]any{"schedule": "@daily", "timezone": "Mars/Base"}, "timezone: unknown time zone"},
	} {
		if r := call(t, c, "preview_schedule", bad.args); !r.IsError || !strings.Contains(r.Text, bad.want) {
			t.Errorf("preview %v: %+v, want an error mentioning %q", bad.args, r, bad.want)
		}
	}
}

// A group's task answers in a chat its subtree owned when it was
// scheduled; once the routes give that chat to another group, its runs
// are skipped, saying why, instead of the group's agent posting into the
// other group's chat (an MCP send there would be refused).
func TestTaskRunSkippedWhenItsChatChangedOwner(t *testing.T) {
	h := newHarnessAgent(t, nil, []string{"sh", "-c", `cat >/dev/null; echo "ran $SWITCHBOARD_TRIGGER $SWITCHBOARD_TASK_ID"`})
	c := h.connect(t, "acme", true)
	at := time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second)
	var tk task
	call(t, c, "schedule_task", map[string]any{"chat_jid": "web:acme", "prompt": "say hi", "schedule": at.Format(time.RFC3339)}).decode(t, &tk)
	// The operator gives web:acme to root before the run.
	if r := call(t, h.connect(t, "root", true), "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "root", "seq": -100}); r.IsError {
		t.Fatal(r.Text)
	}
	var run task
	testwait.For(t, 15*time.Second, "the task's run to settle", func() bool {
		var l taskList
		call(t, c, "inspect_tasks", map[string]any{"id": tk.ID}).decode(t, &l)
		run = l.Tasks[0]
		return len(run.Runs) == 1 && run.Runs[0].Status != "fired"
	})
	if r := run.Runs[0]; r.Status != "skipped" || !strings.Contains(r.Error, "web:acme") || !strings.Contains(r.Error, "root") {
		t.Errorf("the run after web:acme went to root: %+v; want skipped, naming the chat and its owner", r)
	}
	for _, m := range h.web.sends() {
		if strings.HasPrefix(m.Text, "ran task") {
			t.Errorf("acme's task posted into root's chat %s: %q", m.Chat, m.Text)
		}
	}
}

// A run that fell due while its group's agent was busy waits in the queue;
// cancelling (or pausing) the task before it starts drops it, recorded
// as skipped with the reason. Before, the queued runs of a task that fires
// faster than its turns finish went on for as long as the queue lasted
// after cancel_task ("cancelled tasks stop for good", CONTRACT §10).
func TestQueuedRunDroppedWhenTaskStops(t *testing.T) {
	for _, stop := range []struct{ name, tool, schedule, reason string }{
		{"cancel_task", "cancel_task", "every 10s", "cancelled"},
		{"pause_task", "pause_task", "every 10s", "paused"},
		// A one-shot is completed once its run is claimed; its queued run
		// can still be cancelled ("cancel my 3 pm reminder" answered
		// while the reminder waits behind that very turn).
		{"cancel_task one-shot", "cancel_task", "one-shot", "cancelled"},
	} {
		t.Run(stop.name, func(t *testing.T) {
			release := filepath.Join(t.TempDir(), "release")
			h := newHarnessAgent(t, nil, []string{"sh", "-c", `cat >/dev/null
if [ "$SWITCHBOARD_TRIGGER" = message ]; then while [ ! -e ` + release + ` ]; do sleep 0.05; done; fi
echo "ran $SWITCHBOARD_TRIGGER $SWITCHBOARD_TASK_ID"`})
			c := h.connect(t, "acme", true)
			// acme's agent is busy answering a message...
			h.deliver(t, "web:acme", "m1", "a long job")
			testwait.For(t, 10*time.Second, "acme's turn to start", func() bool {
				var s struct {
					Running any `json:"running"`
				}
				call(t, c, "inspect_session", nil).decode(t, &s)
				return s.Running != nil
			})
			// ... when its task falls due: the run is queued behind it.
			var tk task
			schedule := stop.schedule
			if schedule == "one-shot" {
				schedule = time.Now().Add(1500 * time.Millisecond).Truncate(time.Second).Add(time.Second).Format(time.RFC3339)
			}
			call(t, c, "schedule_task", map[string]any{"chat_jid": "web:acme", "prompt": "say hi", "schedule": schedule}).decode(t, &tk)
			runs := func() []string {
				var l taskList
				call(t, c, "inspect_tasks", map[string]any{"id": tk.ID}).decode(t, &l)
				var out []string
				for _, r := range l.Tasks[0].Runs {
					out = append(out, r.Status+": "+r.Error)
				}
				return out
			}
			testwait.For(t, 30*time.Second, "the run to be queued", func() bool { return len(runs()) == 1 })
			if r := call(t, c, stop.tool, map[string]any{"id": tk.ID}); r.IsError {
				t.Fatal(r.Text)
			}
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var got []string
			testwait.For(t, 15*time.Second, "the run to settle", func() bool {
				got = runs()
				return len(got) == 1 && !strings.HasPrefix(got[0], "fired")
			})
			if !strings.HasPrefix(got[0], "skipped: ") || !strings.Contains(got[0], stop.reason) {
				t.Errorf("the queued run after %s: %q, want skipped, saying the task was %s", stop.tool, got[0], stop.reason)
			}
			testwait.For(t, 10*time.Second, "the message's answer", func() bool {
				return slices.ContainsFunc(h.web.sends(), func(m adapters.Outbound) bool { return strings.HasPrefix(m.Text, "ran message") })
			})
			for _, m := range h.web.sends() {
				if strings.HasPrefix(m.Text, "ran task") {
					t.Errorf("the task ran after %s: %q", stop.tool, m.Text)
				}
			}
		})
	}
}
