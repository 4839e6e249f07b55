package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// demoAgentAfter runs the real binary's demo agent, which answers through
// the MCP reply tool, on the recorded prompt; then, on the folder's first
// turn only, it keeps working (as an agent that replied early and goes on
// with its task) until the test kills the gateway.
func demoAgentAfter(bin string) string {
	return quoteAll([]string{bin})[0] + ` demo-agent < "$out/prompt-$n"
if [ "$n" -eq 1 ]; then
  touch "$out/replied-$n"
  while :; do sleep 0.05; done
fi`
}

// TestE2ECrashAfterMCPReplyAnswersOnce: the gateway is killed (SIGKILL)
// while a turn runs whose agent had already answered the chat through the
// reply tool. After the restart the user's message is not answered a
// second time: the reply stands (CONTRACT §8, each reply sent at most
// once; the message answered once), and the chat goes on.
func TestE2ECrashAfterMCPReplyAnswersOnce(t *testing.T) {
	t.Parallel()
	bin := switchboardBinary(t)
	dir := newE2E(t, e2eConfig{agent: demoAgentAfter(bin)})
	g := startGW(t, dir)
	g.mustPost("lobby", "ann", "first question")
	g.waitBot("lobby", 1)
	testwait.For(t, 20*time.Second, "the agent to go on after its reply", func() bool {
		_, err := os.Stat(filepath.Join(dir, "out", "main", "replied-1"))
		return err == nil
	})
	g.kill()

	g = startGW(t, dir)
	// A chat's batches run in order: once the next message is answered,
	// whatever the restart would do about the first one is done.
	g.mustPost("lobby", "ann", "second question")
	testwait.For(t, 30*time.Second, "the second question answered", func() bool {
		for _, m := range g.botMessages("lobby") {
			if strings.Contains(m.Text, "second question") {
				return true
			}
		}
		return false
	})
	first := 0
	for _, m := range g.botMessages("lobby") {
		if strings.Contains(m.Text, "first question") {
			first++
		}
	}
	if first != 1 {
		t.Errorf("the first question was answered %d times; want once (the crashed turn had answered it through the reply tool)", first)
		for _, m := range g.messages("lobby") {
			t.Logf("  %v %s: %q", m.FromBot, m.Sender, m.Text)
		}
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The operator sees why the turn did not run again.
	ts, err := openStore(t, dir).Turns(context.Background(), "main", 10)
	if err != nil {
		t.Fatal(err)
	}
	var why []string
	for _, tr := range ts {
		why = append(why, string(tr.Status)+": "+tr.Error)
	}
	if !slices.ContainsFunc(why, func(s string) bool { return strings.Contains(s, "after it had replied through a tool") }) {
		t.Errorf("turn records %q; want the crashed turn recorded as interrupted after its reply", why)
	}
}
