package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
)

// steerAgent stands in for Claude Code with --input-format stream-json:
// it saves its first input line, waits for dir/gate, saves the second,
// answers with a result event ("first"), and then, as Claude Code does
// for a message it got while it was writing, a second result ("second")
// once its stdin ends; a third line would be saved too.
const steerAgent = `dir=$1
IFS= read -r l1; printf '%s\n' "$l1" > "$dir/in-1"
echo '{"type":"system","subtype":"init","session_id":"s-steer"}'
while [ ! -e "$dir/gate" ]; do sleep 0.01; done
IFS= read -r l2; printf '%s\n' "$l2" > "$dir/in-2"
echo '{"type":"result","subtype":"success","is_error":false,"result":"first","session_id":"s-steer"}'
if IFS= read -r l3; then printf '%s\n' "$l3" > "$dir/in-3"; fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"second","session_id":"s-steer"}'`

// With stream-json input the prompt is the first user message, a message
// sent while the turn runs is the next, stdin closes at the first result
// (a later Send is refused: the message is the next turn's), and every
// result is a reply.
func TestRunSteerStreamJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	spec := Spec{Command: testagent.Script(t, steerAgent, dir), Output: OutputClaudeStream, Input: InputStreamJSON, Timeout: 20 * time.Second}
	steer := NewSteering()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(context.Background(), spec, Input{Prompt: "<messages>hi</messages>", Steer: steer})
		done <- outcome{res, err}
	}()
	testwait.For(t, 10*time.Second, "the first input", func() bool { _, err := os.Stat(filepath.Join(dir, "in-1")); return err == nil })
	if !steer.Send(7, "<messages>also this</messages>") {
		t.Fatal("Send refused a message while the turn runs")
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !slices.Equal(o.res.Replies, []string{"first", "second"}) || o.res.Reply != "second" || o.res.SessionID != "s-steer" {
		t.Errorf("replies %q reply %q session %q; want both results, the last as Reply", o.res.Replies, o.res.Reply, o.res.SessionID)
	}
	for n, want := range map[string]string{"in-1": "<messages>hi</messages>", "in-2": "<messages>also this</messages>"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != string(userMessageLine(want)[:len(userMessageLine(want))-1]) {
			t.Errorf("%s = %s; want the user message %q", n, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "in-3")); err == nil {
		t.Error("stdin stayed open after the first result")
	}
	if steer.Send(8, "too late") {
		t.Error("Send took a message after the turn ended")
	}
	if steer.Sent() != 1 || !slices.Equal(steer.Taken(), []int64{7}) || steer.Took(8) {
		t.Errorf("Sent = %d, Taken %v; want 1, [7] (the message written, not the late one)", steer.Sent(), steer.Taken())
	}
}

func TestUserMessageLine(t *testing.T) {
	got := string(userMessageLine("a \"b\"\n<c>"))
	want := `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a \"b\"\n\u003cc\u003e"}]}}` + "\n"
	if got != want {
		t.Errorf("got %s want %s", got, want)
	}
}
