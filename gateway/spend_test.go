package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/ops"
	"switchboard/scheduler"
	"switchboard/store"
)

// TestTurnUsageFromClaudeJSON: a turn's cost and tokens come from Claude
// Code's JSON; a resumed session's running total is turned into what the
// turn added; Prometheus counts dollars and tokens by tier only.
func TestTurnUsageFromClaudeJSON(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "agent", "testdata", "claude-json"))
	script := testagent.Script(t, `cat >/dev/null; if [ "$2" = "--resume" ]; then cat "$1/resumed.json"; else cat "$1/fresh.json"; fi`, dir)
	h := newHarness(t, harnessConfig{agent: script, modify: func(o *Options) {
		o.Agent.Output = agent.OutputClaudeJSON
		o.Agent.ResumeArgs = []string{"--resume", "{session}"}
	}})
	h.post(testChat, "m1", "hello")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "again")
	h.waitSent(testChat, 2)
	ts := h.turns("main")
	if len(ts) != 2 {
		t.Fatalf("turns %+v", ts)
	}
	first, second := ts[0].Usage, ts[1].Usage
	if first.CostUSD != 0.016656 || first.InputTokens != 1234 || first.OutputTokens != 56 || first.CacheCreationTokens != 2000 ||
		first.CacheReadTokens != 3000 || first.NumTurns != 1 || first.APIDuration.Milliseconds() != 273 {
		t.Errorf("first turn usage %+v, want Claude Code's figures", first)
	}
	if d := second.CostUSD - 0.016656; d > 1e-9 || d < -1e-9 || second.SessionCost != 0.033312 {
		t.Errorf("resumed turn usage %+v, want cost 0.016656 (the session's total 0.033312 minus the first turn's)", second)
	}
	m := scrape(t, h.g)
	for _, want := range []string{`switchboard_turn_cost_usd_total{folder_tier="1"} 0.033312`, `switchboard_turn_tokens_total{folder_tier="1",kind="input"} 2468`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestTurnUsageFromTextTrailer: a text agent's usage trailer is recorded
// and is not part of the reply.
func TestTurnUsageFromTextTrailer(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; echo 'the answer'; echo '{"switchboard_usage": {"cost_usd": 0.02, "output_tokens": 9}}'`)})
	h.post(testChat, "m1", "hello")
	if got := h.waitSent(testChat, 1)[0].Text; got != "the answer" {
		t.Errorf("reply %q, want the text without its usage trailer", got)
	}
	if u := h.turns("main")[0].Usage; u.CostUSD != 0.02 || u.OutputTokens != 9 {
		t.Errorf("usage %+v, want $0.02 and 9 output tokens", u)
	}
}

// TestBudgetHoldsTurnsAndResumes: with a daily cap of $1.50 and $1 per
// turn, the second turn uses the budget up; messages after it start no
// turn, are stored, and the chat gets one notice. Raising the cap (a
// store write, as the CLI does) lets the held messages be answered in
// the next turn.
func TestBudgetHoldsTurnsAndResumes(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	// Replies "reply N" with the prompt's message ids, and reports $1.
	body := `cat > "$0.prompt"; n=$(ls "$0".d 2>/dev/null | wc -l); mkdir -p "$0.d"; cp "$0.prompt" "$0.d/$n"
echo "reply $n"; echo '{"switchboard_usage": {"cost_usd": 1}}'`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	// A chat limit of 3 turns an hour: a turn the budget holds must not
	// count (turns 1 and 2 do), or the turn after the raise would be held
	// by the flood limit instead of running.
	h := newHarness(t, harnessConfig{agent: []string{"/bin/sh", script}, modify: func(o *Options) {
		o.Timezone = "Europe/Berlin"
		o.Limits.TurnsPerChat = Rate{Count: 3, Window: time.Hour}
	}})
	ctx := context.Background()
	setBudget(t, h, store.Budget{Folder: "main", DailyUSD: 1.5})
	h.post(testChat, "m1", "one")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "two")
	h.waitSent(testChat, 2)
	// $2 spent of $1.50: the burst below is held.
	for i := 3; i <= 6; i++ {
		h.post(testChat, fmt.Sprintf("m%d", i), "more")
	}
	sent := h.waitSent(testChat, 3)
	if !strings.Contains(sent[2].Text, "daily budget of $1.50 is used up ($2.00 spent); it resumes at 00:00 Europe/Berlin") {
		t.Fatalf("third message %q, want the budget notice", sent[2].Text)
	}
	h.post(testChat, "m7", "still more")
	if n := len(h.turns("main")); n != 2 {
		t.Errorf("%d turns after the budget was used up, want 2", n)
	}
	if err := h.st.SetBudget(ctx, store.Budget{Folder: "main", DailyUSD: 10}); err != nil {
		t.Fatal(err)
	}
	sent = h.waitSent(testChat, 4)
	if sent[3].Text != "reply 2" {
		t.Errorf("after raising the cap: %q, want the third turn's reply", sent[3].Text)
	}
	ts := h.turns("main")
	if len(ts) != 3 {
		t.Fatalf("%d turns, want 3: the held messages answered in one turn", len(ts))
	}
	prompt, err := os.ReadFile(filepath.Join(script+".d", "2"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 3; i <= 7; i++ {
		if !strings.Contains(string(prompt), fmt.Sprintf(`id="m%d"`, i)) {
			t.Errorf("the turn after the raise lacks message m%d:\n%s", i, prompt)
		}
	}
	notices := 0
	for _, s := range h.fa.sentTo(testChat) {
		if strings.Contains(s.Text, "budget") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d budget notices, want one per window", notices)
	}
}

// TestBudgetSkipsTasks: a task of a group whose parent's budget is used
// up is skipped with the reason recorded on its run, not failed.
func TestBudgetSkipsTasks(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; echo ok; echo '{"switchboard_usage": {"cost_usd": 3}}'`),
		groups: []string{"main/sub"}})
	ctx := context.Background()
	setBudget(t, h, store.Budget{Folder: "main", MonthlyUSD: 2})
	h.post(testChat, "m1", "spend it") // main spends $3 of its $2
	h.waitSent(testChat, 1)
	task, err := ops.AddTask(ctx, h.st, scheduler.TaskSpec{Folder: "main/sub", ChatJID: testChat, Prompt: "report",
		Schedule: time.Now().Add(time.Second).UTC().Format(time.RFC3339)}, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	h.g.sched.Wake()
	var runs []store.TaskRun
	testwait.For(t, 10*time.Second, "the task's run settled", func() bool {
		runs, err = h.st.TaskRuns(ctx, task.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(runs) == 1 && runs[0].Status != "fired"
	})
	if runs[0].Status != store.RunSkipped || !strings.Contains(runs[0].Error, "monthly budget (set on main, covering its subgroups) of $2.00 is used up ($3.00 spent)") {
		t.Errorf("run %+v, want skipped with the budget as reason", runs[0])
	}
	if n := len(h.turns("main/sub")); n != 0 {
		t.Errorf("main/sub ran %d turns", n)
	}
	if p := h.pending(); len(p) != 0 {
		t.Errorf("work left pending: %v", p)
	}
}

// TestTaskRunShowsCost: a task run's history (inspect_tasks, task runs)
// carries the cost its turn reported.
func TestTaskRunShowsCost(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; echo done; echo '{"switchboard_usage": {"cost_usd": 0.25}}'`)})
	ctx := context.Background()
	task, err := ops.AddTask(ctx, h.st, scheduler.TaskSpec{Folder: "main", ChatJID: testChat, Prompt: "report",
		Schedule: time.Now().Add(time.Second).UTC().Format(time.RFC3339)}, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	h.g.sched.Wake()
	h.waitSent(testChat, 1)
	var runs []store.TaskRun
	testwait.For(t, 10*time.Second, "the run settled", func() bool {
		runs, err = h.g.backend.TaskRuns(ctx, task.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(runs) == 1 && runs[0].Status == string(store.TurnSucceeded)
	})
	if runs[0].CostUSD != 0.25 {
		t.Errorf("run %+v, want its turn's cost $0.25", runs[0])
	}
}

// TestBudgetHoldSurvivesRestart: a chat held by a budget stays held across
// a restart, and a cap raised while the gateway was down lets its messages
// be answered at the next start.
func TestBudgetHoldSurvivesRestart(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; echo answered; echo '{"switchboard_usage": {"cost_usd": 2}}'`)})
	ctx := context.Background()
	setBudget(t, h, store.Budget{Folder: "main", MonthlyUSD: 1})
	h.post(testChat, "m1", "one")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "held")
	wantBudgetNotice(t, h, 2, "monthly budget of $1.00 is used up")
	h.restart(nil)
	h.post(testChat, "m3", "still held")
	if err := h.st.SetBudget(ctx, store.Budget{Folder: "main", MonthlyUSD: 1}); err != nil { // a no-op change: still used up
		t.Fatal(err)
	}
	h.stop()
	if err := h.st.SetBudget(ctx, store.Budget{Folder: "main", MonthlyUSD: 100}); err != nil {
		t.Fatal(err)
	}
	h.restart(nil)
	if got := h.waitSent(testChat, 1)[0].Text; got != "answered" {
		t.Errorf("after the restart with the cap raised: %q, want the held messages answered", got)
	}
	if ts := h.turns("main"); len(ts) != 2 {
		t.Errorf("%d turns, want 2 (m2 and m3 answered together)", len(ts))
	}
}

