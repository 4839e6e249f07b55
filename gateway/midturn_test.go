package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// steerAgent stands in for Claude Code with --input-format stream-json: a
// reader saves each stdin line as dir/in-<turn>-<k> as it comes; the
// agent answers the first once dir/gate exists (when the prompt says
// GATE), and, once its stdin ends, each further line with a result of its
// own, as Claude Code answers a message it got while it was writing.
func steerAgent(t testing.TB, dir string) []string {
	return testagent.Script(t, `dir="`+dir+`"
n=$(ls "$dir" | grep -c '^turn-'); n=$((n+1)); touch "$dir/turn-$n"
echo "$@" > "$dir/tmp-args-$n"; mv "$dir/tmp-args-$n" "$dir/args-$n"
exec 3<&0
(k=0; while IFS= read -r l; do k=$((k+1)); printf '%s\n' "$l" > "$dir/tmp-$n-$k"; mv "$dir/tmp-$n-$k" "$dir/in-$n-$k"; done; echo $k > "$dir/tmp-eof-$n"; mv "$dir/tmp-eof-$n" "$dir/eof-$n") <&3 &
while [ ! -e "$dir/in-$n-1" ]; do sleep 0.01; done
sess=${2:-sess-$n}
echo '{"type":"system","subtype":"init","session_id":"'$sess'"}'
if grep -q GATE "$dir/in-$n-1"; then while [ ! -e "$dir/gate" ]; do sleep 0.01; done; fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"reply '$n'.1","session_id":"'$sess'"}'
while [ ! -e "$dir/eof-$n" ]; do sleep 0.01; done
k=$(cat "$dir/eof-$n"); j=2
while [ $j -le $k ]; do
  echo '{"type":"result","subtype":"success","is_error":false,"result":"reply '$n'.'$j'","session_id":"'$sess'"}'
  j=$((j+1))
done`)
}

func steerHarness(t *testing.T, dir string, modify func(*Options)) *harness {
	t.Helper()
	return newHarness(t, harnessConfig{agent: steerAgent(t, dir), modify: func(o *Options) {
		o.Agent.Output = agent.OutputClaudeStream
		o.Agent.Input = agent.InputStreamJSON
		o.Agent.ResumeArgs = []string{"--resume", "{session}"}
		o.Agent.Timeout = time.Minute
		o.MidTurn = MidTurnSteer
		if modify != nil {
			modify(o)
		}
	}})
}

// steer: a message posted while the chat's turn runs is written into the
// running agent as a user message (the <messages> format), is part of
// that turn (never prompted again), and each result is a reply, delivered
// once.
func TestSteerWritesIntoTheRunningTurn(t *testing.T) {
	dir := t.TempDir()
	h := steerHarness(t, dir, nil)
	h.post(testChat, "m1", "GATE: a long question")
	turnFile(t, dir, "in-1", 1)
	posted := time.Now()
	h.post(testChat, "m2", "and one more thing")
	for deadline := posted.Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		if _, err := os.Stat(filepath.Join(dir, "in-1-2")); err == nil {
			t.Logf("steering message posted → agent stdin received it: %v", time.Since(posted))
			break
		}
	}
	in2 := turnFile(t, dir, "in-1", 2)
	if !strings.HasPrefix(in2, `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"\u003cmessages\u003e\n\u003cmessage seq=`) ||
		!strings.Contains(in2, `and one more thing\u003c/message\u003e\n\u003c/messages\u003e\n"}]}}`) {
		t.Fatalf("the agent got %s; want the message as a user message in the <messages> format", in2)
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if sent := texts(h.waitSent(testChat, 2)); !slices.Equal(sent, []string{"reply 1.1", "reply 1.2"}) {
		t.Fatalf("sent %q; want both results, once each", sent)
	}
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnSucceeded {
		t.Fatalf("turn %+v", ts[0])
	}
	testwait.For(t, 10*time.Second, "no pending work", func() bool { return len(h.pending()) == 0 })
	h.post(testChat, "m3", "next")
	h.waitSent(testChat, 3)
	first := turnFile(t, dir, "in-2", 1)
	if !strings.Contains(first, "next") || strings.Contains(first, "one more thing") || strings.Contains(first, "long question") {
		t.Errorf("the next turn's prompt: %s\nwant only the new message", first)
	}
	if args := turnFile(t, dir, "args", 2); args != "--resume sess-1" {
		t.Errorf("next turn args %q; want it to resume the session", args)
	}
	if len(h.turns("main")) != 2 {
		t.Errorf("turns %+v; want two (the steered message ran in the first)", h.turns("main"))
	}
}

