package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
)

// liveAdapter is the fake platform with native live replies (Streamer)
// and edits: it records every update, final, abort and edit.
type liveAdapter struct {
	*fakeAdapter
	native  bool          // implements StartLive (else: ErrUnsupported)
	limited string        // an update showing this is refused once with a rate limit
	refuse  time.Duration // the first update is refused with this wait (0: not)
	finFail int           // the first Finish calls fail (transient)
	max     int           // Limits.MaxText

	lmu     sync.Mutex
	started []adapters.Outbound // StartLive's
	updates []string
	finals  []string
	aborts  int
	edits   []string
	deletes int
}

func (a *liveAdapter) Limits() adapters.Limits { return adapters.Limits{MaxText: a.max} }

func (a *liveAdapter) StartLive(ctx context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	if !a.native {
		return nil, adapters.Unsupported(a.name, "live")
	}
	a.lmu.Lock()
	a.started = append(a.started, m)
	a.lmu.Unlock()
	return &fakeLive{a: a, id: adapters.MessageID("live-" + turn)}, nil
}

func (a *liveAdapter) Edit(ctx context.Context, m adapters.MessageRef, text string) error {
	a.lmu.Lock()
	defer a.lmu.Unlock()
	a.edits = append(a.edits, string(m.ID)+"="+text)
	return nil
}

func (a *liveAdapter) Delete(ctx context.Context, m adapters.MessageRef) error {
	a.lmu.Lock()
	defer a.lmu.Unlock()
	a.deletes++
	return nil
}

func (a *liveAdapter) snapshot() (updates, finals, edits []string, aborts, deletes int) {
	a.lmu.Lock()
	defer a.lmu.Unlock()
	return append([]string(nil), a.updates...), append([]string(nil), a.finals...), append([]string(nil), a.edits...), a.aborts, a.deletes
}

type fakeLive struct {
	a     *liveAdapter
	id    adapters.MessageID
	ended bool
	done  bool
}

func (l *fakeLive) Update(ctx context.Context, text string) error {
	l.a.lmu.Lock()
	defer l.a.lmu.Unlock()
	if l.ended || l.done {
		return adapters.ErrLiveEnded
	}
	if l.a.refuse > 0 {
		wait := l.a.refuse
		l.a.refuse = 0
		return &adapters.RetryAfterError{Wait: wait}
	}
	if l.a.limited != "" && text == l.a.limited {
		l.a.limited = ""
		return &adapters.RetryAfterError{Wait: 20 * time.Millisecond}
	}
	l.a.updates = append(l.a.updates, text)
	return nil
}

func (l *fakeLive) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	l.a.lmu.Lock()
	defer l.a.lmu.Unlock()
	if l.ended {
		return "", adapters.ErrLiveEnded
	}
	if l.a.finFail > 0 {
		l.a.finFail--
		return "", errors.New("connection reset")
	}
	if !l.done {
		l.a.finals = append(l.a.finals, text)
		l.done = true
	}
	return l.id, nil
}

func (l *fakeLive) Abort(ctx context.Context) error {
	l.a.lmu.Lock()
	defer l.a.lmu.Unlock()
	if !l.ended && !l.done {
		l.a.aborts++
	}
	l.ended = true
	return nil
}

const toolFixture = "../agent/testdata/claude-stream/tool.jsonl"

// gatedAgent prints the first n lines of the fixture, waits for the gate
// file, prints the rest, and exits with code.
func streamAgent(t *testing.T, fixture string, n int, code int) (argv []string, gate string) {
	t.Helper()
	abs, err := filepath.Abs(fixture)
	if err != nil {
		t.Fatal(err)
	}
	gate = filepath.Join(t.TempDir(), "go")
	body := fmt.Sprintf(`cat >/dev/null
head -n %d %q
while [ ! -e %q ]; do sleep 0.01; done
tail -n +%d %q
exit %d`, n, abs, gate, n+1, abs, code)
	return testagent.Script(t, body), gate
}

func liveHarness(t *testing.T, la *liveAdapter, argv []string, stream Stream, more ...func(*Options)) *harness {
	t.Helper()
	h := newHarness(t, harnessConfig{agent: argv, noStart: true, modify: func(o *Options) {
		o.Agent.Output = "claude-stream"
		o.Adapters = []adapters.Adapter{la}
		if stream.Mode != "" {
			o.Streams = map[string]Stream{"test": stream}
		}
		o.Progress = true
		for _, m := range more {
			m(o)
		}
	}})
	h.fa = la.fakeAdapter
	h.start()
	return h
}

