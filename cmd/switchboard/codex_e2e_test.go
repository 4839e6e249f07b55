//go:build interop && linux

package main

// The real Codex CLI (@openai/codex, its native binary) as agent.command,
// configured the way docs/operating.md and docs/mcp.md tell operators:
// sandbox on, ~/.codex bound read-write, the switchboard MCP server in
// Codex's config.toml, the API key through agent.env. Codex talks to a fake
// OpenAI Responses API on 127.0.0.1 (a model_providers entry in its
// config.toml) that is scripted to run `env`, call the group's reply tool,
// then answer with text. Nothing leaves the machine.

import (
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
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"switchboard/internal/testenv"
	"switchboard/internal/testwait"
)

const (
	codexVersion    = "0.169.0"
	codexTurnWithin = 90 * time.Second // a turn: node, codex, the MCP bridge, three model requests
)

// TestCodexRealCLI runs the real gateway with the real Codex CLI as its
// agent in the tier-3 group main/team/bot, which owns web:lobby and
// web:hall. Two messages in each room, alternating; each turn Codex lists
// the group's tools to the model and runs `env` for it; in the lobby it
// then calls reply and finishes with text, in the hall it just answers
// with text. It shows: the tools Codex offers from the switchboard server
// are exactly tier 3's; the lobby's reply reaches the room once (the final
// text is not sent again), the hall's final text (output: codex-json's
// last agent_message) is the reply; each room's second turn resumes that
// room's own Codex session (resume_args with the thread id) and neither
// room sees the other's conversation; and no secret of the gateway's
// environment outside agent.env reaches the model API, not even through a
// command the model runs.
func TestCodexRealCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test that installs @openai/codex from npm, builds and runs the binary")
	}
	requireBwrap(t)
	codex := codexInstall(t)
	bin := switchboardBinary(t)
	api := newCodexAPI(t)

	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	const apiKey = "sk-codex-e2e-agent-env"
	secrets := map[string]string{ // in the gateway's environment, not in agent.env
		"TELEGRAM_BOT_TOKEN":      "123456:telegram-secret-codex-e2e",
		"SWITCHBOARD_TEST_SECRET": "switchboard-secret-codex-e2e",
		"DATABASE_URL":            "postgres://app:db-password-codex-e2e@db/app",
	}
	codexWriteConfig(t, filepath.Join(home, ".codex"), api.srv.URL+"/v1")

	cfg := `data_dir: ./data
operator_folder: root
log: {level: debug, format: json}
` + codexAgentYAML(t, filepath.Join(codex, "node_modules")) + `adapters:
  web: {enabled: true, listen: "127.0.0.1:0"}
admin: {listen: ""}
groups:
  - folder: root
  - folder: main
  - folder: main/team
  - folder: main/team/bot
routes:
  - {match: {chat_jid: "web:lobby"}, target: main/team/bot}
  - {match: {chat_jid: "web:hall"}, target: main/team/bot}
`
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			toml, _ := os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
			t.Logf("switchboard.yaml:\n%s\n~/.codex/config.toml:\n%s", cfg, toml)
		}
	})
	// config.toml's MCP server is `command = "switchboard"`: as where an
	// operator installed it, the binary's directory is on the gateway's
	// PATH, which agents (and Codex's MCP servers) inherit; the sandbox
	// shows the binary at its own path.
	env := []string{
		"HOME=" + home,
		"PATH=" + strings.Join([]string{filepath.Join(codex, "node_modules", ".bin"), filepath.Dir(bin), os.Getenv("PATH")}, string(os.PathListSeparator)),
		"OPENAI_API_KEY=" + apiKey,
	}
	for k, v := range secrets {
		env = append(env, k+"="+v)
	}
	g := startGW(t, dir, env...)

	// Four turns, one message each, the rooms taking turns: a room's
	// second turn must resume its own session, not the folder's newest.
	posts := []struct{ room, text string }{
		{"lobby", "first question for codex"}, {"hall", "first question in the hall"},
		{"lobby", "second question for codex"}, {"hall", "second question in the hall"},
	}
	var ids []string
	ofRoom := map[string][]string{} // message ids by room
	for i, p := range posts {
		start := time.Now()
		ids = append(ids, g.mustPost(p.room, "ann", p.text))
		ofRoom[p.room] = append(ofRoom[p.room], ids[i])
		want := codexReplyText(ids[i])
		if p.room == "hall" {
			want = codexFinalText("web:hall", ids[i])
		}
		replied := func() bool {
			return slices.ContainsFunc(g.botMessages(p.room), func(m apiMsg) bool { return m.Text == want })
		}
		// Codex makes its last model request after the reply: wait for
		// the turn to end before the next message and the checks, noting
		// when the reply showed.
		var repliedAfter time.Duration
		testwait.For(t, codexTurnWithin, fmt.Sprintf("turn %d to end", i+1), func() bool {
			if repliedAfter == 0 && replied() {
				repliedAfter = time.Since(start)
			}
			return len(g.records("turn done", "", "")) == i+1
		})
		testwait.For(t, 10*time.Second, fmt.Sprintf("turn %d's reply %q in web:%s", i+1, want, p.room), replied)
		if repliedAfter == 0 {
			repliedAfter = time.Since(start)
		}
		t.Logf("turn %d (%s): message posted → Codex's reply in the room: %s", i+1, p.room, repliedAfter.Round(time.Millisecond))
	}

	// In the lobby exactly the two MCP replies, in order: the final text
	// Codex printed was not sent as well (the gateway drops stdout after
	// an MCP reply), and nothing was sent twice. The outbox sends a chat's
	// replies in order, so a stray first-turn reply would show before the
	// second. In the hall, the final texts.
	lobby, hall := ofRoom["lobby"], ofRoom["hall"]
	for room, want := range map[string][]string{
		"lobby": {codexReplyText(lobby[0]), codexReplyText(lobby[1])},
		"hall":  {codexFinalText("web:hall", hall[0]), codexFinalText("web:hall", hall[1])},
	} {
		var got []string
		for _, m := range g.botMessages(room) {
			got = append(got, m.Text)
		}
		if !slices.Equal(got, want) {
			t.Errorf("bot messages in web:%s: %q, want %q", room, got, want)
		}
	}

	reqs := api.requests()
	turns := map[string][]codexReq{} // by the prompt's message id
	for _, r := range reqs {
		if r.method != http.MethodPost || r.path != "/v1/responses" {
			t.Errorf("Codex requested %s %s; the fake serves POST /v1/responses only", r.method, r.path)
			continue
		}
		turns[r.promptID] = append(turns[r.promptID], r)
	}

	t.Run("tools are the tier's", func(t *testing.T) {
		// Tier 3 defaults (CONTRACT §7): reply, send_file, like, edit.
		want := []string{"edit", "like", "reply", "send_file"}
		for i, r := range reqs {
			if got := r.switchboardTools(); !slices.Equal(got, want) {
				t.Errorf("request %d offers the model switchboard tools %v, want tier 3's %v", i+1, got, want)
			}
		}
	})

	t.Run("each turn ran env, reply in the lobby, then answered", func(t *testing.T) {
		for i, id := range ids {
			rs, lobbyTurn := turns[id], posts[i].room == "lobby"
			if want := map[bool]int{true: 3, false: 2}[lobbyTurn]; len(rs) != want {
				t.Fatalf("turn %d (message %s in %s): %d model requests, want %d (env, reply in the lobby, final answer)", i+1, id, posts[i].room, len(rs), want)
			}
			last := rs[len(rs)-1]
			envOut := last.outputs["env-"+id]
			if !strings.Contains(envOut, "SWITCHBOARD_FOLDER=main/team/bot") || !strings.Contains(envOut, "SWITCHBOARD_CHAT_JID=web:"+posts[i].room) || !strings.Contains(envOut, "SWITCHBOARD_MCP_SOCKET=") {
				t.Errorf("turn %d: the output of env the model got does not show the turn's environment:\n%s", i+1, envOut)
			}
			if reply := last.outputs["reply-"+id]; lobbyTurn && (!strings.Contains(reply, `"id"`) || strings.Contains(reply, "refused")) {
				t.Errorf("turn %d: reply's result: %q, want the sent message's id", i+1, reply)
			}
		}
	})

	t.Run("each room resumes its own session", func(t *testing.T) {
		for _, id := range ids {
			if len(turns[id]) == 0 {
				t.Fatalf("the turn of message %s made no model request", id)
			}
		}
		// The conversation a request carries: the rooms' messages and
		// the env calls of their turns.
		carries := func(r codexReq, room string, n int) bool {
			return r.hasUserText(posts[slices.Index(ids, ofRoom[room][n])].text) || r.outputs["env-"+ofRoom[room][n]] != ""
		}
		if r := turns[hall[0]][0]; carries(r, "lobby", 0) {
			t.Error("the hall's first request carries the lobby's first exchange: the rooms share one Codex session")
		}
		if r := turns[lobby[1]][0]; !carries(r, "lobby", 0) || carries(r, "hall", 0) {
			t.Errorf("the lobby's second request: carries the lobby's first exchange %v (want true), the hall's %v (want false)",
				carries(r, "lobby", 0), carries(r, "hall", 0))
		}
		if r := turns[hall[1]][0]; !carries(r, "hall", 0) || carries(r, "lobby", 0) || carries(r, "lobby", 1) {
			t.Errorf("the hall's second request: carries the hall's first exchange %v (want true), the lobby's %v (want false)",
				carries(r, "hall", 0), carries(r, "lobby", 0) || carries(r, "lobby", 1))
		}
		session := func(id string) string { return turns[id][0].header.Get("session-id") }
		for room, rids := range ofRoom {
			if s1, s2 := session(rids[0]), session(rids[1]); s1 == "" || s1 != s2 {
				t.Errorf("Codex session of %s's first turn %q, of its second %q: want the same", room, s1, s2)
			}
		}
		if session(lobby[0]) == session(hall[0]) {
			t.Errorf("the lobby and the hall share the Codex session %q", session(lobby[0]))
		}
	})

	t.Run("no secret outside agent.env reaches the API", func(t *testing.T) {
		for i, r := range reqs {
			if got := r.header.Get("Authorization"); got != "Bearer "+apiKey {
				t.Errorf("request %d: Authorization %q, want the key from agent.env", i+1, got)
			}
			raw := string(r.body) + fmt.Sprint(r.header)
			for name, v := range secrets {
				if strings.Contains(raw, v) {
					t.Errorf("request %d carries the gateway's %s", i+1, name)
				}
			}
		}
	})

	for _, rec := range g.records("turn done", "", "") {
		if want := rec["jid"] == "web:hall"; rec["stdout_reply"] != want {
			t.Errorf("turn done: %v, want stdout_reply %v (Codex replied through MCP in the lobby, with its final text in the hall)", rec, want)
		}
	}
}