// With agent.input: prompt, steer queues: a message posted while the
// turn runs is the next turn's.
func TestSteerWithoutStreamInputQueues(t *testing.T) {
	h, dir := stopHarness(t, func(o *Options) { o.MidTurn = MidTurnSteer })
	h.post(testChat, "m1", "a LONG job")
	childPid(t, dir, 1)
	h.post(testChat, "m2", "more, instead")
	h.post(testChat, "m3", "/stop")
	if sent := texts(h.waitSent(testChat, 2)); !slices.Equal(sent, []string{stopStopped, "reply 2"}) {
		t.Fatalf("sent %q; want the stop, then the next turn's reply", sent)
	}
	if prompt := turnFile(t, dir, "prompt", 2); !strings.Contains(prompt, "more, instead") || strings.Contains(prompt, "LONG") {
		t.Errorf("the next prompt:\n%s\nwant the queued message only", prompt)
	}
}

// interrupt: a message posted while the chat's turn runs stops it (its
// process tree gone) and one new turn gets the interrupted batch and the
// new message, resuming the session.
func TestInterruptRunsAgainWithBoth(t *testing.T) {
	h, dir := stopHarness(t, func(o *Options) { o.MidTurn = MidTurnInterrupt })
	h.post(testChat, "m1", "a LONG job")
	pid := childPid(t, dir, 1)
	posted := time.Now()
	h.post(testChat, "m2", "actually, do this instead")
	requireStopped(t, pid, posted)
	if sent := texts(h.waitSent(testChat, 1)); sent[0] != "reply 2" {
		t.Fatalf("sent %q; want the new turn's reply", sent)
	}
	prompt := turnFile(t, dir, "prompt", 2)
	if !strings.Contains(prompt, "a LONG job") || !strings.Contains(prompt, "actually, do this instead") {
		t.Errorf("the new turn's prompt:\n%s\nwant the interrupted batch and the new message", prompt)
	}
	if args := turnFile(t, dir, "args", 2); args != "--resume sess-1" {
		t.Errorf("new turn args %q; want it to resume the interrupted turn's session", args)
	}
	ts := h.waitTurns("main", 2)
	if ts[0].Status != store.TurnStopped || ts[1].Status != store.TurnSucceeded {
		t.Errorf("turns %+v; want the interrupted one stopped, then one that succeeded", ts)
	}
	if _, err := os.Stat(filepath.Join(dir, "prompt-3")); err == nil {
		t.Error("a third turn ran")
	}
}

