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

	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
)

// sessionAgent is a Claude-Code-like agent (output claude-json, resumed
// with --resume <id>) that logs the session each run resumed ("fresh"
// without one) to runs, one line per run. A fresh run makes the session
// s-<run number>. mode "lost": resuming a session it did not make fails
// the way Claude Code does; mode "resume-fails": every resumed run fails.
func sessionAgent(t *testing.T, mode string) (argv []string, runs string) {
	runs = filepath.Join(t.TempDir(), "runs")
	made := t.TempDir()
	argv = testagent.Script(t, `cat >/dev/null
echo "${5:-fresh}" >> "$1"
if [ "$4" = "--resume" ]; then
	if [ "$3" = resume-fails ]; then echo "agent: something broke" >&2; exit 1; fi
	if [ ! -e "$2/$5" ]; then echo "No conversation found with session ID: $5" >&2; exit 1; fi
	id="$5"
else
	id="s-$(wc -l < "$1" | tr -d ' ')"
	touch "$2/$id"
fi
printf '{"type":"result","is_error":false,"result":"answer in %s","session_id":"%s"}\n' "$id" "$id"`, runs, made, mode)
	return argv, runs
}

// A chat whose stored session the agent cannot resume is not broken for
// good. When the agent says it does not know the session, the session is
// dropped at once and the retry starts fresh; when a resumed turn just
// keeps failing, the batch's last attempt starts fresh. Either way the chat
// is answered and its next message resumes the new session.
func TestLostSessionRecovers(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		firstRuns []string // the sessions the first message's attempts resumed
		newID     string   // the session the answer was made in
		nextRuns  []string // the sessions the next message's attempts resumed
	}{
		{mode: "lost", firstRuns: []string{"gone", "fresh"}, newID: "s-2", nextRuns: []string{"s-2"}},
		{mode: "resume-fails", firstRuns: []string{"gone", "gone", "fresh"}, newID: "s-3", nextRuns: []string{"s-3", "s-3", "fresh"}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			argv, runs := sessionAgent(t, tc.mode)
			h := newHarness(t, harnessConfig{agent: argv, modify: func(o *Options) {
				o.Agent.Output, o.Agent.ResumeArgs = agent.OutputClaudeJSON, []string{"--resume", "{session}"}
			}})
			ctx := context.Background()
			if err := h.st.SetSession(ctx, "main", testChat, "", "gone"); err != nil {
				t.Fatal(err)
			}
			readRuns := func() []string {
				b, _ := os.ReadFile(runs)
				return strings.Fields(string(b))
			}

			h.post(testChat, "m1", "hello")
			sent := h.waitSent(testChat, 2)
			if !strings.Contains(sent[0].Text, "Retrying") || sent[1].Text != "answer in "+tc.newID {
				t.Fatalf("the chat got %q, %q; want a notice, then the answer made in a fresh session %s", sent[0].Text, sent[1].Text, tc.newID)
			}
			if got := readRuns(); strings.Join(got, " ") != strings.Join(tc.firstRuns, " ") {
				t.Errorf("the first message's attempts resumed %q, want %q", got, tc.firstRuns)
			}
			testwait.For(t, 5*time.Second, "the new session stored", func() bool {
				s, err := h.st.Session(ctx, "main", testChat, "")
				return err == nil && s == tc.newID
			})

			h.post(testChat, "m2", "again")
			sent = h.waitSent(testChat, 3)
			if want := "answer in " + map[string]string{"lost": tc.newID, "resume-fails": "s-6"}[tc.mode]; sent[2].Text != want {
				t.Errorf("the next message's answer %q, want %q", sent[2].Text, want)
			}
			if got := readRuns()[len(tc.firstRuns):]; strings.Join(got, " ") != strings.Join(tc.nextRuns, " ") {
				t.Errorf("the next message's attempts resumed %q, want %q (the new session first)", got, tc.nextRuns)
			}
		})
	}
}

// What Claude Code 2.1.332 and Codex 0.169.0 print when asked to resume a
// session they do not have (both exit with status 1).
func TestSessionLost(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		want         bool
	}{
		{"claude code", "No conversation found with session ID: 0a2d0ab2-1111-4222-8333-444455556666\n", true},
		{"codex", "Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2129d-8fde-74c0-825e-000000000000 (code -32600)\n\nStack backtrace:\n   0: <unknown>\n", true},
		{"another failure", "Error: stream disconnected before completion\n", false},
	} {
		if got := sessionLost(agent.Result{Stderr: tc.stderr}, nil); got != tc.want {
			t.Errorf("%s: sessionLost = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// sessionResetAgent is a Claude-Code-like agent (output claude-json,
// resumed with --resume <id>) that appends the session each run resumed
// ("fresh" without one) to runs, and calls reset_session over its MCP
// socket when its prompt says "forget", as a model asked to start over
// does. A fresh run makes the session s-<run number>.
func sessionResetAgent(runs string, args []string) error {
	prompt, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	resumed := "fresh"
	if len(args) == 2 && args[0] == "--resume" {
		resumed = args[1]
	}
	f, err := os.OpenFile(runs, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, resumed)
	f.Close()
	b, err := os.ReadFile(runs)
	if err != nil {
		return err
	}
	id := resumed
	if id == "fresh" {
		id = fmt.Sprintf("s-%d", len(strings.Fields(string(b))))
	}
	if strings.Contains(string(prompt), "forget") {
		c, err := testmcp.Connect(os.Getenv("SWITCHBOARD_MCP_SOCKET"), testmcp.Options{Client: "session-reset-agent"})
		if err != nil {
			return err
		}
		defer c.Close()
		res, err := c.CallTool("reset_session", `{}`)
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("reset_session refused: %s", res.Text())
		}
	}
	fmt.Printf(`{"type":"result","is_error":false,"result":"answer in %s","session_id":"%s"}`+"\n", id, id)
	return nil
}

// An agent asked to start over calls reset_session during its turn; the
// chat's next message starts a fresh session. The turn that reset (it ran
// in the old session, and says so at its end) must not store that session
// again: the user was told the conversation was forgotten, and the next
// turn resumed it with all of its context.
func TestResetSessionDuringTurn(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	h := newHarness(t, harnessConfig{agent: []string{os.Args[0], "session-reset-agent", runs}, modify: func(o *Options) {
		o.Agent.Output, o.Agent.ResumeArgs = agent.OutputClaudeJSON, []string{"--resume", "{session}"}
	}})
	h.post(testChat, "m1", "hello")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "please forget everything we said")
	h.waitSent(testChat, 2)
	h.post(testChat, "m3", "hi again")
	sent := h.waitSent(testChat, 3)
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Fields(string(b)), []string{"fresh", "s-1", "fresh"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the three turns resumed %q, want %q: the turn after reset_session must start fresh", got, want)
	}
	if sent[2].Text != "answer in s-3" {
		t.Errorf("the message after the reset was answered %q, want the answer of a fresh session s-3", sent[2].Text)
	}
}