func codexReplyText(msgID string) string { return "codex replied to " + msgID }

// codexFinalText is the model's last message of a turn: in web:hall the
// reply, elsewhere sent already through the reply tool.
func codexFinalText(chat, msgID string) string {
	if chat == "web:hall" {
		return "codex answered " + msgID
	}
	return "final text of " + msgID + " (sent already through reply)"
}

// codexDocBlock returns the fenced block of docs/operating.md whose first
// line is first (the fence's language is lang).
func codexDocBlock(t *testing.T, lang, first string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "operating.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```"+lang+"\n"+first)
	block, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatalf("docs/operating.md has no ```%s block starting with %q", lang, first)
	}
	return first + block + "\n"
}

// codexDocAgent is docs/operating.md's agent: block for Codex.
type codexDocAgent struct {
	Command    []string `yaml:"command"`
	ResumeArgs []string `yaml:"resume_args"`
	Output     string   `yaml:"output"`
	Sandbox    string   `yaml:"sandbox"`
	Binds      []struct {
		Path string `yaml:"path" json:"path"`
		RW   bool   `yaml:"rw" json:"rw"`
	} `yaml:"binds"`
	Env []string `yaml:"env"`
}

// codexAgentYAML is the documented agent: block for Codex with the test's
// additions: a timeout, and a read-only bind of the npm install (outside
// /usr and /opt, as the docs say to bind).
func codexAgentYAML(t *testing.T, install string) string {
	t.Helper()
	var doc struct {
		Agent codexDocAgent `yaml:"agent"`
	}
	dec := yaml.NewDecoder(strings.NewReader(codexDocBlock(t, "yaml", "agent:   # Codex")))
	dec.KnownFields(true) // a key the docs add must be added here too
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("docs/operating.md, the Codex agent block: %v", err)
	}
	a := doc.Agent
	a.Binds = append(a.Binds, struct {
		Path string `yaml:"path" json:"path"`
		RW   bool   `yaml:"rw" json:"rw"`
	}{Path: install})
	flow := func(v any) string { b, _ := json.Marshal(v); return string(b) } // JSON is YAML
	return fmt.Sprintf("agent:\n  command: %s\n  resume_args: %s\n  output: %s\n  sandbox: %s\n  binds: %s\n  env: %s\n  timeout: 120s\n",
		flow(a.Command), flow(a.ResumeArgs), a.Output, a.Sandbox, flow(a.Binds), flow(a.Env))
}

