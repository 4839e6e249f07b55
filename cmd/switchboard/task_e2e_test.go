package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
	"switchboard/scheduler"
	"switchboard/store"
)

// The agent of the task tests names the task it ran for.
const taskAgent = `echo "task $SWITCHBOARD_TASK_ID ran in $SWITCHBOARD_FOLDER"`

// cliTask is a task as `switchboard --json task add|list` prints it.
type cliTask struct {
	ID      int64   `json:"id"`
	Folder  string  `json:"folder"`
	Status  string  `json:"status"`
	NextRun *string `json:"next_run"`
}

// cliRun is a run as `switchboard --json task runs` prints it.
type cliRun struct {
	Slot    string `json:"slot"`
	Status  string `json:"status"`
	Started string `json:"started"`
	TurnID  string `json:"turn_id"`
	Error   string `json:"error"`
}

// addTask runs `task add` with args and returns the new task's id.
func addTask(t *testing.T, bin, dir string, args ...string) int64 {
	t.Helper()
	out, err := runCLI(bin, dir, append([]string{"--json", "task", "add"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var tk cliTask
	if err := json.Unmarshal([]byte(out), &tk); err != nil || tk.ID == 0 || tk.Status != "active" {
		t.Fatalf("task add printed %q (%v)", out, err)
	}
	return tk.ID
}

func taskRuns(t *testing.T, bin, dir string, id int64) []cliRun {
	t.Helper()
	out, err := runCLI(bin, dir, "--json", "task", "runs", fmt.Sprint(id))
	if err != nil {
		t.Fatal(err)
	}
	var runs []cliRun
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatalf("task runs printed %q: %v", out, err)
	}
	return runs
}

func taskList(t *testing.T, bin, dir string) map[int64]cliTask {
	t.Helper()
	out, err := runCLI(bin, dir, "--json", "task", "list")
	if err != nil {
		t.Fatal(err)
	}
	var list []cliTask
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("task list printed %q: %v", out, err)
	}
	byID := map[int64]cliTask{}
	for _, tk := range list {
		byID[tk.ID] = tk
	}
	return byID
}

// waitRun waits until task id has a finished run and returns its runs.
func waitRun(t *testing.T, bin, dir string, id int64) []cliRun {
	t.Helper()
	var runs []cliRun
	testwait.For(t, 15*time.Second, fmt.Sprintf("a finished run of task %d", id), func() bool {
		runs = taskRuns(t, bin, dir, id)
		return len(runs) > 0 && runs[0].Status != "fired"
	})
	return runs
}

// soon is a whole-second instant 2 to 3 seconds from now.
// soon is a one-shot instant far enough ahead that the CLI processes adding
// tasks for it start before it passes on a loaded machine (2 s was not:
// "the time is already past" under make test beside other builds).
func soon() time.Time { return time.Now().Add(5 * time.Second).Truncate(time.Second).Add(time.Second) }

// A one-shot task added with the CLI while the gateway runs fires once at
// its instant as a task turn of its folder (CONTRACT §8, §10): the agent
// sees SWITCHBOARD_TRIGGER=task, SWITCHBOARD_TASK_ID and a <task> element,
// its stdout reply lands in the task's chat, `task runs` shows the run
// succeeded with the turn's id, and the task is completed. A task whose
// chat is routed with mode observe runs all the same.
func TestE2ETaskOneShot(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: taskAgent, groups: []string{"ops"}, routes: `  - {match: {platform: web, room: quiet}, target: ops, mode: observe}
  - {match: {platform: web}, target: main}
`})
	g := startGW(t, dir)
	at := soon()
	mainID := addTask(t, g.bin, dir, "--folder", "main", "--jid", "web:lobby", "--schedule", at.Format(time.RFC3339), "--prompt", "post the <digest>")
	opsID := addTask(t, g.bin, dir, "--folder", "ops", "--jid", "web:quiet", "--schedule", at.Format(time.RFC3339), "--prompt", "sum up the quiet room")

	if got := g.waitBot("lobby", 1); len(got) != 1 || got[0].Text != fmt.Sprintf("task %d ran in main", mainID) {
		t.Errorf("lobby bot messages %+v", got)
	}
	if got := g.waitBot("quiet", 1); len(got) != 1 || got[0].Text != fmt.Sprintf("task %d ran in ops", opsID) {
		t.Errorf("quiet (observe route) bot messages %+v", got)
	}

	env := turnEnv(t, dir, "main", 1)
	for k, want := range map[string]string{"SWITCHBOARD_TRIGGER": "task", "SWITCHBOARD_TASK_ID": fmt.Sprint(mainID),
		"SWITCHBOARD_FOLDER": "main", "SWITCHBOARD_CHAT_JID": "web:lobby"} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	prompt := turnFile(t, dir, "main", "prompt", 1)
	task := regexp.MustCompile(fmt.Sprintf(`(?m)^<task id="%d" run="\d+">post the &lt;digest&gt;</task>$`, mainID))
	if !strings.Contains(prompt, `trigger="task"`) || !strings.Contains(prompt, `chat="web:lobby"`) || !task.MatchString(prompt) {
		t.Errorf("task turn prompt:\n%s", prompt)
	}
	if env := turnEnv(t, dir, "ops", 1); env["SWITCHBOARD_TRIGGER"] != "task" || env["SWITCHBOARD_TASK_ID"] != fmt.Sprint(opsID) {
		t.Errorf("ops task turn env %v", env)
	}

	for _, c := range []struct {
		id     int64
		folder string
	}{{mainID, "main"}, {opsID, "ops"}} {
		runs := waitRun(t, g.bin, dir, c.id)
		if len(runs) != 1 {
			t.Fatalf("task %d has %d runs, want 1: %+v", c.id, len(runs), runs)
		}
		r := runs[0]
		slot, _ := time.Parse(time.RFC3339, r.Slot)
		started, _ := time.Parse(time.RFC3339, r.Started)
		if r.Status != "succeeded" || r.Error != "" || !slot.Equal(at) || started.Before(at) {
			t.Errorf("task %d run %+v; want succeeded for slot %s, started at or after it", c.id, r, at.Format(time.RFC3339))
		}
		if turn := turnEnv(t, dir, c.folder, 1)["SWITCHBOARD_TURN_ID"]; r.TurnID == "" || r.TurnID != turn {
			t.Errorf("task %d run's turn %q, the agent's SWITCHBOARD_TURN_ID %q", c.id, r.TurnID, turn)
		}
	}
	list := taskList(t, g.bin, dir)
	for _, id := range []int64{mainID, opsID} {
		if tk := list[id]; tk.Status != "completed" || tk.NextRun != nil {
			t.Errorf("task %d after its one run: %+v", id, tk)
		}
	}
	if n, m := turnCount(dir, "main"), turnCount(dir, "ops"); n != 1 || m != 1 {
		t.Errorf("%d turns of main and %d of ops; each one-shot runs once", n, m)
	}
}

