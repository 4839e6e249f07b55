//go:build interop && linux

package main

// The real Claude Code CLI (@anthropic-ai/claude-code, pinned below) as
// agent.command, configured the way docs/operating.md tells operators, in
// the bubblewrap sandbox, against a fake Anthropic Messages API on
// 127.0.0.1 that plays a scripted model.
//
// Reproduce the latency figure it logs (claude_turn_latency):
//
//	make test-interop RUN=TestE2EClaudeCode   (or: GOFLAGS=-tags=sqlite_fts5,interop CGO_ENABLED=1 go test ./cmd/switchboard -run TestE2EClaudeCode -count=1 -v)
//
// The first run installs the package into ~/.cache/switchboard-test/npm
// (about 400 MB); later runs reuse it.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

const (
	claudeCodeVersion = "2.1.332"
	claudeTurnWithin  = 90 * time.Second // a cold first start maps a 400 MB binary
)

// claudeCode installs Claude Code and returns its install directory and the
// native binary in it. npmPackage installs with --ignore-scripts, so
// bin/claude.exe stays the package's placeholder (its post-install script
// would replace it): the binary is the one in the platform package.
// claudeEnv sets up in dir the operator's side of running the real Claude
// Code as docs/operating.md says, talking to apiURL with apiKey, and
// returns agent.env's names and the gateway's environment. The home
// (dir/home): ~/.claude and ~/.claude.json exist before the first start
// (a login creates them; with an API key the operator creates them), so
// their binds hold the sessions that --resume needs. `claude` is on the
// gateway's PATH (dir/bin), installed outside /usr and /opt: its directory
// and the npm install it points into are bound read-only, as the docs tell
// operators. As root, Claude Code refuses --dangerously-skip-permissions
// unless told it is sandboxed (IS_SANDBOX).
func claudeEnv(t testing.TB, dir, claudeBin, apiURL, apiKey string) (agentEnv, env []string) {
	t.Helper()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(claudeBin, filepath.Join(binDir, "claude")); err != nil {
		t.Fatal(err)
	}
	agentEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"}
	env = []string{
		"HOME=" + home,
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ANTHROPIC_API_KEY=" + apiKey,
		"ANTHROPIC_BASE_URL=" + apiURL,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	if os.Geteuid() == 0 {
		agentEnv = append(agentEnv, "IS_SANDBOX")
		env = append(env, "IS_SANDBOX=1")
	}
	return agentEnv, env
}

func claudeCode(t testing.TB) (installDir, binary string) {
	t.Helper()
	installDir = npmPackage(t, "the Claude Code end-to-end test", "@anthropic-ai/claude-code@"+claudeCodeVersion)
	binary = filepath.Join(installDir, "node_modules", "@anthropic-ai", "claude-code-"+npmPlatform(t, runtime.GOOS, runtime.GOARCH), "claude")
	out, err := exec.Command(binary, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), claudeCodeVersion) {
		t.Fatalf("%s --version: %v: %s (want %s)", binary, err, out, claudeCodeVersion)
	}
	return installDir, binary
}