// codexWriteConfig writes $CODEX_HOME/config.toml: the one documented in
// docs/operating.md, word for word (its MCP server is `switchboard
// mcp-bridge`, found on the PATH, with no flags), plus the fake model
// provider (the documented model_providers entry with its base_url).
func codexWriteConfig(t *testing.T, codexHome, baseURL string) {
	t.Helper()
	doc := codexDocBlock(t, "toml", "# ~/.codex/config.toml")
	var toml strings.Builder
	toml.WriteString("model = \"gpt-test\"\nmodel_provider = \"fake\"\n") // top-level keys come before any table
	toml.WriteString(doc)
	// Offline: without these Codex also looks up chatgpt.com and
	// api.github.com (plugins) and ab.chatgpt.com (metrics) on its own.
	fmt.Fprintf(&toml, `
[model_providers.fake]
name = "fake Responses API"
base_url = %q
wire_api = "responses"
env_key = "OPENAI_API_KEY"

[analytics]
enabled = false

[features]
plugins = false
`, baseURL)
	if err := os.MkdirAll(codexHome, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(toml.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// codexInstall installs @openai/codex@codexVersion with npmPackage (the
// cache and lock every real-CLI test shares) and returns the install's
// directory, after checking its native binary's version.
func codexInstall(t *testing.T) string {
	t.Helper()
	triple := map[string]string{"amd64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}[runtime.GOARCH]
	if triple == "" {
		testenv.Unavailable(t, "no @openai/codex native binary for linux/%s", runtime.GOARCH)
	}
	dir := npmPackage(t, "the Codex CLI test", "@openai/codex@"+codexVersion)
	native := filepath.Join(dir, "node_modules", "@openai", "codex-"+npmPlatform(t, runtime.GOOS, runtime.GOARCH), "vendor", triple, "bin", "codex")
	if err := codexVersionOK(native); err != nil {
		t.Fatalf("%v (remove %s to install it afresh)", err, dir)
	}
	return dir
}

// codexVersionOK runs the native binary's --version.
func codexVersionOK(path string) error {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return fmt.Errorf("%s --version: %v", path, err)
	}
	if got, want := strings.TrimSpace(string(out)), "codex-cli "+codexVersion; got != want {
		return fmt.Errorf("%s --version: %q, want %q", path, got, want)
	}
	return nil
}

// codexAPI is a fake OpenAI Responses API (POST /v1/responses, streamed as
// server-sent events) that records every request and plays one script per
// turn: run `env`, call the switchboard reply tool (not in web:hall),
// answer with text.
type codexAPI struct {
	t   testing.TB
	srv *httptest.Server

	mu   sync.Mutex
	reqs []codexReq
}

// codexReq is one request Codex made, with what the script reads from it.
type codexReq struct {
	method, path string
	header       http.Header
	body         []byte
	parsed       struct {
		Input []codexItem `json:"input"`
		Tools []codexTool `json:"tools"`
	}
	promptID, chat string            // the turn's last message id and chat, from switchboard's prompt
	outputs        map[string]string // function_call_output text by call_id
}

type codexItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Output  json.RawMessage `json:"output"`
}

type codexTool struct {
	Type  string      `json:"type"`
	Name  string      `json:"name"`
	Tools []codexTool `json:"tools"` // a namespace's tools
}

var (
	codexTurnRE  = regexp.MustCompile(`<turn [^>]*\bchat="([^"]*)"`)
	codexMsgIDRE = regexp.MustCompile(`<message [^>]*\bid="([^"]*)"`)
)

func newCodexAPI(t testing.TB) *codexAPI {
	a := &codexAPI{t: t}
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

func (a *codexAPI) requests() []codexReq {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.reqs)
}

func (a *codexAPI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := codexReq{method: r.Method, path: r.URL.Path, header: r.Header.Clone(), body: body, outputs: map[string]string{}}
	if json.Unmarshal(body, &req.parsed) == nil {
		req.read()
	}
	a.mu.Lock()
	a.reqs = append(a.reqs, req)
	n := len(a.reqs)
	a.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" || req.promptID == "" {
		http.Error(w, `{"error": {"message": "the fake serves POST /v1/responses with a switchboard prompt"}}`, http.StatusNotFound)
		return
	}

	id := req.promptID
	var item map[string]any
	switch {
	case req.outputs["env-"+id] == "":
		item = map[string]any{"type": "function_call", "id": "fc-env-" + id, "call_id": "env-" + id,
			"name": "exec_command", "arguments": `{"cmd": "env", "tty": false}`}
	case req.outputs["reply-"+id] == "" && req.chat != "web:hall":
		args, _ := json.Marshal(map[string]string{"chat_jid": req.chat, "text": codexReplyText(id), "reply_to": id})
		item = map[string]any{"type": "function_call", "id": "fc-reply-" + id, "call_id": "reply-" + id,
			"namespace": "mcp__switchboard", "name": "reply", "arguments": string(args)}
	default:
		item = map[string]any{"type": "message", "id": "msg-" + id, "role": "assistant",
			"content": []map[string]any{{"type": "output_text", "text": codexFinalText(req.chat, id), "annotations": []any{}}}}
	}
	respID := fmt.Sprintf("resp-%d", n)
	w.Header().Set("Content-Type", "text/event-stream")
	events := []map[string]any{
		{"type": "response.created", "response": map[string]any{"id": respID}},
		{"type": "response.output_item.added", "output_index": 0, "item": item},
		{"type": "response.output_item.done", "output_index": 0, "item": item},
		{"type": "response.completed", "response": map[string]any{"id": respID, "usage": map[string]any{
			"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}},
	}
	for _, ev := range events {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
	}
}

// read finds the turn's prompt (the last user message holding <turn …>)
// and the function call outputs.
func (r *codexReq) read() {
	for _, it := range r.parsed.Input {
		switch it.Type {
		case "message":
			if it.Role != "user" {
				continue
			}
			for _, text := range codexTexts(it.Content) {
				if m := codexTurnRE.FindStringSubmatch(text); m != nil {
					r.chat = m[1]
					if ids := codexMsgIDRE.FindAllStringSubmatch(text, -1); len(ids) > 0 {
						r.promptID = ids[len(ids)-1][1]
					}
				}
			}
		case "function_call_output":
			r.outputs[it.CallID] = strings.Join(codexTexts(it.Output), "\n")
		}
	}
}

// codexTexts is the text of a content or output value: a string, or a list
// of {type, text} parts.
func codexTexts(raw json.RawMessage) []string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		out = append(out, p.Text)
	}
	return out
}

func (r codexReq) hasUserText(s string) bool {
	for _, it := range r.parsed.Input {
		if it.Type == "message" && it.Role == "user" && slices.ContainsFunc(codexTexts(it.Content), func(t string) bool { return strings.Contains(t, s) }) {
			return true
		}
	}
	return false
}

// switchboardTools are the tools the request offers the model from the
// switchboard MCP server, sorted. Codex 0.169 groups a server's tools in a
// namespace "mcp__<server>" (its model calls them with "namespace" and
// "name"; a flat "mcp__switchboard__send" is an unsupported call); a flat
// function of that name is counted as well, should a version offer one.
func (r codexReq) switchboardTools() []string {
	var names []string
	for _, tool := range r.parsed.Tools {
		if tool.Type == "namespace" && tool.Name == "mcp__switchboard" {
			for _, sub := range tool.Tools {
				names = append(names, sub.Name)
			}
		}
		if rest, ok := strings.CutPrefix(tool.Name, "mcp__switchboard__"); ok {
			names = append(names, rest)
		}
	}
	slices.Sort(names)
	return names
}
