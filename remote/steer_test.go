package remote

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/internal/testwait"
)

// A turn on a worker is steered like a local one: the message goes to
// the worker running it, is written into the agent's stdin as the next
// user message (in order), the answer says it was taken, every result is
// a reply, and after the turn a message is refused (the next turn's).
func TestRemoteSteer(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	dir := t.TempDir()
	r := newRunner(t, nc, `dir="`+dir+`"
IFS= read -r l1; printf '%s\n' "$l1" > "$dir/in-1"
echo '{"type":"system","subtype":"init","session_id":"s-r"}'
while [ ! -e "$dir/gate" ]; do sleep 0.01; done
IFS= read -r l2; printf '%s\n' "$l2" > "$dir/in-2"
IFS= read -r l3; printf '%s\n' "$l3" > "$dir/in-3"
echo '{"type":"result","subtype":"success","is_error":false,"result":"first","session_id":"s-r"}'
cat > /dev/null
echo '{"type":"result","subtype":"success","is_error":false,"result":"second","session_id":"s-r"}'`, 0)
	steer := agent.NewSteering()
	in := turnInput(t, "t-steer")
	in.Steer = steer
	type outcome struct {
		res agent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := r.Run(t.Context(), agent.Spec{Timeout: time.Minute, Output: agent.OutputClaudeStream, Input: agent.InputStreamJSON}, in)
		done <- outcome{res, err}
	}()
	testwait.For(t, 20*time.Second, "the prompt on the worker", func() bool { _, err := os.Stat(filepath.Join(dir, "in-1")); return err == nil })
	for i, text := range []string{"<messages>one</messages>", "<messages>two</messages>"} {
		if !steer.Send(int64(i+1), text) {
			t.Fatalf("the steering of a running turn refused %q", text)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the steered remote turn did not end")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !slices.Equal(o.res.Replies, []string{"first", "second"}) {
		t.Errorf("replies %q; want both results", o.res.Replies)
	}
	for n, want := range map[string]string{"in-2": "one", "in-3": "two"} {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		if !strings.Contains(string(b), `"text":"\u003cmessages\u003e`+want) {
			t.Errorf("%s = %s; want the message %q as the next user message", n, b, want)
		}
	}
	if steer.Send(3, "late") {
		t.Error("a message after the turn was taken")
	}
	if got := steer.Taken(); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("the outcome lists %v as taken; want [1 2]", got)
	}
}

// Steering a turn on a worker never waits for the worker: a message the
// agent reads only seconds later (a message larger than a pipe's buffer,
// while the agent is busy) is handed on at once, written once, and the
// turn's outcome, not an answer in time, says it was taken: it is part of
// that turn and never the next one's.
func TestRemoteSteerSettlesByOutcome(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	dir := t.TempDir()
	r := newRunner(t, nc, `dir="`+dir+`"
IFS= read -r l1; printf '%s\n' "$l1" > "$dir/in-1"
echo '{"type":"system","subtype":"init","session_id":"s-r"}'
while [ ! -e "$dir/gate" ]; do sleep 0.01; done
IFS= read -r l2; printf '%s\n' "$l2" > "$dir/in-2"
echo '{"type":"result","subtype":"success","is_error":false,"result":"first","session_id":"s-r"}'
cat >> "$dir/rest"
echo '{"type":"result","subtype":"success","is_error":false,"result":"second","session_id":"s-r"}'`, 0)
	steer := agent.NewSteering()
	in := turnInput(t, "t-steer-big")
	in.Steer = steer
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(t.Context(), agent.Spec{Timeout: time.Minute, Output: agent.OutputClaudeStream, Input: agent.InputStreamJSON}, in)
		done <- err
	}()
	testwait.For(t, 20*time.Second, "the prompt on the worker", func() bool { _, err := os.Stat(filepath.Join(dir, "in-1")); return err == nil })
	big := "<messages>" + strings.Repeat("x", 256<<10) + "</messages>"
	// The agent reads nothing until the gate opens, after Send returned:
	// a Send that waited for the worker would wait for the agent.
	if !steer.Send(42, big) {
		t.Fatal("the steering of a running turn refused the message")
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the steered remote turn did not end")
	}
	in2, _ := os.ReadFile(filepath.Join(dir, "in-2"))
	rest, _ := os.ReadFile(filepath.Join(dir, "rest"))
	if n := strings.Count(string(in2)+string(rest), strings.Repeat("x", 256<<10)); n != 1 {
		t.Errorf("the agent got the message %d times; want once", n)
	}
	if !steer.Took(42) {
		t.Error("the outcome does not list the message the agent took: the gateway would queue it again")
	}
}