// interrupt, on a platform that answers a channel message in the thread
// under it (Slack): a message written in that thread while the channel's
// turn runs interrupts that turn, as one in the channel does (and as /stop
// and steer there do), and one new turn gets the interrupted batch and the
// thread's message, resuming the session; it is not queued behind a rerun
// of the interrupted batch.
func TestInterruptFromTheReplysThread(t *testing.T) {
	h, dir := stopHarness(t, func(o *Options) { o.MidTurn = MidTurnInterrupt })
	h.post(testChat, "m1", "a LONG job")
	pid := childPid(t, dir, 1)
	posted := time.Now()
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: testChat, ID: "m2", Topic: "m1",
		Sender: "test:user/ann", SenderName: "Ann", Text: "in the thread: do this instead", Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
	requireStopped(t, pid, posted)
	sent := h.waitSent(testChat, 1)
	if sent[0].Text != "reply 2" {
		t.Fatalf("sent %q; want the new turn's reply", texts(sent))
	}
	if sent[0].Topic != "" || sent[0].ReplyTo != "m1" {
		t.Errorf("the reply went to topic %q replying to %q; want it under m1, in the thread it was asked in "+
			"(a Slack reply to m2, itself in m1's thread, would open a thread under a reply)", sent[0].Topic, sent[0].ReplyTo)
	}
	prompt := turnFile(t, dir, "prompt", 2)
	if !strings.Contains(prompt, "a LONG job") || !strings.Contains(prompt, "in the thread: do this instead") {
		t.Errorf("the new turn's prompt:\n%s\nwant the interrupted batch and the thread's message", prompt)
	}
	if args := turnFile(t, dir, "args", 2); args != "--resume sess-1" {
		t.Errorf("new turn args %q; want it to resume the interrupted turn's session", args)
	}
	ts := h.waitTurns("main", 2)
	if ts[0].Status != store.TurnStopped || ts[1].Status != store.TurnSucceeded {
		t.Errorf("turns %+v; want the interrupted one stopped, then one that succeeded", ts)
	}
	testwait.For(t, 10*time.Second, "no pending work", func() bool { return len(h.pending()) == 0 })
	if _, err := os.Stat(filepath.Join(dir, "prompt-3")); err == nil {
		t.Error("a third turn ran")
	}
}

// An interrupted turn keeps its session as a stopped one does, also for an
// agent that names no session and resumes with arguments that do not
// carry one (--continue): the new turn resumes it.
func TestInterruptKeepsASessionTheAgentDoesNotName(t *testing.T) {
	h, dir := stopHarness(t, func(o *Options) {
		o.MidTurn = MidTurnInterrupt
		o.Agent.Output = agent.OutputText
		o.Agent.ResumeArgs = []string{"--continue"}
	})
	h.post(testChat, "m1", "a LONG job")
	pid := childPid(t, dir, 1)
	posted := time.Now()
	h.post(testChat, "m2", "actually, do this instead")
	requireStopped(t, pid, posted)
	h.waitSent(testChat, 1)
	if args := turnFile(t, dir, "args", 2); args != "--continue" {
		t.Errorf("new turn args %q; want it to resume the interrupted turn's session (--continue)", args)
	}
}

// A steered message counts in the flood limits like one that starts a
// turn: past the chat's limit it is not written into the running agent;
// it waits, stored, for the turn the limit allows, and the chat is told.
func TestSteerCountsInTheFloodLimits(t *testing.T) {
	dir := t.TempDir()
	clock := newFakeClock()
	h := steerHarness(t, dir, func(o *Options) {
		o.Now = clock.Now
		o.Store.SetClock(clock.Now)
		o.Limits = Limits{TurnsPerChat: Rate{Count: 2, Window: time.Hour}}
	})
	h.post(testChat, "m1", "GATE: a long question") // the turn: 1 of 2
	turnFile(t, dir, "in-1", 1)
	h.post(testChat, "m2", "one more thing") // steered: 2 of 2
	turnFile(t, dir, "in-1", 2)
	h.post(testChat, "m3", "and another") // over the limit
	testwait.Count(t, 10*time.Second, "slow-down notices", 1, func() int { return len(slowDowns(h)) })
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if lines := turnFile(t, dir, "eof", 1); lines != "2" {
		t.Errorf("the running agent got %s input lines; want 2 (the prompt and m2, not m3)", lines)
	}
	h.waitSent(testChat, 3) // the notice, reply 1.1, reply 1.2
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnSucceeded {
		t.Fatalf("turn %+v", ts[0])
	}
	if _, err := os.Stat(filepath.Join(dir, "turn-2")); err == nil {
		t.Fatal("a second turn ran within the limit's window")
	}
	clock.Advance(time.Hour)
	if first := turnFile(t, dir, "in-2", 1); !strings.Contains(first, "and another") || strings.Contains(first, "one more thing") {
		t.Errorf("the next turn's prompt: %s\nwant m3 (held, not lost) and not m2 (steered already)", first)
	}
}

