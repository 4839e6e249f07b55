//go:build interop && linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/testwait"
	"switchboard/store"
)

var recordPermissionPrompt = flag.Bool("record-permission-prompt", false,
	"TestE2EClaudeCodeApprovals: write Claude Code's first permission-prompt call and its answer to ipc/testdata/claude-code")

// permissionFixture is where the recorded permission-prompt exchange lives;
// ipc's TestApproveToolClaudeCodeCall replays it.
const permissionFixture = "../../ipc/testdata/claude-code/permission-prompt.json"

// TestE2EClaudeCodeApprovals runs the real Claude Code CLI the way
// docs/operating.md's recipe says (--permission-prompt-tool
// mcp__switchboard__approve_tool, not --dangerously-skip-permissions;
// approvals.agent_tools: [Bash]; an approver) in the sandbox, against a fake
// Messages API whose model asks to run Bash, which writes a marker file:
//
//   - allowed (the web chat's button) → the command ran (the marker exists)
//     and its output reached the model;
//   - denied (/deny) → it did not run, and the model got an error
//     tool_result with the gateway's message naming the decider;
//   - nobody decides within approvals.timeout → denied, saying so;
//   - allowed for this session (the CLI) → the next message's Bash call, in
//     the resumed session, runs without a second request.
//
// It runs as whoever runs the tests, root included: Claude Code takes
// --permission-prompt-tool as root without IS_SANDBOX (which it needs only
// for --dangerously-skip-permissions), so the test sets none.
//
// The group's MCP server is reached through a tee (the bridge the group's
// .mcp.json names, behind `tee`, given with --strict-mcp-config
// --mcp-config), so that the test sees Claude Code's permission-prompt
// calls as they are and checks them against the recorded fixture
// (-record-permission-prompt rewrites it).
//
//	GOFLAGS=-tags=sqlite_fts5,interop CGO_ENABLED=1 go test ./cmd/switchboard -run TestE2EClaudeCodeApprovals -count=1 -v
func TestE2EClaudeCodeApprovals(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test that installs Claude Code from npm, builds and runs the binary")
	}
	requireBwrap(t)
	installDir, claudeBin := claudeCode(t)
	bin := switchboardBinary(t)
	api := newFakeModel(t, bashModel)

	dir := t.TempDir()
	agentEnv, env := claudeEnv(t, dir, claudeBin, api.srv.URL, "sk-ant-test-"+randomHex(t))
	// As the recipe says: with --permission-prompt-tool Claude Code runs as
	// root without IS_SANDBOX, which only --dangerously-skip-permissions needs.
	agentEnv = slices.DeleteFunc(agentEnv, func(n string) bool { return n == "IS_SANDBOX" })
	env = slices.DeleteFunc(env, func(v string) bool { return v == "IS_SANDBOX=1" })
	binDir := filepath.Join(dir, "bin")
	groupDir := filepath.Join(dir, "data", "groups", "main")
	teeDir := filepath.Join(dir, "mcp-tee")
	tee := filepath.Join(teeDir, "mcp.json")
	writeMCPTee(t, tee, bin, filepath.Join(dir, "data", "ipc", "main", "mcp.sock"))
	envYAML, _ := json.Marshal(agentEnv)
	cfg := fmt.Sprintf(`data_dir: ./data
operator_folder: root
log: {level: debug, format: json}
agent:
  command: ["claude", "-p", "--output-format", "json", "--permission-prompt-tool", "mcp__switchboard__approve_tool", "--strict-mcp-config", "--mcp-config", %q]
  resume_args: ["--resume", "{session}"]
  output: claude-json
  timeout: 3m
  sandbox: bwrap
  binds: [{path: ~/.claude, rw: true}, {path: ~/.claude.json, rw: true}, {path: %q}, {path: %q}, {path: %q}]
  env: %s
approvals: {timeout: 20s, agent_tools: [Bash]}
adapters:
  web: {enabled: true, listen: "127.0.0.1:0"}
admin: {listen: ""}
groups:
  - folder: root
  - folder: main
    approvals: {approvers: [web:user/ann]}
routes:
  - {match: {platform: web}, target: main}
`, tee, binDir, installDir, teeDir, envYAML)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir, env...)
	t.Cleanup(func() { t.Logf("requests the fake Anthropic API received:\n%s", api.summary()) })
	checkMCPTee(t, groupDir, bin, filepath.Join(dir, "data", "ipc", "main", "mcp.sock"))

	// Allowed: the approver presses Allow once on the web chat.
	g.mustPost("allow", "ann", "bash allow")
	a := waitApproval(t, dir, 1)
	if a.Tool != "Bash" || !strings.Contains(a.Args, "echo approved-ran > marker-allow.txt") {
		t.Errorf("the request shows tool %q args %q, want Bash and its command", a.Tool, a.Args)
	}
	g.pressApproval(a.ID, "allow", "ann")
	waitBotSaid(t, g, "allow", "bash said: approved-ran")
	if b, err := os.ReadFile(filepath.Join(groupDir, "marker-allow.txt")); err != nil || string(b) != "approved-ran\n" {
		t.Errorf("the allowed command's marker: %q %v", b, err)
	}
	res, ok := api.bashResult("allow")
	if !ok || res.IsError || !strings.Contains(res.resultText(), "approved-ran") {
		t.Errorf("the allowed Bash call's tool_result at the model: %+v (found %v), want its output", res, ok)
	}
	// Claude Code ran without IS_SANDBOX (agent.env does not name it), as
	// root when the tests run as root.
	if want := fmt.Sprintf("uid=%d IS_SANDBOX=unset", os.Geteuid()); !strings.Contains(res.resultText(), want) {
		t.Errorf("the allowed Bash call printed %q, want %q", res.resultText(), want)
	}
	t.Logf("Claude Code %s with --permission-prompt-tool ran Bash as: %s", claudeCodeVersion, strings.TrimSpace(res.resultText()))

	// Denied: /deny as a message.
	g.mustPost("deny", "ann", "bash deny")
	a = waitApproval(t, dir, 2)
	g.mustPost("deny", "ann", "/deny "+a.ID)
	waitBotSaid(t, g, "deny", "bash failed:")
	if _, err := os.Stat(filepath.Join(groupDir, "marker-deny.txt")); !os.IsNotExist(err) {
		t.Errorf("the denied command ran: marker-deny.txt %v", err)
	}
	if res, ok := api.bashResult("deny"); !ok || !res.IsError || !strings.Contains(res.resultText(), "not approved: denied by web:user/ann") {
		t.Errorf("the denied Bash call's tool_result at the model: %+v (found %v), want an error with the gateway's message", res, ok)
	}

	// Nobody decides within approvals.timeout (20 s): denied.
	g.mustPost("timeout", "ann", "bash timeout")
	a = waitApproval(t, dir, 3)
	waitBotSaid(t, g, "timeout", "bash failed:")
	if _, err := os.Stat(filepath.Join(groupDir, "marker-timeout.txt")); !os.IsNotExist(err) {
		t.Errorf("the timed-out command ran: marker-timeout.txt %v", err)
	}
	if res, ok := api.bashResult("timeout"); !ok || !res.IsError || !strings.Contains(res.resultText(), "timed out") {
		t.Errorf("the timed-out Bash call's tool_result at the model: %+v (found %v), want an error saying it timed out", res, ok)
	}
	if got := approvalByID(t, dir, a.ID); got.Status != store.ApprovalTimeout {
		t.Errorf("the unanswered request is %s, want timeout", got.Status)
	}

	// Allowed for this session (the operator's CLI): the next message in
	// the same chat resumes the session, and its Bash call asks nobody.
	g.mustPost("sess", "ann", "bash session-1")
	a = waitApproval(t, dir, 4)
	g.mustCLI("approvals", "allow", a.ID, "--session")
	waitBotSaid(t, g, "sess", "bash said: approved-ran")
	g.mustPost("sess", "ann", "bash session-2")
	waitBotSaid(t, g, "sess", "bash said: approved-ran", "bash said: approved-ran")
	if _, err := os.Stat(filepath.Join(groupDir, "marker-session-2.txt")); err != nil {
		t.Errorf("the session-allowed second command did not run: %v", err)
	}
	if n := len(approvals(t, dir)); n != 4 {
		t.Errorf("%d approval requests, want 4: the second Bash call of the session asked again", n)
	}

	// Claude Code asked approve_tool before each of the five Bash calls;
	// its calls and our answers are as the recorded fixture shows.
	calls := readMCPTee(t, groupDir)
	if len(calls) != 5 {
		t.Fatalf("%d approve_tool calls through the tee, want 5 (one per Bash call):\n%+v", len(calls), calls)
	}
	checkPermissionCall(t, calls[0])
	if *recordPermissionPrompt {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(calls[0]); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(permissionFixture, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range calls {
		var p struct {
			Behavior string `json:"behavior"`
			Message  string `json:"message"`
		}
		if err := json.Unmarshal([]byte(c.ResultText), &p); err != nil {
			t.Errorf("approve_tool answer %d is no permission JSON: %q", i, c.ResultText)
		}
		if want := []string{"allow", "deny", "deny", "allow", "allow"}[i]; p.Behavior != want {
			t.Errorf("approve_tool answer %d: %q, want %s", i, c.ResultText, want)
		}
	}
}

// bashModel is a model that, for a chat message "bash TAG", runs Bash to
// write marker-TAG.txt and print it, then says what the call gave:
// "bash said: <output>" or "bash failed: <error>". Anything else it acks.
func bashModel(req *messagesRequest, prompt string, called []string, id int) ([]contentBlock, string) {
	text := lastMessageText(prompt)
	tag, ok := strings.CutPrefix(text, "bash ")
	switch {
	case text == "":
		return []contentBlock{{Type: "text", Text: "ok"}}, "end_turn" // a side query of Claude Code's own
	case !ok:
		return []contentBlock{{Type: "text", Text: "ack: " + text}}, "end_turn"
	case !slices.Contains(called, "Bash"):
		input, _ := json.Marshal(map[string]string{"command": bashCommand(tag), "description": "Write the marker file"})
		return []contentBlock{{Type: "tool_use", ID: bashUseID(tag, id), Name: "Bash", Input: input}}, "tool_use"
	}
	res, _ := lastBashResult(req)
	if res.IsError {
		return []contentBlock{{Type: "text", Text: "bash failed: " + res.resultText()}}, "end_turn"
	}
	return []contentBlock{{Type: "text", Text: "bash said: " + strings.TrimSpace(res.resultText())}}, "end_turn"
}

// bashCommand writes and prints the marker, then says who ran it: the
// uid, and whether IS_SANDBOX reached Claude Code (as root it needs it only
// for --dangerously-skip-permissions).
func bashCommand(tag string) string {
	return fmt.Sprintf(`echo approved-ran > marker-%s.txt && cat marker-%s.txt && echo "uid=$(id -u) IS_SANDBOX=${IS_SANDBOX:-unset}"`, tag, tag)
}

// bashUseID names a Bash tool_use after its tag, so that the test finds
// the tool_result that answers it.
func bashUseID(tag string, id int) string {
	return fmt.Sprintf("toolu_bash_%s_%02d", strings.ReplaceAll(tag, "-", "_"), id)
}

// lastBashResult is the tool_result of the request's last Bash tool_use.
func lastBashResult(req *messagesRequest) (contentBlock, bool) {
	useID := ""
	for _, m := range req.Messages {
		for _, b := range m.blocks() {
			if b.Type == "tool_use" && b.Name == "Bash" {
				useID = b.ID
			}
		}
	}
	return req.toolResult(useID)
}

// bashResult is the tool_result the model got for the Bash call of "bash
// TAG", from the first request that carried it.
func (f *fakeAnthropic) bashResult(tag string) (contentBlock, bool) {
	prefix := bashUseID(tag, 0)
	prefix = prefix[:len(prefix)-2]
	for _, r := range f.all() {
		if r.req == nil {
			continue
		}
		for _, m := range r.req.Messages {
			for _, b := range m.blocks() {
				if b.Type == "tool_result" && strings.HasPrefix(b.ToolUseID, prefix) {
					return b, true
				}
			}
		}
	}
	return contentBlock{}, false
}

// pressApproval decides an approval request as the web chat's button does.
func (g *gw) pressApproval(id, decision, sender string) {
	g.t.Helper()
	body, _ := json.Marshal(map[string]string{"decision": decision, "sender": sender})
	resp, err := g.http.Post("http://"+g.addr+"/api/approvals/"+id, "application/json", bytes.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("press %s on %s: %s", decision, id, resp.Status)
	}
}

// waitBotSaid waits until the model's answers in room (the bot's messages
// starting "bash ", not the approval requests and their outcomes) start
// with the prefixes, in order.
func waitBotSaid(t *testing.T, g *gw, room string, prefixes ...string) {
	t.Helper()
	var got []string
	testwait.For(t, claudeTurnWithin, fmt.Sprintf("the bot's answers %q in %s", prefixes, room), func() bool {
		got = got[:0]
		for _, m := range g.botMessages(room) {
			if strings.HasPrefix(m.Text, "bash ") {
				got = append(got, m.Text)
			}
		}
		return len(got) >= len(prefixes)
	})
	for i, p := range prefixes {
		if !strings.HasPrefix(got[i], p) {
			t.Fatalf("the bot said %q in %s, want answers starting %q", got, room, prefixes)
		}
	}
}

func approvals(t *testing.T, dir string) []store.Approval {
	t.Helper()
	st := openDB(t, filepath.Join(dir, "data"))
	defer st.Close()
	all, err := st.Approvals(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// waitApproval waits for the nth approval request and returns it.
func waitApproval(t *testing.T, dir string, n int) store.Approval {
	t.Helper()
	var a store.Approval
	testwait.For(t, claudeTurnWithin, fmt.Sprintf("approval request %d", n), func() bool {
		all := approvals(t, dir)
		if len(all) < n {
			return false
		}
		a = all[0]
		return true
	})
	return a
}

func approvalByID(t *testing.T, dir, id string) store.Approval {
	t.Helper()
	st := openDB(t, filepath.Join(dir, "data"))
	defer st.Close()
	a, err := st.Approval(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// writeMCPTee writes the MCP config that runs the group's bridge (bin
// mcp-bridge --socket sock, as the group's .mcp.json has it) behind tee,
// logging what Claude Code sends and gets in the group folder.
func writeMCPTee(t *testing.T, path, bin, sock string) {
	t.Helper()
	script := fmt.Sprintf(`tee -a mcp-in.jsonl | %s | tee -a mcp-out.jsonl`, shellQuote([]string{bin, "mcp-bridge", "--socket", sock}))
	cfg := map[string]any{"mcpServers": map[string]any{"switchboard": map[string]any{
		"type": "stdio", "command": "/bin/sh", "args": []string{"-c", script}}}}
	out, _ := json.MarshalIndent(cfg, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkMCPTee checks that the tee runs the bridge the gateway wrote into
// the group's .mcp.json.
func checkMCPTee(t *testing.T, groupDir, bin, sock string) {
	t.Helper()
	var mcpJSON struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(filepath.Join(groupDir, ".mcp.json"))
	if err != nil || json.Unmarshal(b, &mcpJSON) != nil {
		t.Fatalf("the group's .mcp.json: %v: %s", err, b)
	}
	sb := mcpJSON.MCPServers["switchboard"]
	if want := []string{"mcp-bridge", "--socket", sock}; sb.Command != bin || !slices.Equal(sb.Args, want) {
		t.Fatalf("the group's .mcp.json runs %s %q; the tee runs %s %q", sb.Command, sb.Args, bin, want)
	}
}

func shellQuote(args []string) string {
	var q []string
	for _, a := range args {
		q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(q, " ")
}

// permissionCall is one approve_tool call as Claude Code made it, and the
// text of the answer it got.
type permissionCall struct {
	ClaudeCode string          `json:"claude_code"`
	Arguments  json.RawMessage `json:"arguments"`
	ResultText string          `json:"result_text"`
	IsError    bool            `json:"is_error,omitempty"`
}

// readMCPTee pairs the approve_tool calls logged by the tee with their
// answers, in call order.
func readMCPTee(t *testing.T, groupDir string) []permissionCall {
	t.Helper()
	type rpc struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
		Result *struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	lines := func(name string) []rpc {
		f, err := os.Open(filepath.Join(groupDir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		var out []rpc
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			var r rpc
			if json.Unmarshal(sc.Bytes(), &r) == nil {
				out = append(out, r)
			}
		}
		return out
	}
	// Each Claude Code process is its own MCP session with its own ids:
	// answers follow their calls in the log, so pair each call with the
	// first later answer of the same id.
	in, out := lines("mcp-in.jsonl"), lines("mcp-out.jsonl")
	var calls []permissionCall
	used := make([]bool, len(out))
	for _, c := range in {
		if c.Method != "tools/call" || c.Params.Name != "approve_tool" {
			continue
		}
		pc := permissionCall{ClaudeCode: claudeCodeVersion, Arguments: c.Params.Arguments}
		for j, r := range out {
			if !used[j] && r.Result != nil && bytes.Equal(r.ID, c.ID) && len(r.Result.Content) > 0 && strings.Contains(r.Result.Content[0].Text, "behavior") {
				used[j] = true
				pc.ResultText, pc.IsError = r.Result.Content[0].Text, r.Result.IsError
				break
			}
		}
		calls = append(calls, pc)
	}
	return calls
}

// checkPermissionCall checks a live permission-prompt call against the
// recorded fixture: the same argument names, the tool and its input as the
// model asked, and an answer of the protocol's shape.
func checkPermissionCall(t *testing.T, c permissionCall) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal(c.Arguments, &args); err != nil {
		t.Fatalf("approve_tool arguments: %v: %s", err, c.Arguments)
	}
	if args["tool_name"] != "Bash" {
		t.Errorf("approve_tool was called for %v, want Bash: %s", args["tool_name"], c.Arguments)
	}
	if in, _ := args["input"].(map[string]any); in["command"] != bashCommand("allow") {
		t.Errorf("approve_tool's input %v, want the model's Bash input", args["input"])
	}
	if id, _ := args["tool_use_id"].(string); !strings.HasPrefix(id, "toolu_bash_allow_") {
		t.Errorf("approve_tool's tool_use_id %v, want the model's tool_use id", args["tool_use_id"])
	}
	if *recordPermissionPrompt {
		return
	}
	b, err := os.ReadFile(permissionFixture)
	if err != nil {
		t.Fatalf("the recorded fixture: %v (record it with -record-permission-prompt)", err)
	}
	var rec permissionCall
	var recArgs map[string]any
	if err := json.Unmarshal(b, &rec); err != nil || json.Unmarshal(rec.Arguments, &recArgs) != nil {
		t.Fatalf("the recorded fixture %s: %v", permissionFixture, err)
	}
	keys := func(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
	if !slices.Equal(keys(args), keys(recArgs)) {
		t.Errorf("Claude Code %s calls approve_tool with %v; the fixture (Claude Code %s) has %v: re-record it and check runApproveTool", claudeCodeVersion, keys(args), rec.ClaudeCode, keys(recArgs))
	}
}
