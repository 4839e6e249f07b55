//go:build interop && linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// The real Claude Code CLI with stream-json input (agent.input:
// stream-json, agent.mid_turn: steer) in the sandbox, against a fake
// Messages API: a message posted while the model's Bash call runs reaches
// the model in the same process and conversation and is answered once;
// /stop during such a call ends the process tree, records the turn
// stopped, and the next message resumes the session.
//
//	GOFLAGS=-tags=sqlite_fts5,interop CGO_ENABLED=1 go test ./cmd/switchboard -run TestE2EClaudeCodeSteerAndStop -count=1 -v
func TestE2EClaudeCodeSteerAndStop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test that installs Claude Code from npm, builds and runs the binary")
	}
	requireBwrap(t)
	installDir, claudeBin := claudeCode(t)
	switchboardBinary(t)
	api := newSteerModel(t)

	dir := t.TempDir()
	agentEnv, env := claudeEnv(t, dir, claudeBin, api.srv.URL, "sk-ant-test-"+randomHex(t))
	envYAML, _ := json.Marshal(agentEnv)
	cfg := fmt.Sprintf(`data_dir: ./data
operator_folder: root
log: {level: debug, format: json}
agent:
  command: ["claude", "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
  resume_args: ["--resume", "{session}"]
  output: claude-stream
  input: stream-json
  mid_turn: steer
  timeout: 3m
  sandbox: bwrap
  binds: [{path: ~/.claude, rw: true}, {path: ~/.claude.json, rw: true}, {path: %q}, {path: %q}]
  env: %s
adapters:
  web: {enabled: true, listen: "127.0.0.1:0", stream: "off"}
admin: {listen: ""}
groups:
  - folder: root
  - folder: main
routes:
  - {match: {platform: web}, target: main}
`, filepath.Join(dir, "bin"), installDir, envYAML)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir, env...)
	t.Cleanup(func() { t.Logf("requests the fake Anthropic API received:\n%s", api.summary()) })

	// Steer: the model's Bash call runs 8 s; the message posted meanwhile
	// is folded into the running answer.
	g.mustPost("lobby", "ann", "run the long job")
	testwait.For(t, claudeTurnWithin, "the model's Bash call", func() bool { return api.bashCalls() == 1 })
	posted := time.Now()
	g.mustPost("lobby", "ann", "also check the logs")
	testwait.For(t, claudeTurnWithin, "the steered message at the model", func() bool { return api.sawUser("also check the logs") })
	t.Logf("steering message posted → the fake Messages API received it: %v (the Bash call ends first)", time.Since(posted))
	bot := g.waitBot("lobby", 1)
	testwait.For(t, 30*time.Second, "the turn recorded", func() bool { return len(g.records("turn done", "", "")) >= 1 })
	if got := botTexts(g.botMessages("lobby")); !slices.Equal(got, []string{"ack: also check the logs"}) {
		t.Errorf("bot messages %q (first %q); want the one answer to the steered message", got, bot[0].Text)
	}
	r := api.lastWithUser("also check the logs")
	if r == nil || !r.hasText("user", "run the long job") {
		t.Errorf("the request carrying the steered message is not the running conversation:\n%s", api.summary())
	}

	// Stop: /stop during the next Bash call ends the tree; the next message
	// resumes the session.
	g.mustPost("lobby", "ann", "run the long job again")
	testwait.For(t, claudeTurnWithin, "the second Bash call", func() bool { return api.bashCalls() == 2 })
	pids := folderAgents(t, dir, "main")
	if len(pids) < 2 {
		t.Fatalf("agent processes %v; want Claude Code and its Bash call", pids)
	}
	stopped := time.Now()
	g.mustPost("lobby", "ann", "/stop")
	testwait.For(t, 10*time.Second, "the agent's processes gone", func() bool { return len(folderAgents(t, dir, "main")) == 0 })
	t.Logf("/stop posted → Claude Code's process tree gone: %v", time.Since(stopped))
	testwait.For(t, 30*time.Second, "the stop recorded", func() bool { return len(g.records("turn stopped", "", "")) == 1 })
	g.mustPost("lobby", "ann", "hello after the stop")
	testwait.For(t, claudeTurnWithin, "the answer after the stop", func() bool {
		return slices.Contains(botTexts(g.botMessages("lobby")), "ack: hello after the stop")
	})
	// The same conversation goes on. (Claude Code 2.1.332, ended by the
	// SIGTERM, leaves the stopped exchange out of the resumed conversation,
	// though its transcript holds the prompt.)
	r = api.lastWithUser("hello after the stop")
	if r == nil || !r.hasText("assistant", "ack: also check the logs") {
		t.Errorf("the turn after the stop did not resume the session:\n%s", api.summary())
	}
}

// steerModel is a Messages API playing a model that runs an 8 s Bash
// command for "run the long job…" and answers "ack: <text>" to the last
// chat message otherwise.
type steerModel struct {
	t   *testing.T
	srv *httptest.Server

	mu    sync.Mutex
	reqs  []*messagesRequest
	bash  int
	lines []string
}

func newSteerModel(t *testing.T) *steerModel {
	m := &steerModel{t: t}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *steerModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _, ok := readMessagesRequest(w, r, body)
	if !ok {
		return
	}
	prompt, called := req.currentTurn()
	text := lastMessageText(prompt)
	m.mu.Lock()
	m.reqs = append(m.reqs, &req)
	id := len(m.reqs)
	blocks, stop := []contentBlock{{Type: "text", Text: "ack: " + text}}, "end_turn"
	switch {
	case text == "":
		blocks = []contentBlock{{Type: "text", Text: "ok"}}
	case strings.HasPrefix(text, "run the long job") && !slices.Contains(called, "Bash"):
		input, _ := json.Marshal(map[string]any{"command": "timeout 8 tail -f /dev/null; echo finished", "description": "a long job"})
		blocks, stop = []contentBlock{{Type: "tool_use", ID: fmt.Sprintf("toolu_%02d", id), Name: "Bash", Input: input}}, "tool_use"
		m.bash++
	}
	var shape []string
	for _, msg := range req.Messages {
		for _, b := range msg.blocks() {
			t := b.Text
			if len(t) > 60 {
				t = t[len(t)-60:]
			}
			shape = append(shape, msg.Role+":"+b.Type+":"+strings.ReplaceAll(t, "\n", " "))
		}
	}
	m.lines = append(m.lines, fmt.Sprintf("request %d: messages=%d last text %q called %v → %s\n    %s", id, len(req.Messages), text, called, stop, strings.Join(shape, "\n    ")))
	m.mu.Unlock()
	writeMessage(w, &req, blocks, stop, id)
}

func (m *steerModel) bashCalls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bash
}

// sawUser reports whether a request carried a user message with s.
func (m *steerModel) sawUser(s string) bool { return m.lastWithUser(s) != nil }

// lastWithUser is the last request carrying a user message with s.
func (m *steerModel) lastWithUser(s string) *messagesRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.reqs) - 1; i >= 0; i-- {
		if m.reqs[i].hasText("user", s) {
			return m.reqs[i]
		}
	}
	return nil
}

func (m *steerModel) summary() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.lines, "\n")
}
