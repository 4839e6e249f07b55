package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// TestE2ERemoteSteeredTurnWithoutOutcome: a message steered into a turn
// running on a worker (written into the agent there), then the gateway
// and that worker both killed with SIGKILL: the restarted gateway awaits
// the turn's outcome, which never comes. At the turn's deadline the turn
// counts as one crashed attempt (the message and the one steered into it
// alike: one batch), and its batch runs again once, on the worker started
// since, with the steered message: each message is prompted once more and
// answered once, nothing is lost, nothing runs a third time.
func TestE2ERemoteSteeredTurnWithoutOutcome(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "claude-stand-in.sh")
	if err := os.WriteFile(script, []byte(steerE2EAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := newE2E(t, e2eConfig{output: "claude-stream", sandbox: "none", timeout: "20s",
		command:    `["/bin/sh", "` + script + `", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"]`,
		agentExtra: "  input: stream-json\n  mid_turn: steer\n  runner: nats\n",
		extra:      "nats: {embedded: true, listen: \"127.0.0.1:0\"}\n"})
	in := func(turn, k int) string {
		return filepath.Join(dir, "out", "main", "in-"+strconv.Itoa(turn)+"-"+strconv.Itoa(k))
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	g := startGW(t, dir)
	w := startWorker(t, dir, "w1", embeddedNATSURL(t, g), 1)
	g.mustPost("r1", "ann", "first question")
	testwait.For(t, 20*time.Second, "the first turn's prompt in the agent on the worker", func() bool { return exists(in(1, 1)) })
	g.mustPost("r1", "ann", "steered addition")
	testwait.For(t, 20*time.Second, "the steered message in the agent on the worker", func() bool { return exists(in(1, 2)) })
	turn := ""
	if rec := g.findLog("remote turn published"); rec != nil {
		turn, _ = rec["turn"].(string)
	}
	if turn == "" {
		t.Fatalf("no remote turn published in the gateway's log:\n%s", g.logText())
	}
	g.kill()
	_ = w.cmd.Process.Kill() // its outcome never comes
	<-w.exited

	g = startGW(t, dir)
	startWorker(t, dir, "w1", embeddedNATSURL(t, g), 1)
	testwait.For(t, 40*time.Second, "the awaited turn counted as a crashed attempt", func() bool {
		return len(g.records("interrupted turn's outcome never came; counted as a crashed attempt", "turn", turn)) == 1
	})
	bot := g.waitBot("r1", 1)
	if len(bot) != 1 || bot[0].Text != "reply 2" {
		t.Fatalf("bot messages %+v; want the rerun's one reply", bot)
	}
	b, err := os.ReadFile(in(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if p := string(b); strings.Count(p, "steered addition") != 1 || strings.Count(p, "first question") != 1 {
		t.Fatalf("the rerun's prompt: %s\nwant the lost turn's batch with the steered message, each once", p)
	}
	st := openStore(t, dir)
	testwait.For(t, 20*time.Second, "no work left", func() bool {
		fs, err := st.PendingFolders(context.Background())
		return err == nil && len(fs) == 0
	})
	turns, err := st.Turns(context.Background(), "main", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].ID == turn || turns[0].Attempt != 2 {
		t.Errorf("main's turns %+v; want one, the rerun, as attempt 2 (the lost turn counted once)", turns)
	}
	if exists(in(3, 1)) {
		t.Error("a third turn ran: a message was prompted again")
	}
}