// steer, on a platform that answers a channel message in the thread under
// it (Slack): a message written in that thread while the channel's turn
// runs is steered into that turn, as one in the channel is; it is not
// queued for a turn of its own.
func TestSteerFromTheReplysThread(t *testing.T) {
	dir := t.TempDir()
	h := steerHarness(t, dir, nil)
	h.post(testChat, "m1", "GATE: a long question")
	turnFile(t, dir, "in-1", 1)
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: testChat, ID: "m2", Topic: "m1",
		Sender: "test:user/ann", SenderName: "Ann", Text: "and in the thread: one more thing", Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
	if in2 := turnFile(t, dir, "in-1", 2); !strings.Contains(in2, "in the thread: one more thing") {
		t.Fatalf("the running turn got %s; want the thread's message", in2)
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if sent := texts(h.waitSent(testChat, 2)); !slices.Equal(sent, []string{"reply 1.1", "reply 1.2"}) {
		t.Fatalf("sent %q; want both results, once each", sent)
	}
	h.waitTurns("main", 1)
	testwait.For(t, 10*time.Second, "no pending work", func() bool { return len(h.pending()) == 0 })
	if ts := h.turns("main"); len(ts) != 1 {
		t.Errorf("turns %+v; want one (the thread's message was steered into it)", ts)
	}
}

// steer: a message with an attachment that arrives while the turn runs
// reaches an agent with its file in the folder, as every message's
// attachments do before the turn that shows it (CONTRACT §8): it is not
// written into the running agent without its file ("not fetched", never
// prompted again, the file lost to the agent) but answered by the next
// turn, its file downloaded; so is what follows it for that turn ("what
// do you think of it?" after the picture), in order. A message before it
// is steered as usual.
func TestSteerMessageWithAttachmentKeepsItsFile(t *testing.T) {
	dir := t.TempDir()
	ra := newRich(0)
	ra.files["cat"] = []byte("meow")
	h := richHarness(t, ra, steerAgent(t, dir), func(o *Options) {
		o.Agent.Output = agent.OutputClaudeStream
		o.Agent.Input = agent.InputStreamJSON
		o.Agent.ResumeArgs = []string{"--resume", "{session}"}
		o.Agent.Timeout = time.Minute
		o.MidTurn = MidTurnSteer
	})
	h.post(testChat, "m1", "GATE: a long question")
	turnFile(t, dir, "in-1", 1)
	h.post(testChat, "m2", "and one more thing")
	if in2 := turnFile(t, dir, "in-1", 2); !strings.Contains(in2, "one more thing") {
		t.Fatalf("the running agent got %s; want the message steered into it", in2)
	}
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m3", Text: "here is the picture", Verb: adapters.VerbMention,
		Attachments: []adapters.Attachment{{Name: "cat.png", MIME: "image/png", Size: 4, Ref: "cat"}}})
	h.post(testChat, "m4", "what do you think of it?")
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitTurns("main", 2)
	if n := turnFile(t, dir, "eof", 1); n != "2" {
		t.Errorf("the running agent got %s messages; want 2 (the prompt and the message before the picture)", n)
	}
	next := turnFile(t, dir, "in-2", 1)
	pic, q := strings.Index(next, "here is the picture"), strings.Index(next, "what do you think of it?")
	if pic < 0 || q < pic || !strings.Contains(next, `attachment path=\"inbox/`) {
		t.Fatalf("the next turn's prompt: %s\nwant the picture with its file downloaded into the folder, then the question", next)
	}
	if n := ra.downloadCount("cat"); n != 1 {
		t.Errorf("the attachment was downloaded %d times; want once", n)
	}
}
