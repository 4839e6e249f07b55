package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/grants"
	"switchboard/internal/testlog"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
	"switchboard/ipc"
	"switchboard/store"
)

// TestHelperProcess is not a test: the end-to-end tests run this test binary
// as the agent (and as mcp-bridge) with SWITCHBOARD_TEST_HELPER=1; the
// arguments after "--" are a switchboard command line.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("SWITCHBOARD_TEST_HELPER") != "1" {
		t.Skip("helper process for the end-to-end tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	err := run(context.Background(), args, os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "switchboard:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helperArgv runs `switchboard args...` through TestHelperProcess.
func helperArgv(args ...string) []string {
	return append([]string{os.Args[0], "-test.run=^TestHelperProcess$", "--"}, args...)
}

// shortDir is a temp dir with a short path (unix sockets allow ~108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// toolCatalog is the grants catalog of a gateway without
// approvals.agent_tools (no approve_tool), as these tests run it.
func toolCatalog(t testing.TB) *grants.Catalog {
	t.Helper()
	c, err := ipc.Catalog(false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMCPBridgeErrors(t *testing.T) {
	dir := filepath.Join(shortDir(t), "data")
	if _, _, err := sb(t, dir, "mcp-bridge"); !isUsage(err) {
		t.Errorf("no flags: %v, want a usage error", err)
	}
	if _, _, err := sb(t, dir, "mcp-bridge", "--folder", "a", "--socket", "/x"); !isUsage(err) {
		t.Errorf("both flags: %v, want a usage error", err)
	}
	_, _, err := sb(t, dir, "mcp-bridge", "--folder", "acme/eng")
	if err == nil || !strings.Contains(err.Error(), "no MCP socket at "+filepath.Join(dir, "ipc", "acme", "eng", "mcp.sock")) ||
		!strings.Contains(err.Error(), "is the gateway running and does group acme/eng exist?") {
		t.Errorf("missing socket: %v", err)
	}
	_, _, err = sb(t, dir, "mcp-bridge", "--socket", filepath.Join(dir, "nope.sock"))
	if err == nil || !strings.Contains(err.Error(), "no MCP socket at") {
		t.Errorf("missing socket path: %v", err)
	}
	// --url takes its token from SWITCHBOARD_MCP_TOKEN only.
	if _, _, err := sb(t, dir, "mcp-bridge", "--url", "https://gw:8422/mcp"); !isUsage(err) || !strings.Contains(err.Error(), "set SWITCHBOARD_MCP_TOKEN") {
		t.Errorf("--url without a token: %v, want a usage error naming SWITCHBOARD_MCP_TOKEN", err)
	}
	if _, _, err := sb(t, dir, "mcp-bridge", "--url", "https://gw:8422/mcp", "--token", "x"); !isUsage(err) {
		t.Errorf("--token: %v, want a usage error (a token on the command line is visible to other users)", err)
	}
	if _, _, err := sb(t, dir, "mcp-bridge", "--url", "https://gw/mcp", "--folder", "a"); !isUsage(err) {
		t.Errorf("--url with --folder: %v, want a usage error", err)
	}
}

// gatewayRun starts `switchboard run` in-process with the web adapter on a
// free port and agent as the agent command; it returns the web base URL.
func gatewayRun(t *testing.T, dir string, agent []string) string {
	t.Helper()
	return gatewayRunCfg(t, dir, agent, "")
}

// gatewayRunCfg is gatewayRun with extra top-level config (e.g. an mcp
// section) and agent keys replaced by extra's.
func gatewayRunCfg(t *testing.T, dir string, agent []string, extra string) string {
	t.Helper()
	addr := freeAddr(t)
	argv, _ := json.Marshal(agent)
	cfg := fmt.Sprintf(`data_dir: %s
operator_folder: root
log: {level: warn}
agent:
  command: %s
  output: text
  timeout: 60s
  sandbox: none
  env: [SWITCHBOARD_TEST_HELPER]
admin: {listen: ""}
adapters:
  web: {enabled: true, listen: "%s"}
groups:
  - folder: root
  - folder: main
routes:
  - {match: {platform: web}, target: main}
%s
`, dir, argv, addr, extra)
	runInProcess(t, dir, addr, cfg)
	return "http://" + addr
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// runInProcess writes cfg (its data_dir dir, its web adapter listening
// on web) and runs `switchboard run` on it in-process until stop or the test's
// end; it returns once the web chat answers and group main's socket
// exists. The log shows when the test failed.
func runInProcess(t *testing.T, dir, web, cfg string) (stop func(), logs *testlog.Buffer) {
	t.Helper()
	path := filepath.Join(dir, "switchboard.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SWITCHBOARD_TEST_HELPER", "1")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs = &testlog.Buffer{}
	go func() {
		done <- run(ctx, []string{"--config", path, "run"}, os.Getenv, strings.NewReader(""), io.Discard, logs)
	}()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	}
	t.Cleanup(stop)
	up := testwait.Until(10*time.Second, func() bool {
		resp, err := http.Get("http://" + web + "/api/rooms/lobby/messages")
		if err != nil {
			return false
		}
		resp.Body.Close()
		_, err = os.Stat(filepath.Join(dir, "ipc", "main", "mcp.sock"))
		return err == nil
	})
	if !up {
		t.Fatalf("gateway did not come up; log:\n%s", logs.String())
	}
	return stop, logs
}

type webMsg struct {
	Seq     int64  `json:"seq"`
	Sender  string `json:"sender"`
	Text    string `json:"text"`
	FromBot bool   `json:"from_bot"`
}

func post(t *testing.T, base, room, text string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sender": "ann", "text": text})
	resp, err := http.Post(base+"/api/rooms/"+room+"/messages", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post: %s", resp.Status)
	}
}

func botMessages(t *testing.T, base, room string) []webMsg {
	t.Helper()
	resp, err := http.Get(base + "/api/rooms/" + room + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Messages []webMsg `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	var bots []webMsg
	for _, m := range out.Messages {
		if m.FromBot {
			bots = append(bots, m)
		}
	}
	return bots
}

// waitBots waits for n bot messages in room, then until the gateway in dir
// is idle: no turn pending or running, and every outbox item sent or failed.
// A duplicate answer would be stored by then. It returns room's bot messages.
func waitBots(t *testing.T, dir, base, room string, n int) []webMsg {
	t.Helper()
	testwait.For(t, 30*time.Second, fmt.Sprintf("%d bot messages in %s", n, room), func() bool {
		return len(botMessages(t, base, room)) >= n
	})
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	testwait.For(t, 30*time.Second, "every turn recorded and every reply delivered", func() bool {
		ctx := context.Background()
		if pending, err := st.PendingFolders(ctx); err != nil || len(pending) > 0 {
			return false
		}
		items, err := st.Outbox(ctx, "", 1000)
		if err != nil {
			return false
		}
		for _, it := range items {
			if it.Status != store.OutboxSent && it.Status != store.OutboxFailed {
				return false
			}
		}
		return true
	})
	return botMessages(t, base, room)
}

// TestDemoAgentOverMCP: the real gateway runs the demo agent, which answers
// through the reply tool: exactly one bot message per turn, queued by MCP.
// Its chat commands use the tools.
func TestDemoAgentOverMCP(t *testing.T) {
	dir := shortDir(t)
	base := gatewayRun(t, dir, helperArgv("demo-agent"))
	post(t, base, "lobby", "hello there")
	bots := waitBots(t, dir, base, "lobby", 1)
	if len(bots) != 1 || !strings.HasPrefix(bots[0].Text, "Hi ann! I am the Switchboard demo agent in folder main.") {
		t.Fatalf("bot messages: %+v", bots)
	}
	for _, c := range []struct{ text, want string }{
		// tier 1: all of them but approve_tool (approvals.agent_tools is not set)
		{"/tools", fmt.Sprintf("I may call %d tools: add_route, ", len(toolCatalog(t).Tools()))},
		{"/search hello", `best matches for "hello"`},
		{"/routes", "-> main [trigger]"},
	} {
		before := len(botMessages(t, base, "lobby"))
		post(t, base, "lobby", c.text)
		bots := waitBots(t, dir, base, "lobby", before+1)
		if len(bots) != before+1 || !strings.Contains(bots[before].Text, c.want) {
			t.Errorf("%s: bot messages %+v, want one more containing %q", c.text, bots[before:], c.want)
		}
	}
	// Every answer went through the MCP reply tool (outbox keys "mcp-…"),
	// none through stdout.
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	items, err := st.Outbox(context.Background(), "web:lobby", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if !strings.HasPrefix(it.Key, "mcp-") || it.Kind != "reply" {
			t.Errorf("outbox item %s (%s) did not come from the reply tool", it.Key, it.Kind)
		}
	}
}

// TestDemoAgentFallsBackToStdout: without a socket the demo agent prints
// its answer.
func TestDemoAgentFallsBackToStdout(t *testing.T) {
	var out, errb bytes.Buffer
	prompt := `<turn folder="main" tier="1" chat="web:lobby" trigger="message" now="x"/>` + "\n<messages>\n" +
		`<message seq="1" id="m1" sender="web:user/ann" name="Ann" time="x" verb="mention">/tools</message>` + "\n</messages>\n"
	env := map[string]string{"SWITCHBOARD_MCP_SOCKET": filepath.Join(shortDir(t), "none.sock"), "SWITCHBOARD_CHAT_JID": "web:lobby"}
	err := run(context.Background(), []string{"demo-agent"}, func(k string) string { return env[k] }, strings.NewReader(prompt), &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "/tools: I have no MCP connection") || !strings.Contains(errb.String(), "answering on stdout") {
		t.Errorf("stdout %q, stderr %q", out.String(), errb.String())
	}
}

// TestBridgeReplySuppressesStdout: an agent that replies through
// `switchboard mcp-bridge` and also prints a stdout reply produces exactly
// one bot message, the MCP one.
func TestBridgeReplySuppressesStdout(t *testing.T) {
	dir := shortDir(t)
	script := filepath.Join(dir, "agent.sh")
	bridge := strings.Join(quoteAll(helperArgv("mcp-bridge", "--socket")), " ")
	body := `#!/bin/sh
cat > /dev/null
{
  ` + testmcp.ShellHandshake(testmcp.Options{Client: "sh"}) + `
  printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"reply","arguments":{"chat_jid":"%s","text":"via bridge"}}}\n' "$SWITCHBOARD_CHAT_JID"
} | ` + bridge + ` "$SWITCHBOARD_MCP_SOCKET" > bridge.out 2> bridge.err
echo "stdout reply"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	base := gatewayRun(t, dir, []string{script})
	post(t, base, "lobby", "hi")
	bots := waitBots(t, dir, base, "lobby", 1)
	out, _ := os.ReadFile(filepath.Join(dir, "groups", "main", "bridge.out"))
	errOut, _ := os.ReadFile(filepath.Join(dir, "groups", "main", "bridge.err"))
	if len(bots) != 1 || bots[0].Text != "via bridge" {
		t.Fatalf("bot messages %+v, want exactly the MCP reply\nbridge stdout: %s\nbridge stderr: %s", bots, out, errOut)
	}
	// The bridge passed both answers back before it exited.
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], `\"status\":\"sent\"`) {
		t.Errorf("bridge output:\n%s", out)
	}
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return out
}
