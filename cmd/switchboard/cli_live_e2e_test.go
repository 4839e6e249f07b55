package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// CLI changes that take something away reach a running gateway without a
// restart (CONTRACT §11, §3, §10): a group's socket appears (mode 0600)
// when it is added and is removed with the group; a removed route stops
// routing its chat (the next route takes it); a task paused before its
// slot does not run while a task of the same slot does.
func TestE2ECLIRemovalsWhileRunning(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: `echo "reply from $SWITCHBOARD_FOLDER"`})
	g := startGW(t, dir)

	g.mustCLI("group", "add", "side")
	var added struct {
		Route struct {
			ID int64 `json:"id"`
		} `json:"route"`
	}
	out := g.mustCLI("--json", "route", "add", "--target", "side", "--seq", "-1", "platform=web", "room=side")
	if err := json.Unmarshal([]byte(out), &added); err != nil || added.Route.ID == 0 {
		t.Fatalf("route add printed %s (%v)", out, err)
	}
	sock := filepath.Join(dir, "data", "ipc", "side", "mcp.sock")
	testwait.For(t, 10*time.Second, "the new group's socket", func() bool {
		fi, err := os.Stat(sock)
		return err == nil && fi.Mode()&os.ModeSocket != 0 && fi.Mode().Perm() == 0o600
	})
	// One post per state, after the gateway logged the reload that
	// took the change: probing by posting in a loop trips the web-room
	// loop guard (host posts re-triggering the room), which holds it.
	n := 0
	probe := func(routes int, want string) {
		t.Helper()
		testwait.For(t, 10*time.Second, fmt.Sprintf("a reload with %d routes", routes), func() bool {
			last := g.findLog("configuration reloaded")
			return last != nil && last["routes"] == float64(routes)
		})
		n++
		g.mustPost("side", "ann", fmt.Sprintf("probe %d", n))
		if got := g.waitBot("side", n)[n-1].Text; got != want {
			t.Fatalf("probe %d answered %q; want %q", n, got, want)
		}
	}
	probe(2, "reply from side")
	g.mustCLI("route", "rm", fmt.Sprint(added.Route.ID))
	probe(1, "reply from main")
	turns := turnCount(dir, "side")
	g.mustCLI("group", "rm", "side")
	testwait.For(t, 10*time.Second, "the removed group's socket gone", func() bool {
		_, err := os.Stat(sock)
		return os.IsNotExist(err)
	})
	if got := turnCount(dir, "side"); got != turns {
		t.Errorf("side ran %d turns after its route was removed; want none", got-turns)
	}

	at := soon().Format(time.RFC3339)
	paused := addTask(t, g.bin, dir, "--folder", "main", "--jid", "web:paused", "--schedule", at, "--prompt", "must not run")
	g.mustCLI("task", "pause", fmt.Sprint(paused))
	witness := addTask(t, g.bin, dir, "--folder", "main", "--jid", "web:witness", "--schedule", at, "--prompt", "runs")
	if runs := waitRun(t, g.bin, dir, witness); runs[0].Status != "succeeded" {
		t.Fatalf("the witness task's run: %+v", runs)
	}
	if runs := taskRuns(t, g.bin, dir, paused); len(runs) != 0 {
		t.Errorf("the paused task ran: %+v", runs)
	}
	if tk := taskList(t, g.bin, dir)[paused]; tk.Status != "paused" {
		t.Errorf("the paused task is %+v", tk)
	}
	if bot := g.botMessages("paused"); len(bot) != 0 || !strings.Contains(g.mustCLI("task", "list"), "paused") {
		t.Errorf("the paused task's chat got %+v", bot)
	}
}