// TestE2EClaudeCode runs a gateway whose agent is the real Claude Code in
// the sandbox, for a tier-2 group (main/team) that owns every web room. The
// first chat message makes the scripted model call the switchboard MCP tool
// send (to another room), then answer; five more follow, resuming the
// session. It checks what the issue asks of a real agent: the tools Claude
// Code offers the model are the group's, the tool call takes effect, each
// answer reaches the room once, the second turn carries the first exchange,
// and no secret of the gateway's environment reaches the model API.
func TestE2EClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test that installs Claude Code from npm, builds and runs the binary")
	}
	requireBwrap(t)
	installDir, claudeBin := claudeCode(t)
	switchboardBinary(t)
	api := newFakeAnthropic(t)

	dir := t.TempDir()
	apiKey := "sk-ant-test-" + randomHex(t)
	secret := "sb-test-secret-" + randomHex(t)
	tgToken := "123456789:tg-secret-" + randomHex(t)
	agentEnv, env := claudeEnv(t, dir, claudeBin, api.srv.URL, apiKey)
	env = append(env, "SWITCHBOARD_TEST_SECRET="+secret, "TELEGRAM_BOT_TOKEN="+tgToken)
	envYAML, _ := json.Marshal(agentEnv)
	cfg := fmt.Sprintf(`data_dir: ./data
operator_folder: root
log: {level: debug, format: json}
agent:
  command: ["claude", "-p", "--output-format", "json", "--dangerously-skip-permissions"]
  resume_args: ["--resume", "{session}"]
  output: claude-json
  timeout: 2m
  sandbox: bwrap
  binds: [{path: ~/.claude, rw: true}, {path: ~/.claude.json, rw: true}, {path: %q}, {path: %q}]
  env: %s
adapters:
  web: {enabled: true, listen: "127.0.0.1:0"}
admin: {listen: ""}
groups:
  - folder: root
  - folder: main
  - folder: main/team
routes:
  - {match: {platform: web}, target: main/team}
`, filepath.Join(dir, "bin"), installDir, envYAML)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir, env...)
	t.Cleanup(func() { t.Logf("requests the fake Anthropic API received:\n%s", api.summary()) })

	// reply waits for the bot's message text in room and returns how long
	// it took since start.
	// Any other bot message (a failure notice) ends the wait early.
	reply := func(room, text string, start time.Time) time.Duration {
		t.Helper()
		var got []apiMsg
		testwait.For(t, claudeTurnWithin, fmt.Sprintf("bot message %q in %s", text, room), func() bool {
			got = g.botMessages(room)
			return slices.ContainsFunc(got, func(m apiMsg) bool {
				return m.Text == text || (!strings.HasPrefix(m.Text, "ack: ") && m.Text != sideNote)
			})
		})
		elapsed := time.Since(start)
		if !slices.ContainsFunc(got, func(m apiMsg) bool { return m.Text == text }) {
			t.Fatalf("waiting for %q in %s, the bot said %q", text, room, botTexts(got))
		}
		return elapsed
	}

	// Turn 1: the model calls send (to the room "side"), then answers.
	start := time.Now()
	g.mustPost("lobby", "ann", sendTrigger)
	first := reply("lobby", "ack: "+sendTrigger, start)
	reply("side", sideNote, start)

	// Turns 2-6: plain answers in the resumed session; each is timed from
	// the post to the answer in the room.
	var lat []time.Duration
	for i := 1; i <= 5; i++ {
		q := fmt.Sprintf("question %d", i)
		start := time.Now()
		g.mustPost("lobby", "ann", q)
		lat = append(lat, reply("lobby", "ack: "+q, start))
	}
	// The agent process's share, as the gateway measured each turn.
	var agentMS []float64
	for _, rec := range g.records("turn done", "", "") {
		if ms, ok := rec["ms"].(float64); ok {
			agentMS = append(agentMS, ms)
		}
	}
	t.Logf("claude_turn_latency: Claude Code %s in bubblewrap against a local fake API, message posted → reply in the room: median %s over %d turns %v (first turn, cold, with a tool call: %s); the agent process took (ms, all turns) %v",
		claudeCodeVersion, median(lat).Round(time.Millisecond), len(lat), roundAll(lat), first.Round(time.Millisecond), agentMS)

	// (c) Every answer reached its room exactly once, and nothing else did
	// (no failure notice, no stray reply).
	var want []string
	want = append(want, "ack: "+sendTrigger)
	for i := 1; i <= 5; i++ {
		want = append(want, fmt.Sprintf("ack: question %d", i))
	}
	if got := botTexts(g.botMessages("lobby")); !slices.Equal(got, want) {
		t.Errorf("bot messages in lobby: %q, want %q", got, want)
	}
	// (b) The send tool call took effect, once.
	if got := botTexts(g.botMessages("side")); !slices.Equal(got, []string{sideNote}) {
		t.Errorf("bot messages in side: %q, want the note sent through MCP once", got)
	}

	turns := api.turns()
	if len(turns) < 6 {
		t.Fatalf("the fake API saw the prompts of %d turns, want 6:\n%s", len(turns), api.summary())
	}

	// (a) The switchboard tools Claude Code offers the model are exactly
	// those the gateway lists for main/team (tier 2). Claude Code 2.x lists
	// MCP tools either in the request's tools array or, deferred behind its
	// ToolSearch tool, by name in the system text: both count.
	var shown struct{ Tools []string }
	if err := json.Unmarshal([]byte(g.mustCLI("--json", "grants", "show", "main/team")), &shown); err != nil {
		t.Fatal(err)
	}
	var wantTools []string
	for _, n := range shown.Tools {
		wantTools = append(wantTools, "mcp__switchboard__"+n)
	}
	sort.Strings(wantTools)
	if slices.Contains(wantTools, "mcp__switchboard__add_route") || !slices.Contains(wantTools, "mcp__switchboard__send") {
		t.Fatalf("grants show main/team lists %v: not the tier-2 defaults this test expects", shown.Tools)
	}
	if got := turns[0].offeredTools(); !slices.Equal(got, wantTools) {
		t.Errorf("switchboard tools Claude Code offered the model:\n%v\nwant (grants show main/team):\n%v", got, wantTools)
	}

	// (d) The second turn resumed the session: its request carries the
	// first exchange, the user's text and the model's answer.
	second := turns[1]
	if !strings.Contains(second.prompt, "question 1") {
		t.Fatalf("second turn's prompt %q, want question 1", second.prompt)
	}
	if !second.req.hasText("user", sendTrigger) || !second.req.hasText("assistant", "ack: "+sendTrigger) {
		t.Errorf("the second turn's request does not carry the first exchange (was the session resumed?):\n%s", tail(second.body, 3000))
	}

	// (e) No secret of the gateway's environment outside agent.env reached
	// the API, in any request line, header or body.
	// The scan sees headers: the key agent.env passes is in x-api-key.
	if got := turns[0].header.Get("X-Api-Key"); got != apiKey {
		t.Errorf("the first request's x-api-key is %q, want ANTHROPIC_API_KEY's value %q", got, apiKey)
	}
	for _, r := range api.all() {
		for name, s := range map[string]string{"SWITCHBOARD_TEST_SECRET": secret, "TELEGRAM_BOT_TOKEN": tgToken} {
			if bytes.Contains(r.raw(), []byte(s)) {
				t.Errorf("%s's value reached the model API in %s %s", name, r.method, r.url)
			}
		}
	}
}