// Missed runs across a restart (docs/scheduling.md): a slot that fell due
// while the gateway was down by less than the scheduler's one-minute grace
// runs normally at start; an older one follows the task's missed policy —
// skip runs nothing (a one-shot then completes without a run), once runs it
// once.
func TestE2ETaskMissedAcrossRestart(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: taskAgent})
	first := startGW(t, dir)
	if err := first.stop(15 * time.Second); err != nil {
		t.Fatalf("first gateway: %v", err)
	}
	bin := first.bin

	// Written while the gateway is down as the CLI would have written them
	// (it refuses an instant in the past): one due a second ago, which the
	// restart finds late by less than the grace; two due two minutes ago,
	// as if created before a long downtime.
	late := time.Now().Add(-time.Second).Truncate(time.Second)
	past := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int64{}
	for _, tc := range []struct {
		name, prompt, missed string
		at                   time.Time
	}{
		{"late", "a little late", "", late}, // the default policy: skip
		{"skip", "long missed, skip", "skip", past},
		{"once", "long missed, once", "once", past},
	} {
		tk, err := scheduler.NewTask(scheduler.TaskSpec{Folder: "main", ChatJID: "web:lobby", Prompt: tc.prompt,
			Schedule: tc.at.Format(time.RFC3339), Missed: tc.missed, CreatedBy: "operator"}, "UTC", tc.at.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if tk, err = st.AddTask(context.Background(), tk); err != nil {
			t.Fatal(err)
		}
		ids[tc.name] = tk.ID
	}
	st.Close()
	lateID := ids["late"]

	g := startGW(t, dir)
	lateRuns, once := waitRun(t, bin, dir, lateID), waitRun(t, bin, dir, ids["once"])
	for name, runs := range map[string][]cliRun{"late by seconds": lateRuns, "missed, once": once} {
		if len(runs) != 1 || runs[0].Status != "succeeded" {
			t.Errorf("%s: runs %+v, want one succeeded", name, runs)
		}
	}
	if slot, _ := time.Parse(time.RFC3339, once[0].Slot); !slot.Equal(past) {
		t.Errorf("catch-up run's slot %s, want the missed %s", once[0].Slot, past.Format(time.RFC3339))
	}
	testwait.For(t, 5*time.Second, "the skipped task to complete", func() bool {
		return taskList(t, bin, dir)[ids["skip"]].Status == "completed"
	})
	if runs := taskRuns(t, bin, dir, ids["skip"]); len(runs) != 0 {
		t.Errorf("missed=skip ran: %+v", runs)
	}
	if rec := g.findLog("missed runs"); rec == nil {
		t.Error("no \"missed runs\" log record")
	}
	bots := g.waitBot("lobby", 2)
	texts := map[string]bool{}
	for _, m := range bots {
		texts[m.Text] = true
	}
	for _, id := range []int64{lateID, ids["once"]} {
		if !texts[fmt.Sprintf("task %d ran in main", id)] {
			t.Errorf("no reply of task %d in %+v", id, bots)
		}
	}
	list := taskList(t, bin, dir)
	for _, id := range []int64{lateID, ids["skip"], ids["once"]} {
		if list[id].Status != "completed" {
			t.Errorf("task %d is %s, want completed", id, list[id].Status)
		}
	}
	if n := turnCount(dir, "main"); n != 2 || len(bots) != 2 {
		t.Errorf("%d turns and %d replies; want 2 (late and once; skip runs nothing)", n, len(bots))
	}
}

