package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/scheduler"
	"switchboard/store"
)

func TestTaskCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")

	var task map[string]any
	out := mustSB(t, dir, "--json", "task", "add", "--folder", "main", "--jid", "web:lobby", "--schedule", "30 2 * * *",
		"--tz", "America/New_York", "--mode", "isolated", "--missed", "once", "--prompt", "nightly report")
	if err := json.Unmarshal([]byte(out), &task); err != nil {
		t.Fatal(err)
	}
	next, err := time.Parse(time.RFC3339, task["next_run"].(string))
	if err != nil {
		t.Fatal(err)
	}
	ny, _ := time.LoadLocation("America/New_York")
	if local := next.In(ny); local.Hour() != 2 && local.Hour() != 3 || !next.After(time.Now()) {
		t.Errorf("next run %s is not the next 02:30 in New York", next.In(ny))
	}
	// created_by is operator from the CLI (docs/scheduling.md), as the task tools show it.
	if task["context_mode"] != "isolated" || task["missed"] != "once" || task["timezone"] != "America/New_York" || task["created_by"] != "operator" {
		t.Errorf("task = %v", task)
	}

	// A bad flag value is a usage error (exit 2, CONTRACT §11), as in
	// task preview, that names the flag; a group that does not exist is a
	// failure (exit 1).
	bad := []struct {
		name  string
		args  []string
		want  string
		usage bool
	}{
		{"zone prefix", []string{"--schedule", "CRON_TZ=UTC 0 9 * * *"}, `write --schedule "0 9 * * *" --tz UTC`, true},
		{"bad spec", []string{"--schedule", "every tuesday"}, `--schedule: bad schedule "every tuesday"`, true},
		{"never fires", []string{"--schedule", "0 0 30 2 *"}, "never fires", true},
		{"past instant", []string{"--schedule", "2001-01-01T00:00:00Z"}, `--schedule: bad schedule "2001-01-01T00:00:00Z": the time is already past`, true},
		{"bad zone", []string{"--schedule", "@daily", "--tz", "Mars/Base"}, `--tz: unknown time zone "Mars/Base"`, true},
		{"bad mode", []string{"--schedule", "@daily", "--mode", "solo"}, `--mode: "solo": want group or isolated`, true},
		{"bad missed", []string{"--schedule", "@daily", "--missed", "never"}, `--missed: bad missed policy "never"`, true},
		{"blank prompt", []string{"--schedule", "@daily", "--prompt", "  "}, "--prompt: empty", true},
		{"missing group", []string{"--schedule", "@daily", "--folder", "ghost"}, "group ghost does not exist", false},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"task", "add", "--folder", "main", "--jid", "web:lobby", "--prompt", "x"}
			args = append(args, c.args...)
			_, _, err := sb(t, dir, args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error = %v, want it to mention %q", err, c.want)
			}
			if isUsage(err) != c.usage {
				t.Errorf("error = %v: usage error (exit 2) %v, want %v", err, isUsage(err), c.usage)
			}
		})
	}
	if _, _, err := sb(t, dir, "task", "add", "--folder", "main"); !isUsage(err) {
		t.Errorf("missing flags: want usage error, got %v", err)
	}

	id := "1"
	if out := mustSB(t, dir, "task", "pause", id); !strings.Contains(out, "is paused") {
		t.Errorf("pause: %q", out)
	}
	if out := mustSB(t, dir, "task", "resume", id); !strings.Contains(out, "is active") {
		t.Errorf("resume: %q", out)
	}
	if out := mustSB(t, dir, "task", "cancel", id); !strings.Contains(out, "next run none") {
		t.Errorf("a cancelled task should have no next run: %q", out)
	}
	if _, _, err := sb(t, dir, "task", "resume", id); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Errorf("resume after cancel: %v", err)
	}
	for _, verb := range []string{"pause", "runs"} {
		if _, _, err := sb(t, dir, "task", verb, "42"); err == nil || !strings.Contains(err.Error(), "no such task") {
			t.Errorf("%s missing: %v", verb, err)
		}
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "task", "list")), &list); err != nil || len(list) != 1 || list[0]["status"] != "cancelled" || list[0]["next_run"] != nil {
		t.Errorf("list: %v %v", list, err)
	}
	if out := mustSB(t, dir, "task", "runs", id); !strings.Contains(out, "RUN") {
		t.Errorf("runs: %q", out)
	}
}