const (
	sendTrigger = "please put a note in the side room"
	sideNote    = "a note from Claude Code"
)

func botTexts(ms []apiMsg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func randomHex(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 8)
	if _, err := io.ReadFull(f, b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}

// fakeAnthropic is a Messages API on 127.0.0.1 playing a scripted model. It
// records every request it receives, whatever the path.
type fakeAnthropic struct {
	t     *testing.T
	srv   *httptest.Server
	model modelScript

	mu   sync.Mutex
	reqs []*recordedRequest
	ids  int
}

type recordedRequest struct {
	method, url string
	header      http.Header
	body        []byte
	status      int
	prompt      string           // the switchboard prompt (<turn …>) of a /v1/messages request, if any
	req         *messagesRequest // parsed /v1/messages body
}

// raw is everything the request carried.
func (r *recordedRequest) raw() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s\n", r.method, r.url)
	_ = r.header.Write(&b)
	b.Write(r.body)
	return b.Bytes()
}

var mcpToolName = regexp.MustCompile(`mcp__switchboard__[a-z_]+`)

// offeredTools is the sorted set of switchboard tools the request offers the
// model: in the tools array, or named in the system text as deferred tools.
func (r *recordedRequest) offeredTools() []string {
	var names []string
	for _, n := range mcpToolName.FindAllString(string(r.body), -1) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

type messagesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Messages []apiMessage `json:"messages"`
}

type apiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentBlock struct {
	Type  string          `json:"type"`
	Text  string          `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// A tool_result's: the tool_use it answers, its content (a string or
	// text blocks) and whether it is an error.
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// resultText is a tool_result's content as text.
func (b contentBlock) resultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []contentBlock
	_ = json.Unmarshal(b.Content, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return strings.Join(out, "\n")
}

// toolResult returns the tool_result block answering the tool_use id, if
// the request carries one.
func (r *messagesRequest) toolResult(id string) (contentBlock, bool) {
	for _, m := range r.Messages {
		for _, b := range m.blocks() {
			if b.Type == "tool_result" && b.ToolUseID == id {
				return b, true
			}
		}
	}
	return contentBlock{}, false
}

func (m apiMessage) blocks() []contentBlock {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []contentBlock{{Type: "text", Text: s}}
	}
	var bs []contentBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

func (r *messagesRequest) hasTool(name string) bool {
	return slices.ContainsFunc(r.Tools, func(t struct {
		Name string `json:"name"`
	}) bool {
		return t.Name == name
	})
}

// hasText reports whether a message of role has a text block containing s.
func (r *messagesRequest) hasText(role, s string) bool {
	for _, m := range r.Messages {
		if m.Role != role {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type == "text" && strings.Contains(b.Text, s) {
				return true
			}
		}
	}
	return false
}

// currentTurn returns the switchboard prompt of the request's last user
// turn and the names of the tools the model has called since, in order.
func (r *messagesRequest) currentTurn() (prompt string, called []string) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "assistant" {
			for _, b := range m.blocks() {
				if b.Type == "tool_use" {
					called = append(called, b.Name)
				}
			}
			continue
		}
		if m.Role != "user" {
			continue
		}
		for _, b := range m.blocks() {
			if b.Type == "text" && strings.Contains(b.Text, "<messages>") {
				slices.Reverse(called)
				return b.Text, called
			}
		}
	}
	return "", called
}

var promptMessageText = regexp.MustCompile(`(?s)<message [^>]*>(.*?)</message>`)

// lastMessageText is the text of the last chat message in a switchboard
// prompt, trimmed: what the scripted models answer; "" when it has none.
func lastMessageText(prompt string) string {
	ms := promptMessageText.FindAllStringSubmatch(prompt, -1)
	if len(ms) == 0 {
		return ""
	}
	return strings.TrimSpace(ms[len(ms)-1][1])
}

// modelScript is the scripted model: given a request, its switchboard
// prompt, the tools called since it and the response's number, the
// response's content and stop reason.
type modelScript func(req *messagesRequest, prompt string, called []string, id int) ([]contentBlock, string)

func newFakeAnthropic(t *testing.T) *fakeAnthropic { return newFakeModel(t, script) }

// newFakeModel is a fake Messages API playing model.
func newFakeModel(t *testing.T, model modelScript) *fakeAnthropic {
	f := &fakeAnthropic{t: t, model: model}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// readMessagesRequest decodes a Messages API call (POST /v1/messages) of a
// fake model; ok is false when it answered the request itself (a token
// count, a probe or telemetry: not a fake model's business; a bad body),
// with the status it answered.
func readMessagesRequest(w http.ResponseWriter, r *http.Request, body []byte) (req messagesRequest, status int, ok bool) {
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens": 1000}`)
		return req, http.StatusOK, false
	default:
		http.NotFound(w, r)
		return req, http.StatusNotFound, false
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return req, http.StatusBadRequest, false
	}
	return req, http.StatusOK, true
}