func openGate(t *testing.T, gate string) {
	t.Helper()
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// toolReply is the fixture's final (its result); the live reply showed
// the text before the tool call too.
const toolReply = "The command printed: hi from bash"

// The chat sees the reply growing with the tool's progress line, then the
// final once, as the live reply's Finish: stored under its id, nothing sent.
func TestLiveReplyNativeGrowsThenFinalOnce(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, gate := streamAgent(t, toolFixture, 19, 0)
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	testwait.For(t, 20*time.Second, "an update with the progress line", func() bool {
		u, _, _, _, _ := la.snapshot()
		return len(u) > 0 && strings.Contains(u[len(u)-1], "running Bash: ")
	})
	u, _, _, _, _ := la.snapshot()
	if !strings.HasPrefix(u[len(u)-1], "Let me run that.") {
		t.Errorf("update %q does not show the text so far", u[len(u)-1])
	}
	openGate(t, gate)
	testwait.For(t, 20*time.Second, "the final", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	h.stop()
	u, f, _, aborts, _ := la.snapshot()
	if len(f) != 1 || f[0] != toolReply {
		t.Errorf("finals = %q, want one %q", f, toolReply)
	}
	if aborts != 0 || len(h.fa.sentTo(testChat)) != 0 {
		t.Errorf("aborts %d, sent %v: want the final through Finish only", aborts, h.fa.sentTo(testChat))
	}
	bots := h.botMessages(testChat)
	if len(bots) != 1 || bots[0].Text != toolReply || !strings.HasPrefix(string(bots[0].ID), "live-") {
		t.Errorf("bot messages stored = %+v, want the final once under the live reply's id", bots)
	}
}

// Updates are coalesced: many text events within one interval make at most
// one update before the final.
func TestLiveReplyCoalescesUpdates(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, gate := streamAgent(t, "../agent/testdata/claude-stream/long.jsonl", 0, 0)
	openGate(t, gate)
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: time.Hour})
	h.post(testChat, "m1", "@bot tell me")
	testwait.For(t, 20*time.Second, "the final", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	u, f, _, _, _ := la.snapshot()
	if len(u) > 1 {
		t.Errorf("%d updates within one interval, want at most 1: %q", len(u), u)
	}
	if len(f) != 1 || len(h.fa.sentTo(testChat)) != 0 {
		t.Errorf("finals %q, sent %d: want the final once", f, len(h.fa.sentTo(testChat)))
	}
}

// A failing agent's live reply ends with a marker, not a half sentence,
// and is not stored as a message.
func TestLiveReplyFailedTurnLeavesMarker(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	abs, err := filepath.Abs(toolFixture)
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "go")
	argv := testagent.Script(t, fmt.Sprintf(`cat >/dev/null
head -n 6 %q
while [ ! -e %q ]; do sleep 0.01; done
exit 3`, abs, gate))
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	testwait.For(t, 20*time.Second, "an update", func() bool { u, _, _, _, _ := la.snapshot(); return len(u) > 0 })
	openGate(t, gate)
	testwait.For(t, 20*time.Second, "the marker", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	_, f, _, _, _ := la.snapshot()
	if f[0] != "Let me run that."+liveEndFailed.marker() {
		t.Errorf("final = %q, want the text so far and the failure marker", f[0])
	}
	h.stop()
	for _, m := range h.botMessages(testChat) {
		if strings.HasPrefix(m.Text, "Let me run") {
			t.Errorf("the marked live reply was stored: %+v", m)
		}
	}
}

// stream: off (no Streams) behaves as before: one Send, no live calls.
func TestLiveReplyOffSendsOnce(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, gate := streamAgent(t, toolFixture, 0, 0)
	openGate(t, gate)
	h := liveHarness(t, la, argv, Stream{})
	h.post(testChat, "m1", "@bot run it")
	sent := h.waitSent(testChat, 1)
	u, f, e, aborts, _ := la.snapshot()
	if len(u)+len(f)+len(e)+aborts != 0 || sent[0].Text != toolReply {
		t.Errorf("stream off: updates %q finals %q edits %q aborts %d, sent %q", u, f, e, aborts, sent[0].Text)
	}
}

// Edit mode: one message sent at the first update and edited after; the
// final is its last edit, stored under the sent message's id.
func TestLiveReplyEditMode(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, gate := streamAgent(t, toolFixture, 19, 0)
	h := liveHarness(t, la, argv, Stream{Mode: StreamEdit, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	sent := h.waitSent(testChat, 1)
	openGate(t, gate)
	testwait.For(t, 20*time.Second, "the final edit", func() bool {
		_, _, e, _, _ := la.snapshot()
		return len(e) > 0 && e[len(e)-1] == string(sent[0].ID)+"="+toolReply
	})
	h.stop()
	u, f, _, _, _ := la.snapshot()
	if len(u)+len(f) != 0 || len(h.fa.sentTo(testChat)) != 1 {
		t.Errorf("edit mode used the native live reply (%q %q) or sent %d messages", u, f, len(h.fa.sentTo(testChat)))
	}
	m, err := h.st.MessageByID(context.Background(), testChat, sent[0].ID)
	if err != nil || !m.FromBot || m.Text != toolReply {
		t.Errorf("stored final = %+v, %v; want the reply under the edited message's id", m, err)
	}
}

// Past the platform's limit, the live reply's message ends at a split
// point and the rest continues in a new message.
func TestLiveReplyOverflowContinues(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true, max: 30}
	argv, gate := streamAgent(t, toolFixture, 0, 0)
	openGate(t, gate)
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	sent := h.waitSent(testChat, 1)
	u, f, _, _, _ := la.snapshot()
	if len(f) != 1 || f[0] != "The command printed: hi from" {
		t.Errorf("finals = %q, want the first part", f)
	}
	for _, x := range u {
		if len(x) > 30 {
			t.Errorf("update %q over the limit", x)
		}
	}
	if len(sent) != 1 || sent[0].Text != "bash" {
		t.Errorf("continued in %+v, want one message with the rest", sent)
	}
}

// A turn that replied through MCP (marked as the MCP backend marks it)
// queues no stdout reply: its live reply is aborted, nothing is sent.
func TestLiveReplyMCPRepliedAborts(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, gate := streamAgent(t, toolFixture, 6, 0)
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	testwait.For(t, 20*time.Second, "an update", func() bool { u, _, _, _, _ := la.snapshot(); return len(u) > 0 })
	h.g.active.markReplied("main", testChat)
	openGate(t, gate)
	testwait.For(t, 20*time.Second, "the abort", func() bool { _, _, _, a, _ := la.snapshot(); return a > 0 })
	h.stop()
	_, f, _, aborts, _ := la.snapshot()
	if len(f) != 0 || aborts != 1 || len(h.fa.sentTo(testChat)) != 0 {
		t.Errorf("finals %q, aborts %d, sent %d: want the live reply aborted and nothing sent", f, aborts, len(h.fa.sentTo(testChat)))
	}
}

// A rate-limited update pauses the live reply; after the wait it shows the
// newest text, though no event came meanwhile (the agent waits).
func TestLiveReplyRateLimitResends(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true, limited: "Let me run that."}
	argv, gate := streamAgent(t, toolFixture, 6, 0)
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	testwait.For(t, 20*time.Second, "the update after the rate limit", func() bool {
		u, _, _, _, _ := la.snapshot()
		return len(u) > 0 && u[len(u)-1] == "Let me run that."
	})
	openGate(t, gate)
	testwait.For(t, 20*time.Second, "the final", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	h.stop()
	if _, f, _, aborts, _ := la.snapshot(); aborts != 0 || len(f) != 1 || f[0] != toolReply || len(h.turns("main")) != 1 {
		t.Errorf("finals %q, aborts %d, %d turns: want the one turn's live reply to go on after the wait", f, aborts, len(h.turns("main")))
	}
}

// A refused update (the adapter's pacing or a rate limit said to wait
// 20 ms) is tried again after the wait it said, not a whole stream
// interval later: with an interval of an hour the text still shows at
// once. The live reply knows whom it answers (the question's sender,
// from the store).
func TestLiveReplyRefusalWaitsWhatItSaid(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true, refuse: 20 * time.Millisecond}
	argv, gate := streamAgent(t, toolFixture, 6, 0)
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: time.Hour})
	h.post(testChat, "m1", "@bot run it")
	testwait.For(t, 10*time.Second, "the update after the refusal", func() bool {
		u, _, _, _, _ := la.snapshot()
		return len(u) > 0
	})
	openGate(t, gate)
	testwait.For(t, 20*time.Second, "the final", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	h.stop()
	la.lmu.Lock()
	defer la.lmu.Unlock()
	if len(la.started) != 1 || la.started[0].ReplyTo != "m1" || la.started[0].ReplyToSender != "test:user/ann" {
		t.Errorf("live replies started with %+v; want one replying to m1 by test:user/ann", la.started)
	}
}