// TestMaxTurnBudgetIsNotRetried: a Claude Code run stopped by
// --max-budget-usd (agent.max_turn_usd) is recorded with its cost and not
// run again: a retry would spend as much again.
func TestMaxTurnBudgetIsNotRetried(t *testing.T) {
	fixture, _ := filepath.Abs(filepath.Join("..", "agent", "testdata", "claude-json", "max_budget.json"))
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; cat "$1"; exit 1`, fixture),
		modify: func(o *Options) { o.Agent.Output = agent.OutputClaudeJSON }})
	h.post(testChat, "m1", "expensive")
	if got := h.waitSent(testChat, 1)[0].Text; !strings.Contains(got, "could not answer") {
		t.Errorf("notice %q, want the final one", got)
	}
	testwait.For(t, 5*time.Second, "no work left", func() bool { return len(h.pending()) == 0 })
	ts := h.turns("main")
	if len(ts) != 1 || ts[0].Status != store.TurnFailed || ts[0].Usage.CostUSD != 0.016656 {
		t.Errorf("turns %+v, want one failed turn that cost $0.016656", ts)
	}
}

// A misspelt timezone stops New with the zone named, instead of budget
// days, months and notices' clock times silently following UTC.
func TestNewRefusesUnknownTimezone(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "db.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = New(Options{Store: st, DataDir: t.TempDir(), Operator: "root", Agent: agent.Spec{Command: []string{"true"}},
		Exe: "switchboard", Timezone: "Europe/Berln"})
	if err == nil || !strings.Contains(err.Error(), "timezone") || !strings.Contains(err.Error(), `"Europe/Berln"`) {
		t.Fatalf("New with timezone Europe/Berln: %v; want an error naming the timezone", err)
	}
}

// TestBudgetSkipsTaskRunsOfAHeldChat: while a used-up budget holds a
// chat's messages, the runs of a task in that chat that fall due (here
// five catch-up slots at once) are skipped with the reason, not left
// queued behind the held messages; raising the cap answers the held
// message and runs no backlog of task turns.
func TestBudgetSkipsTaskRunsOfAHeldChat(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; echo "answered $SWITCHBOARD_TRIGGER"; echo '{"switchboard_usage": {"cost_usd": 2}}'`)})
	ctx := context.Background()
	setBudget(t, h, store.Budget{Folder: "main", MonthlyUSD: 1})
	h.post(testChat, "m1", "spend it")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "held")
	wantBudgetNotice(t, h, 2, "monthly budget of $1.00 is used up")
	// A task of the held chat whose slots fell due over the last minutes:
	// missed "all" queues every slot at once.
	now := time.Now()
	task, err := scheduler.NewTask(scheduler.TaskSpec{Folder: "main", ChatJID: testChat, Prompt: "report", Schedule: "@every 1m",
		Missed: string(scheduler.MissedAll)}, "UTC", now)
	if err != nil {
		t.Fatal(err)
	}
	task.Next = now.Add(-5*time.Minute - 30*time.Second)
	if task, err = h.st.AddTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	h.g.sched.Wake()
	var runs []store.TaskRun
	testwait.For(t, 10*time.Second, "the task's runs settled", func() bool {
		runs, err = h.g.backend.TaskRuns(ctx, task.ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) < 2 {
			return false
		}
		for _, r := range runs {
			if r.Status == "fired" {
				return false
			}
		}
		return true
	})
	for _, r := range runs {
		if r.Status != store.RunSkipped || !strings.Contains(r.Error, "skipped: monthly budget of $1.00 is used up ($2.00 spent)") {
			t.Errorf("run %+v, want skipped with the budget as reason", r)
		}
	}
	if err := h.st.SetBudget(ctx, store.Budget{Folder: "main", MonthlyUSD: 100}); err != nil {
		t.Fatal(err)
	}
	if got := h.waitSent(testChat, 3)[2].Text; got != "answered message" {
		t.Errorf("after the raise: %q, want the held message answered", got)
	}
	testwait.For(t, 10*time.Second, "nothing left pending", func() bool { return len(h.pending()) == 0 })
	var triggers []store.Trigger
	for _, tr := range h.turns("main") {
		triggers = append(triggers, tr.Trigger)
	}
	if len(triggers) != 2 || triggers[0] != store.TriggerMessage || triggers[1] != store.TriggerMessage {
		t.Errorf("turns after the raise: %v; want the two message turns and no task run", triggers)
	}
	if got := h.fa.sentTo(testChat); len(got) != 3 {
		t.Errorf("%d messages sent to the chat, want 3 (no task replies): %v", len(got), got)
	}
}