func (f *fakeAnthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := &recordedRequest{method: r.Method, url: r.URL.String(), header: r.Header.Clone(), body: body, status: http.StatusOK}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	f.mu.Unlock()

	req, status, ok := readMessagesRequest(w, r, body)
	if !ok {
		rec.status = status
		return
	}
	prompt, called := req.currentTurn()
	f.mu.Lock()
	rec.req, rec.prompt = &req, prompt
	f.ids++
	id := f.ids
	f.mu.Unlock()
	blocks, stop := f.model(&req, prompt, called, id)
	writeMessage(w, &req, blocks, stop, id)
}

// script is the model: for sendTrigger it calls the switchboard tool send
// (loading it through ToolSearch first when Claude Code deferred it), then
// answers "ack: <text>"; any other message it answers at once.
func script(req *messagesRequest, prompt string, called []string, id int) ([]contentBlock, string) {
	text := lastMessageText(prompt)
	const send = "mcp__switchboard__send"
	if text == sendTrigger && !slices.Contains(called, send) {
		input, _ := json.Marshal(map[string]string{"chat_jid": "web:side", "text": sideNote})
		switch {
		case req.hasTool(send):
			return []contentBlock{{Type: "tool_use", ID: fmt.Sprintf("toolu_%02d", id), Name: send, Input: input}}, "tool_use"
		case req.hasTool("ToolSearch") && !slices.Contains(called, "ToolSearch"):
			input, _ := json.Marshal(map[string]any{"query": "select:" + send, "max_results": 1})
			return []contentBlock{{Type: "tool_use", ID: fmt.Sprintf("toolu_%02d", id), Name: "ToolSearch", Input: input}}, "tool_use"
		default:
			return []contentBlock{{Type: "text", Text: "the send tool is not offered"}}, "end_turn"
		}
	}
	if text == "" {
		return []contentBlock{{Type: "text", Text: "ok"}}, "end_turn" // a side query of Claude Code's own
	}
	return []contentBlock{{Type: "text", Text: "ack: " + text}}, "end_turn"
}

// writeMessage answers as the Messages API does: a server-sent event stream
// when the request asked for one, else one JSON message.
func writeMessage(w http.ResponseWriter, req *messagesRequest, blocks []contentBlock, stop string, id int) {
	msgID := fmt.Sprintf("msg_%02d", id)
	usage := map[string]int{"input_tokens": 100, "output_tokens": 10}
	if !req.Stream {
		var content []any
		for _, b := range blocks {
			if b.Type == "tool_use" {
				content = append(content, map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": b.Input})
			} else {
				content = append(content, map[string]any{"type": "text", "text": b.Text})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": msgID, "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1}}})
	for i, b := range blocks {
		switch b.Type {
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(b.Input)}})
		default:
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b.Text}})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

func (f *fakeAnthropic) all() []*recordedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// turns returns, for each distinct switchboard prompt in the order seen,
// the first /v1/messages request that carried it (the one that lists the
// tools before any was called).
func (f *fakeAnthropic) turns() []*recordedRequest {
	var out []*recordedRequest
	seen := map[string]bool{}
	for _, r := range f.all() {
		if r.prompt != "" && !seen[r.prompt] {
			seen[r.prompt] = true
			out = append(out, r)
		}
	}
	return out
}

func (f *fakeAnthropic) summary() string {
	var b strings.Builder
	for _, r := range f.all() {
		fmt.Fprintf(&b, "%s %s → %d (%d bytes, user-agent %q)", r.method, r.url, r.status, len(r.body), r.header.Get("User-Agent"))
		if r.req != nil {
			_, called := r.req.currentTurn()
			fmt.Fprintf(&b, " model=%s stream=%v tools=%d messages=%d called=%v", r.req.Model, r.req.Stream, len(r.req.Tools), len(r.req.Messages), called)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
