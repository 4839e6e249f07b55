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
	for _, text := range []string{"<messages>one</messages>", "<messages>two</messages>"} {
		posted := time.Now()
		if !steer.Send(text) {
			t.Fatalf("the worker did not take %q", text)
		}
		t.Logf("steering message sent → taken by the agent on the worker: %v", time.Since(posted))
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
	if steer.Send("late") {
		t.Error("a message after the turn was taken")
	}
}