// The edit fallback shows a text cut anywhere as it will render: an open
// code fence is closed, in the message sent and in the edits after.
func TestEditLiveRendersPartial(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test")}
	e := newEditLive(la, adapters.Outbound{Chat: testChat, Key: "t-1/reply"})
	ctx := context.Background()
	if err := e.Update(ctx, "look:\n```go\nx := 1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Update(ctx, "look:\n```go\nx := 1\ny := 2"); err != nil {
		t.Fatal(err)
	}
	sent := la.sentTo(testChat)
	_, _, edits, _, _ := la.snapshot()
	if len(sent) != 1 || !strings.HasSuffix(sent[0].Text, "```") || len(edits) != 1 || !strings.HasSuffix(edits[0], "```") {
		t.Errorf("sent %q, edits %q: want the open fence closed", sent, edits)
	}
	id, err := e.Finish(ctx, "done")
	if err != nil || id != sent[0].ID {
		t.Errorf("Finish = %q, %v; want the sent message's id", id, err)
	}
}

// A Finish that failed is retried by the outbox on the same live reply: the
// final is shown once, never sent beside it.
func TestLiveReplyFinishRetried(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true, finFail: 1}
	argv, gate := streamAgent(t, toolFixture, 0, 0)
	openGate(t, gate)
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	testwait.For(t, 20*time.Second, "the final", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	h.stop()
	if _, f, _, _, _ := la.snapshot(); len(f) != 1 || len(h.fa.sentTo(testChat)) != 0 {
		t.Errorf("finals %q, sent %d: want the final once, by Finish", f, len(h.fa.sentTo(testChat)))
	}
}

// A timed-out turn's live reply ends with its marker.
func TestLiveReplyTimedOutMarker(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, _ := streamAgent(t, toolFixture, 6, 0) // the gate never opens
	liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond}, func(o *Options) {
		o.Agent.Timeout = time.Second
	}).post(testChat, "m1", "@bot run it")
	testwait.For(t, 20*time.Second, "the marker", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	if _, f, _, _, _ := la.snapshot(); f[0] != "Let me run that."+liveEndTimedOut.marker() {
		t.Errorf("final = %q, want the text so far and the timeout marker", f[0])
	}
}

// A steered turn's agent answers twice (CONTRACT §15: a second result in
// the same process): the second answer's text shows after the first's,
// a blank line between (it was glued to the first's last word: "one.Two"),
// and a replace in the second answer (a retried stream) replaces only the
// second answer's text, not the first's.
func TestLiveSecondAnswerAfterTheFirst(t *testing.T) {
	l := &liveTurn{kick: make(chan struct{}, 1)}
	l.onEvent(agent.Event{Kind: agent.EventText, Text: "Answer one. "})
	l.onEvent(agent.Event{Kind: agent.EventResult, Text: "Answer one."})
	l.onEvent(agent.Event{Kind: agent.EventText, Text: "Answer"})
	l.onEvent(agent.Event{Kind: agent.EventText, Text: " two"})
	if _, got := l.view(); got != "Answer one.\n\nAnswer two" {
		t.Errorf("while the second answer streams: %q", got)
	}
	l.onEvent(agent.Event{Kind: agent.EventReplace, Text: "Answer 2, retried"})
	if _, got := l.view(); got != "Answer one.\n\nAnswer 2, retried" {
		t.Errorf("after a replace in the second answer: %q", got)
	}
}

// The progress line shows while a tool runs and goes at its end; a replace
// replaces the text so far.
func TestLiveRenderProgressAndReplace(t *testing.T) {
	l := &liveTurn{progress: true, kick: make(chan struct{}, 1)}
	l.onEvent(agent.Event{Kind: agent.EventText, Text: "Let me "})
	l.onEvent(agent.Event{Kind: agent.EventText, Text: "look."})
	l.onEvent(agent.Event{Kind: agent.EventToolStart, Tool: "Bash", ToolID: "t1", Summary: "ls -l"})
	if _, got := l.view(); got != "Let me look.\n\n_running Bash: ls -l_" {
		t.Errorf("while the tool runs: %q", got)
	}
	l.onEvent(agent.Event{Kind: agent.EventToolEnd, Tool: "Bash", ToolID: "t1"})
	l.onEvent(agent.Event{Kind: agent.EventReplace, Text: "Here:"})
	if _, got := l.view(); got != "Here:" {
		t.Errorf("after the tool and a replace: %q", got)
	}
	l.progress = false
	l.onEvent(agent.Event{Kind: agent.EventToolStart, Tool: "Bash"})
	if _, got := l.view(); got != "Here:" {
		t.Errorf("agent.progress false: %q", got)
	}
}