func TestTaskPreviewAcrossDST(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var p struct{ Next []string }
	out := mustSB(t, dir, "--json", "task", "preview", "0 9 * * *", "--tz", "Europe/London", "--count", "3")
	if err := json.Unmarshal([]byte(out), &p); err != nil || len(p.Next) != 3 {
		t.Fatalf("preview: %s %v", out, err)
	}
	london, _ := time.LoadLocation("Europe/London")
	for _, s := range p.Next {
		ts, _ := time.Parse(time.RFC3339, s)
		if ts.In(london).Hour() != 9 {
			t.Errorf("slot %s is not 09:00 in London", ts.In(london))
		}
	}
	for _, bad := range [][]string{{"nonsense"}, {"@daily", "--count", "0"}, {"@daily", "--count", "101"}} {
		if _, _, err := sb(t, dir, append([]string{"task", "preview"}, bad...)...); !isUsage(err) {
			t.Errorf("preview %v: want a usage error, got %v", bad, err)
		}
	}
}

// TestTaskPreviewFrom: --from lets a daily schedule be previewed across the
// 2026 Europe/Berlin DST changes (without it, 100 fires from now may not
// reach one): the spring-forward day's 02:30 fires at 03:00 CEST, the
// fall-back day's 02:30 fires once.
func TestTaskPreviewFrom(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"spring forward", []string{"30 2 * * *", "--tz", "Europe/Berlin", "--from", "2026-03-28", "--count", "3"},
			[]string{"2026-03-28T02:30:00+01:00", "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"fall back", []string{"30 2 * * *", "--tz", "Europe/Berlin", "--from", "2026-10-24", "--count", "3"},
			[]string{"2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"daily at 9 across fall back", []string{"0 9 * * *", "--tz", "Europe/Berlin", "--from", "2026-10-24T09:00:00+02:00", "--count", "3"},
			[]string{"2026-10-24T09:00:00+02:00", "2026-10-25T09:00:00+01:00", "2026-10-26T09:00:00+01:00"}},
		{"midnight is included", []string{"@daily", "--tz", "Europe/Berlin", "--from", "2026-10-25", "--count", "2"},
			[]string{"2026-10-25T00:00:00+02:00", "2026-10-26T00:00:00+01:00"}},
		{"interval counts from --from", []string{"every 90m", "--tz", "UTC", "--from", "2026-10-25T00:00:00Z", "--count", "2"},
			[]string{"2026-10-25T01:30:00Z", "2026-10-25T03:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p struct{ Next []string }
			out := mustSB(t, dir, append([]string{"--json", "task", "preview"}, c.args...)...)
			if err := json.Unmarshal([]byte(out), &p); err != nil {
				t.Fatal(err)
			}
			if strings.Join(p.Next, " ") != strings.Join(c.want, " ") {
				t.Errorf("preview %v:\n got %v\nwant %v", c.args, p.Next, c.want)
			}
		})
	}
	if _, _, err := sb(t, dir, "task", "preview", "@daily", "--from", "next week"); !isUsage(err) || !strings.Contains(err.Error(), "--from") {
		t.Errorf("bad --from: %v, want a usage error naming --from", err)
	}
	// A spec that embeds its zone: the command line takes it in --tz.
	_, _, err := sb(t, dir, "task", "preview", "CRON_TZ=Europe/Berlin 30 2 * * *")
	if !isUsage(err) || !strings.Contains(err.Error(), `"30 2 * * *" --tz Europe/Berlin`) {
		t.Errorf("CRON_TZ spec: %v, want a usage error that gives --tz Europe/Berlin", err)
	}
}

// TestTaskRunsShowStart: `task runs` shows when each run started, not only
// its slot (CONTRACT §10: runs are logged with start, duration, status and
// error); a catch-up run starts long after its slot.
func TestTaskRunsShowStart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "task", "add", "--folder", "main", "--jid", "web:lobby", "--schedule", "0 9 * * *",
		"--tz", "Asia/Tokyo", "--prompt", "report")
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := st.Task(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	after := tk.Next.Add(24 * time.Hour)
	if ids, err := st.ClaimRuns(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: tk.ID, From: tk.Next, Next: after, HasNext: true}, Slot: tk.Next}}); err != nil || ids[0] == 0 {
		t.Fatalf("claim: %v %v", ids, err)
	}
	runs, err := st.TaskRuns(ctx, tk.ID, 10)
	st.Close()
	if err != nil || len(runs) != 1 {
		t.Fatalf("runs %v %v", runs, err)
	}
	out := mustSB(t, dir, "task", "runs", "1")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "STARTED") {
		t.Fatalf("task runs:\n%s", out)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	started := runs[0].Started.In(tokyo).Format("2006-01-02 15:04:05 -07:00")
	if !strings.Contains(lines[1], started) {
		t.Errorf("task runs row %q does not show the start %s", lines[1], started)
	}
}
