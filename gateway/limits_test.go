package gateway

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testmcp"
	"switchboard/internal/testmetrics"
	"switchboard/internal/testwait"
	"switchboard/routing"
	"switchboard/store"
)

// TestMain lets this test binary act as an agent: run with the argument
// "chain-agent", it is the ping-pong agent of TestChainGuardStopsPingPong;
// with "web-loop-agent", the room-hopping agent of
// TestLoopGuardPausesAgentHoppingWebRooms; with "session-reset-agent", the
// agent of TestResetSessionDuringTurn.
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "web-loop-agent" {
		if err := webLoopAgent(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "web-loop-agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 2 && os.Args[1] == "session-reset-agent" {
		if err := sessionResetAgent(os.Args[2], os.Args[3:]); err != nil {
			fmt.Fprintln(os.Stderr, "session-reset-agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) > 3 && os.Args[1] == "chain-agent" {
		if err := chainAgent(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "chain-agent:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// chainAgent is an agent that hands every turn on over MCP, in the chat
// the turn answers: in mode "pingpong" the parent (main) delegates to
// main/child and the child escalates to main; in mode "inject" it injects
// a message that its own group answers. It appends "folder trigger" to log.
func chainAgent(log, mode string) error {
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	folder, chat := os.Getenv("SWITCHBOARD_FOLDER"), os.Getenv("SWITCHBOARD_CHAT_JID")
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, folder, os.Getenv("SWITCHBOARD_TRIGGER"))
	f.Close()
	c, err := testmcp.Connect(os.Getenv("SWITCHBOARD_MCP_SOCKET"), testmcp.Options{Client: "chain-agent"})
	if err != nil {
		return err
	}
	defer c.Close()
	call := fmt.Sprintf(`{"name":"delegate_group","arguments":{"folder":"main/child","prompt":"your turn","chat_jid":%q}}`, chat)
	switch {
	case mode == "inject":
		call = fmt.Sprintf(`{"name":"inject_message","arguments":{"text":"once more","chat_jid":%q}}`, chat)
	case folder == "main/child":
		call = fmt.Sprintf(`{"name":"escalate_group","arguments":{"prompt":"your turn","chat_jid":%q}}`, chat)
	}
	res, err := c.Request("tools/call", call)
	if err != nil {
		return err
	}
	if strings.Contains(string(res), `"isError":true`) {
		return fmt.Errorf("tool refused: %s", res)
	}
	fmt.Println("handed on from", folder)
	return nil
}

// Two groups whose agents hand every turn to each other (the parent
// delegates, the child escalates) stop once the chain is deeper than
// Limits.MaxChain: the item past the limit is not run, its turn record
// says why, the chat is told, and nothing is left queued.
func TestChainGuardStopsPingPong(t *testing.T) {
	const chat = "test:room/child"
	log := filepath.Join(t.TempDir(), "runs")
	h := newHarness(t, harnessConfig{
		agent:  []string{os.Args[0], "chain-agent", log, "pingpong"},
		groups: []string{"main/child"},
		routes: []routing.Route{
			{Match: map[string]string{"chat_jid": chat}, Target: "main/child"},
			{Match: map[string]string{"platform": "test"}, Target: "main"},
		},
		modify: func(o *Options) { o.Limits = Limits{MaxChain: 3} },
	})
	h.post(chat, "m1", "start the ping-pong")
	var stopped store.Turn
	testwait.For(t, 60*time.Second, "the chain stopped", func() bool {
		for _, f := range []groups.Folder{"main", "main/child"} {
			for _, tr := range h.turns(f) {
				if strings.Contains(tr.Error, "delegation chain deeper than 3") {
					stopped = tr
					return true
				}
			}
		}
		return false
	})
	testwait.For(t, 10*time.Second, "nothing left queued", func() bool { return len(h.pending()) == 0 })
	// The message turn of the child (hop 0), then main (1), the child (2),
	// main (3); the child's turn at hop 4 is the one stopped.
	b, _ := os.ReadFile(log)
	want := "main/child message\nmain escalate\nmain/child delegate\nmain escalate\n"
	if string(b) != want {
		t.Errorf("agent runs:\n%s\nwant:\n%s", b, want)
	}
	if stopped.Folder != "main/child" || stopped.Trigger != store.TriggerDelegate || stopped.Status != store.TurnFailed {
		t.Errorf("stopped turn: %+v; want main/child's delegate turn, failed", stopped)
	}
	h.waitSent(chat, 5) // four replies and the notice
	notices := 0
	for _, m := range h.fa.sentTo(chat) {
		if strings.HasPrefix(m.Text, "Stopped: agents kept starting turns") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d chain notices in %s; want 1", notices, chat)
	}
	if ran := len(h.turns("main")) + len(h.turns("main/child")); ran != 5 {
		t.Errorf("%d turn records; want 4 run and 1 stopped", ran)
	}
	st, err := h.st.Status(context.Background()) // what switchboard status shows
	if err != nil {
		t.Fatal(err)
	}
	if len(st.FailedTurns) != 1 || !strings.Contains(st.FailedTurns[0].Error, "delegation chain deeper than 3") {
		t.Errorf("status failures: %+v; want the stopped chain with its reason", st.FailedTurns)
	}
	if n := testmetrics.Value(t, scrape(t, h.g), `switchboard_turns_total{outcome="stopped",trigger="delegate"}`); n != 1 {
		t.Errorf("stopped turns counted: %v; want 1", n)
	}
}

// An agent that injects into its own chat every turn (each injected
// message starts its next turn) stops at Limits.MaxChain too; a person's
// message in the chat starts over.
func TestChainGuardStopsSelfInject(t *testing.T) {
	log := filepath.Join(t.TempDir(), "runs")
	h := newHarness(t, harnessConfig{
		agent:  []string{os.Args[0], "chain-agent", log, "inject"},
		modify: func(o *Options) { o.Limits = Limits{MaxChain: 2} },
	})
	stops := func() (n int) {
		for _, tr := range h.turns("main") {
			if strings.Contains(tr.Error, "delegation chain deeper than 2: this inject from main is hop 3") {
				n++
			}
		}
		return n
	}
	h.post(testChat, "m1", "start")
	testwait.Count(t, 60*time.Second, "chains stopped", 1, stops)
	testwait.For(t, 10*time.Second, "nothing left queued", func() bool { return len(h.pending()) == 0 })
	h.post(testChat, "m2", "again") // a person: a new chain
	testwait.Count(t, 60*time.Second, "chains stopped", 2, stops)
	testwait.For(t, 10*time.Second, "nothing left queued", func() bool { return len(h.pending()) == 0 })
	b, _ := os.ReadFile(log)
	want := strings.Repeat("main message\nmain inject\nmain inject\n", 2)
	if string(b) != want {
		t.Errorf("agent runs:\n%s\nwant:\n%s", b, want)
	}
}

// gatedRecorder is a recorder whose turns each wait, after recording their
// prompt, until the test calls release.
func gatedRecorder(t *testing.T) (*recorder, func()) {
	gate := t.TempDir()
	rec := newRecorder(t, fmt.Sprintf(`while [ ! -f %[1]s/go ]; do sleep 0.01; done; rm -f %[1]s/go`, gate))
	return rec, func() {
		if err := os.WriteFile(filepath.Join(gate, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// floodHarness runs a gated recorder on a gateway and store that share a
// fake clock, with the given limits.
func floodHarness(t *testing.T, limits Limits) (*harness, *recorder, func(), *fakeClock) {
	clock := newFakeClock()
	rec, release := gatedRecorder(t)
	h := newHarness(t, harnessConfig{agent: rec.argv, modify: func(o *Options) {
		o.Now = clock.Now
		o.Store.SetClock(clock.Now)
		o.Limits = limits
	}})
	return h, rec, release, clock
}

func postAs(t *testing.T, h *harness, sender, id string) {
	t.Helper()
	name := strings.ToUpper(sender[:1]) + sender[1:]
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: testChat, ID: adapters.MessageID(id), Sender: adapters.JID("test:user/" + sender),
		SenderName: name, Text: "text of " + id, Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
}

func waitPrompts(t *testing.T, rec *recorder, n int) {
	t.Helper()
	testwait.Count(t, 20*time.Second, "turns running", n, func() int { return len(rec.prompts(t)) })
}

// slowDowns returns the flood notices sent to the test chat.
func slowDowns(h *harness) []string {
	var out []string
	for _, m := range h.fa.sentTo(testChat) {
		if strings.HasPrefix(m.Text, "Slow down") {
			out = append(out, m.Text)
		}
	}
	return out
}

// A burst of 200 messages from one sender runs as a bounded number of
// turns (at most TurnsPerSender.Count per window): what arrives beyond the
// limit waits, stored, and is answered in one batch when the window
// allows. Every message reaches exactly one prompt, and the chat is told
// once.
func TestFloodLimitBatchesABurst(t *testing.T) {
	h, rec, release, clock := floodHarness(t, Limits{TurnsPerSender: Rate{Count: 2, Window: time.Minute},
		TurnsPerChat: Rate{Count: 100, Window: time.Minute}})
	postAs(t, h, "ann", "b0")
	waitPrompts(t, rec, 1)
	for i := 1; i < 190; i++ { // while turn 1 runs
		postAs(t, h, "ann", fmt.Sprint("b", i))
	}
	release()
	waitPrompts(t, rec, 2) // b1..b100 (a batch holds at most 100)
	release()
	// Turn 3 would be ann's third in the minute: held, with one notice.
	testwait.Count(t, 20*time.Second, "slow-down notices", 1, func() int { return len(slowDowns(h)) })
	for i := 190; i < 200; i++ { // more of the burst, while held
		postAs(t, h, "ann", fmt.Sprint("b", i))
	}
	h.waitSent(testChat, 3) // two replies and the notice
	if n := len(rec.prompts(t)); n != 2 {
		t.Fatalf("%d turns before the window was over; want 2", n)
	}
	clock.Advance(time.Minute)
	waitPrompts(t, rec, 3) // b101..b199 in one batch
	release()
	testwait.For(t, 20*time.Second, "nothing left queued", func() bool { return len(h.pending()) == 0 })
	h.waitSent(testChat, 4)

	prompts := rec.prompts(t)
	if len(prompts) != 3 {
		t.Errorf("200 messages ran as %d turns; want 3 (2 per minute)", len(prompts))
	}
	for i := range 200 {
		in := 0
		for _, p := range prompts {
			in += strings.Count(p, fmt.Sprintf(`id="b%d"`, i))
		}
		if in != 1 {
			t.Errorf("message b%d is in %d prompts; want 1", i, in)
		}
	}
	notices := slowDowns(h)
	if len(notices) != 1 || !strings.Contains(notices[0], "Ann started 2 turns in the last minute") {
		t.Errorf("notices: %q; want one naming Ann and the limit", notices)
	}
}

// One sender over TurnsPerSender does not hold another sender's message:
// it runs (carrying the held messages along). The chat's own limit holds
// every sender, a new one too, with its own notice once the first
// notice's window is over; the held messages run once the chat's window
// allows.
func TestFloodLimitChatLimitHoldsEverySender(t *testing.T) {
	h, rec, release, clock := floodHarness(t, Limits{TurnsPerSender: Rate{Count: 1, Window: time.Minute},
		TurnsPerChat: Rate{Count: 3, Window: 10 * time.Minute}})
	postAs(t, h, "ann", "a0")
	waitPrompts(t, rec, 1)
	release()
	h.waitSent(testChat, 1)
	postAs(t, h, "ann", "a1") // ann's second turn in the minute: held
	testwait.Count(t, 20*time.Second, "slow-down notices (ann's)", 1, func() int { return len(slowDowns(h)) })
	postAs(t, h, "bob", "b0") // bob has room, so has the chat
	waitPrompts(t, rec, 2)
	release()
	if p := rec.prompts(t)[1]; !strings.Contains(p, `id="a1"`) || !strings.Contains(p, `id="b0"`) {
		t.Errorf("turn 2 prompt lacks a1 or b0:\n%s", p)
	}
	h.waitSent(testChat, 3)

	clock.Advance(2 * time.Minute) // the senders' windows are over, not the chat's
	postAs(t, h, "carl", "c0")
	waitPrompts(t, rec, 3) // the chat's third turn in 10 minutes
	release()
	h.waitSent(testChat, 4)
	postAs(t, h, "dave", "d0") // a new sender, but the chat is full
	testwait.Count(t, 20*time.Second, "slow-down notices (with the chat's)", 2, func() int { return len(slowDowns(h)) })
	postAs(t, h, "ann", "a2") // ann has room again; the chat has not
	h.waitSent(testChat, 5)
	if n := len(rec.prompts(t)); n != 3 {
		t.Fatalf("%d turns while the chat was full; want 3", n)
	}
	clock.Advance(8 * time.Minute)
	waitPrompts(t, rec, 4)
	release()
	testwait.For(t, 20*time.Second, "nothing left queued", func() bool { return len(h.pending()) == 0 })
	if p := rec.prompts(t)[3]; !strings.Contains(p, `id="d0"`) || !strings.Contains(p, `id="a2"`) {
		t.Errorf("turn 4 prompt lacks d0 or a2:\n%s", p)
	}
	notices := slowDowns(h)
	if len(notices) != 2 || !strings.Contains(notices[0], "Ann started 1 turn in the last minute") ||
		!strings.Contains(notices[1], "this chat started 3 turns in the last 10 minutes") {
		t.Errorf("notices: %q; want Ann's, then the chat's", notices)
	}
}

// The window arithmetic: a rate fits Count starts in any Window, and the
// wait is until the oldest start that counts leaves it.
func TestRateWait(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	r := Rate{Count: 2, Window: time.Minute}
	for _, tc := range []struct {
		name   string
		starts []time.Duration // after t0
		now    time.Duration
		want   time.Duration
	}{
		{"empty", nil, 0, 0},
		{"room for one more", []time.Duration{0}, time.Second, 0},
		{"full", []time.Duration{0, 10 * time.Second}, 20 * time.Second, 40 * time.Second},
		{"the oldest left the window", []time.Duration{0, 10 * time.Second}, time.Minute, 0},
		{"over (charged by another sender's turn)", []time.Duration{0, 10 * time.Second, 20 * time.Second}, 30 * time.Second, 40 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var starts []time.Time
			for _, d := range tc.starts {
				starts = append(starts, t0.Add(d))
			}
			now := t0.Add(tc.now)
			if got := r.wait(r.trim(starts, now), now); got != tc.want {
				t.Errorf("wait = %v; want %v", got, tc.want)
			}
		})
	}
	if (Rate{}).wait([]time.Time{t0, t0, t0}, t0) != 0 {
		t.Error("a zero rate limits")
	}
}