// TestDemoAgentTasks: the demo agent schedules with /every (schedule_task),
// lists with /tasks (list_tasks), shows the scheduler's refusal of a bad
// interval, and answers a task turn with the send tool in the task's chat.
func TestDemoAgentTasks(t *testing.T) {
	dir := shortDir(t)
	base := gatewayRun(t, dir, helperArgv("demo-agent"))
	post(t, base, "lobby", "/every 10s stretch your legs")
	bots := waitBots(t, dir, base, "lobby", 1)
	if !regexp.MustCompile(`^Scheduled task 1: "stretch your legs" every 10s, next run \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\.`).MatchString(bots[0].Text) {
		t.Errorf("/every reply %q", bots[0].Text)
	}
	post(t, base, "lobby", "/tasks")
	bots = waitBots(t, dir, base, "lobby", 2)
	if want := `#1 [active] every 10s in web:lobby (main), next run `; !strings.Contains(bots[1].Text, want) || !strings.Contains(bots[1].Text, `"stretch your legs"`) {
		t.Errorf("/tasks reply %q, want it to contain %q", bots[1].Text, want)
	}
	post(t, base, "lobby", "/every 2s too often")
	bots = waitBots(t, dir, base, "lobby", 3)
	if !strings.HasPrefix(bots[2].Text, "Could not schedule that: ") || !strings.Contains(bots[2].Text, "shorter than the minimum 10s") {
		t.Errorf("/every 2s reply %q", bots[2].Text)
	}
	// A task turn: cancel the interval task so only this one-shot fires.
	mustSB(t, dir, "task", "cancel", "1")
	mustSB(t, dir, "task", "add", "--folder", "main", "--jid", "web:lobby", "--schedule", soon().Format(time.RFC3339), "--prompt", "water the plants")
	bots = waitBots(t, dir, base, "lobby", 4)
	if len(bots) != 4 || bots[3].Text != "Scheduled task ran: water the plants" {
		t.Fatalf("bot messages %+v", bots)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	items, err := st.Outbox(context.Background(), "web:lobby", 100)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[store.OutboxKind]int{}
	for _, it := range items {
		if !strings.HasPrefix(it.Key, "mcp-") {
			t.Errorf("outbox item %s (%s) did not come from an MCP tool", it.Key, it.Kind)
		}
		kinds[it.Kind]++
	}
	if kinds["reply"] != 3 || kinds["send"] != 1 {
		t.Errorf("outbox kinds %v; want 3 replies and the task turn's send", kinds)
	}
}
