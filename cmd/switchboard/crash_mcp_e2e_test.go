package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
	"switchboard/store"
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

// demoAnswered is the numbers k of the "message k" texts a demo agent's
// reply quotes.
var demoQuoted = regexp.MustCompile(`"message (\d+)"`)

// TestE2ECrashRecoveryDemoAgent is TestE2ECrashRecovery with the built-in
// demo agent, which answers through the MCP reply tool rather than on
// stdout: SIGKILLs while clients post and turns run, then every
// acknowledged message is stored once and answered by exactly one reply.
func TestE2ECrashRecoveryDemoAgent(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))
	var routes strings.Builder
	var groups []string
	for f := range 4 {
		groups = append(groups, fmt.Sprintf("f%d", f))
	}
	for r := range crashRooms {
		fmt.Fprintf(&routes, "  - {match: {platform: web, room: r%d}, target: f%d}\n", r, r%4)
	}
	dir := newE2E(t, e2eConfig{command: `["switchboard", "demo-agent"]`, groups: groups, routes: routes.String()})
	g, acked := crashPhases(t, rng, dir, 400, 3)
	// Every acknowledged message answered once, by the last gateway.
	count := func() map[int]int {
		answered := map[int]int{}
		for r := range crashRooms {
			for _, m := range g.botMessages(fmt.Sprintf("r%d", r)) {
				for _, q := range demoQuoted.FindAllStringSubmatch(m.Text, -1) {
					k, _ := strconv.Atoi(q[1])
					answered[k]++
				}
			}
		}
		return answered
	}
	var answered map[int]int
	unanswered := func() (ks []int) {
		answered = count()
		for k := range acked {
			if answered[k] == 0 {
				ks = append(ks, k)
			}
		}
		return ks
	}
	if !testwait.Until(60*time.Second, func() bool { return len(unanswered()) == 0 }) {
		t.Errorf("messages %v never answered", unanswered())
		items, _ := openStore(t, dir).Outbox(context.Background(), "", 1000)
		for _, it := range items {
			if it.Status != "sent" {
				t.Logf("outbox %s %s %s: %q", it.Key, it.Status, it.Error, it.Text)
			}
		}
	}
	for k, n := range answered {
		if n > 1 {
			t.Errorf("message %d answered %d times", k, n)
		}
	}
	stored := map[string]int{}
	for r := range crashRooms {
		for _, m := range g.messages(fmt.Sprintf("r%d", r)) {
			if !m.FromBot {
				stored[m.ID]++
			}
		}
	}
	for k := range acked {
		if id := fmt.Sprintf("w-c%d", k); stored[id] != 1 {
			t.Errorf("acknowledged message %s stored %d times", id, stored[id])
		}
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestE2EWebReplyCutByCrashIsSent: a crash between the outbox claiming a
// web chat reply and storing it (the moment a web reply shows) leaves the
// row "sending". The web chat shows nothing before the store has it, so
// the reply cannot have arrived: the restarted gateway delivers it, once,
// instead of failing it as "may or may not have arrived" (a reply lost).
func TestE2EWebReplyCutByCrashIsSent(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: replyAgent})
	g := startGW(t, dir)
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// What SIGKILL leaves mid-delivery: the row claimed, nothing stored.
	st, err := store.Open(context.Background(), filepath.Join(dir, "data", "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	it, err := st.AddOutbox(context.Background(), store.OutboxItem{Key: "mcp-cut", Kind: store.OutboxSend, Folder: "main",
		ChatJID: "web:lobby", Text: "the answer the crash cut short"})
	if err == nil {
		_, err = st.ClaimOutbox(context.Background(), it.ID)
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}

	g = startGW(t, dir)
	got := g.waitBot("lobby", 1)
	if len(got) != 1 || got[0].Text != "the answer the crash cut short" {
		t.Fatalf("the room shows %+v; want the cut reply once", got)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if it, err := openStore(t, dir).OutboxByKey(context.Background(), "mcp-cut"); err != nil || it.Status != store.OutboxSent {
		t.Errorf("outbox row %+v (%v); want sent", it, err)
	}
}