// TestBudgetSkipsTaskRunQueuedBehindHeldMessages: a task run that fell due
// while the budget still had room, queued behind a chat message, is
// skipped when the budget, used up meanwhile, holds that message; raising
// the cap answers the message and runs no task turn.
func TestBudgetSkipsTaskRunQueuedBehindHeldMessages(t *testing.T) {
	dir := t.TempDir()
	release := func() {
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; while [ ! -f "$1/go" ]; do sleep 0.01; done; rm -f "$1/go"
echo "answered $SWITCHBOARD_TRIGGER"; echo '{"switchboard_usage": {"cost_usd": 2}}'`, dir)})
	ctx := context.Background()
	setBudget(t, h, store.Budget{Folder: "main", MonthlyUSD: 1})
	h.post(testChat, "m1", "spend it")
	testwait.For(t, 10*time.Second, "m1's turn running", func() bool { _, at := h.g.active.running("main"); return at != nil })
	h.post(testChat, "m2", "queued")
	now := time.Now()
	task, err := scheduler.NewTask(scheduler.TaskSpec{Folder: "main", ChatJID: testChat, Prompt: "report", Schedule: "@every 1h"}, "UTC", now)
	if err != nil {
		t.Fatal(err)
	}
	task.Next = now.Add(-time.Second)
	if task, err = h.st.AddTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	h.g.sched.Wake()
	runs := func() []store.TaskRun {
		rs, err := h.st.TaskRuns(ctx, task.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	testwait.Count(t, 10*time.Second, "the task's runs fired", 1, func() int { return len(runs()) })
	release() // m1's turn spends $2 of $1: m2 is held, and the run behind it skipped
	testwait.For(t, 10*time.Second, "the run settled", func() bool { return runs()[0].Status != "fired" })
	if r := runs()[0]; r.Status != store.RunSkipped || !strings.Contains(r.Error, "skipped: monthly budget of $1.00 is used up ($2.00 spent)") {
		t.Errorf("run %+v, want skipped with the budget as reason", r)
	}
	if err := h.st.SetBudget(ctx, store.Budget{Folder: "main", MonthlyUSD: 100}); err != nil {
		t.Fatal(err)
	}
	release()
	testwait.For(t, 10*time.Second, "nothing left pending", func() bool { return len(h.pending()) == 0 })
	var triggers []store.Trigger
	for _, tr := range h.turns("main") {
		triggers = append(triggers, tr.Trigger)
	}
	if !slices.Equal(triggers, []store.Trigger{store.TriggerMessage, store.TriggerMessage}) {
		t.Errorf("turns: %v; want the two message turns and no task run", triggers)
	}
}

// TestTurnUsageFromCodex: a Codex turn records the tokens of its events
// (recorded from Codex 0.169); a resumed thread prints its running total,
// so the second turn is charged what it added. The cost comes from
// agent.price, as Codex prints none.
func TestTurnUsageFromCodex(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "agent", "testdata", "codex-json"))
	script := testagent.Script(t, `cat >/dev/null; if [ "$2" = "resume" ]; then cat "$1/resumed.jsonl"; else cat "$1/fresh.jsonl"; fi`, dir)
	h := newHarness(t, harnessConfig{agent: script, modify: func(o *Options) {
		o.Agent.Output = agent.OutputCodexJSON
		o.Agent.ResumeArgs = []string{"resume", "{session}"}
		o.Price = agent.Price{InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 8}
	}})
	h.post(testChat, "m1", "hello")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "again")
	h.waitSent(testChat, 2)
	ts := h.turns("main")
	if len(ts) != 2 || ts[1].SessionID != "01a2129f-59a9-7943-91d0-9f60986dd305" {
		t.Fatalf("turns %+v, want two of the resumed thread", ts)
	}
	// 14 input + 6 cached + 10 output tokens: (14×2 + 6×0.5 + 10×8) / 1e6.
	want := store.Usage{CostUSD: 0.000111, InputTokens: 14, CacheReadTokens: 6, OutputTokens: 10}
	for i, turn := range ts {
		if turn.Usage != want {
			t.Errorf("turn %d usage %+v, want %+v", i+1, turn.Usage, want)
		}
	}
}

// setBudget stores b and waits until the gateway has loaded it.
func setBudget(t *testing.T, h *harness, b store.Budget) {
	t.Helper()
	if err := h.st.SetBudget(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "budget loaded", func() bool {
		m := h.g.budget.byFolder.Load()
		return m != nil && len(*m) == 1
	})
}

// wantBudgetNotice checks that the n-th message sent to the test chat is
// the budget's notice, saying want.
func wantBudgetNotice(t *testing.T, h *harness, n int, want string) {
	t.Helper()
	if got := h.waitSent(testChat, n)[n-1].Text; !strings.Contains(got, want) {
		t.Fatalf("message %d %q, want the budget notice (%s)", n, got, want)
	}
}
