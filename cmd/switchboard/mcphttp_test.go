package main

// Agents that reach their group's tools over the MCP HTTP endpoint
// (mcp.listen) with only SWITCHBOARD_MCP_URL and SWITCHBOARD_MCP_TOKEN.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/internal/testcert"
	"switchboard/internal/testenv"
	"switchboard/internal/testlog"
	"switchboard/internal/testmcp"
)

// remoteAgents are the agents a remote turn runs, given the command that
// reaches the remote side (a network namespace, or nothing) and extra
// environment: the demo agent, and a shell agent that talks through
// "switchboard mcp-bridge" with no flags (SWITCHBOARD_MCP_URL). Neither
// has SWITCHBOARD_MCP_SOCKET. want is the bot message each must post.
func remoteAgents(t *testing.T, dir string, prefix []string, env ...string) []struct {
	name   string
	argv   []string
	want   string
	bridge bool // its bridge's output goes to bridge.out and bridge.err in the group folder
} {
	t.Helper()
	base := append(append(append([]string{}, prefix...), "env", "-u", "SWITCHBOARD_MCP_SOCKET"), env...)
	script := filepath.Join(dir, "bridge-agent.sh")
	bridge := strings.Join(quoteAll(append(append([]string{}, base...), helperArgv("mcp-bridge")...)), " ")
	body := `#!/bin/sh
cat > /dev/null
{
  ` + testmcp.ShellHandshake(testmcp.Options{Client: "sh"}) + `
  printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"reply","arguments":{"chat_jid":"%s","text":"via the http bridge"}}}\n' "$SWITCHBOARD_CHAT_JID"
} | ` + bridge + ` > bridge.out 2> bridge.err
echo "stdout reply"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return []struct {
		name   string
		argv   []string
		want   string
		bridge bool
	}{
		{"demo-agent", append(append([]string{}, base...), helperArgv("demo-agent")...), "Hi ann! I am the Switchboard demo agent in folder main.", false},
		{"mcp-bridge", []string{script}, "via the http bridge", true},
	}
}

// checkRemoteReply posts a message and checks that the one answer is
// want and came through an MCP tool, not stdout.
func checkRemoteReply(t *testing.T, dir, base, want string, bridge bool) {
	t.Helper()
	post(t, base, "lobby", "hello there")
	bots := waitBots(t, dir, base, "lobby", 1)
	if len(bots) != 1 || !strings.HasPrefix(bots[0].Text, want) {
		var extra string
		if bridge {
			out, _ := os.ReadFile(filepath.Join(dir, "groups", "main", "bridge.out"))
			errOut, _ := os.ReadFile(filepath.Join(dir, "groups", "main", "bridge.err"))
			extra = fmt.Sprintf("\nbridge stdout: %s\nbridge stderr: %s", out, errOut)
		}
		t.Fatalf("bot messages %+v, want one starting %q%s", bots, want, extra)
	}
	st := openDB(t, dir)
	items, err := st.Outbox(context.Background(), "web:lobby", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if !strings.HasPrefix(it.Key, "mcp-") {
			t.Errorf("outbox item %s (%s) did not come from an MCP tool", it.Key, it.Kind)
		}
	}
}

// TestAgentsOverHTTP: with mcp.listen on loopback, agents without the
// socket answer through the HTTP endpoint.
func TestAgentsOverHTTP(t *testing.T) {
	for _, a := range remoteAgents(t, t.TempDir(), nil) {
		t.Run(a.name, func(t *testing.T) {
			dir := shortDir(t)
			base := gatewayRunCfg(t, dir, a.argv, `mcp: {listen: "127.0.0.1:0"}`)
			checkRemoteReply(t, dir, base, a.want, a.bridge)
		})
	}
}

// TestRemoteTurnInNetworkNamespace: a turn whose agent runs in a second
// network namespace (a veth pair to the gateway's), given only the URL, the
// token and the CA of the gateway's self-signed certificate, gets its reply
// into the web room over TLS.
func TestRemoteTurnInNetworkNamespace(t *testing.T) {
	ns, hostIP := netns(t)
	cert, key := testcert.Write(t, net.ParseIP(hostIP))
	for _, a := range remoteAgents(t, t.TempDir(), []string{"ip", "netns", "exec", ns}, "SWITCHBOARD_MCP_CA="+cert) {
		t.Run(a.name, func(t *testing.T) {
			dir := shortDir(t)
			base := gatewayRunCfg(t, dir, a.argv, fmt.Sprintf("mcp: {listen: %q, tls_cert: %q, tls_key: %q}", hostIP+":0", cert, key))
			checkRemoteReply(t, dir, base, a.want, a.bridge)
		})
	}
}

// netns makes a network namespace joined to this one by a veth pair and
// returns its name and the host side's address. It skips when that is not
// possible (not root, no ip netns), unless CI is set.
func netns(t *testing.T) (name, hostIP string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "the network namespace test needs root for ip netns")
	}
	testenv.Need(t, "ip", "iproute2; make deps installs it")
	id := os.Getpid() % 200
	name = fmt.Sprintf("sbtest%d", os.Getpid())
	host, peer := fmt.Sprintf("sbh%d", os.Getpid()), fmt.Sprintf("sbn%d", os.Getpid())
	hostIP, nsIP := fmt.Sprintf("10.213.%d.1", id), fmt.Sprintf("10.213.%d.2", id)
	ip := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := ip("netns", "add", name); err != nil {
		testenv.Unavailable(t, "the network namespace test could not make its namespace: %v", err)
	}
	t.Cleanup(func() { _ = ip("netns", "del", name) })
	for _, args := range [][]string{
		{"link", "add", host, "type", "veth", "peer", "name", peer},
		{"link", "set", peer, "netns", name},
		{"addr", "add", hostIP + "/30", "dev", host},
		{"link", "set", host, "up"},
		{"netns", "exec", name, "ip", "addr", "add", nsIP + "/30", "dev", peer},
		{"netns", "exec", name, "ip", "link", "set", peer, "up"},
		{"netns", "exec", name, "ip", "link", "set", "lo", "up"},
	} {
		if err := ip(args...); err != nil {
			t.Fatal(err)
		}
		if args[0] == "link" && args[1] == "add" {
			t.Cleanup(func() { _ = ip("link", "del", host) })
		}
	}
	return name, hostIP
}

// gatewayOverHTTP runs the gateway (demo agent) with its MCP endpoint on
// a free loopback port (mcp.listen) and returns its data dir, that
// address and a token for group main, valid for an hour.
func gatewayOverHTTP(t *testing.T) (dir, addr, token string) {
	t.Helper()
	dir = shortDir(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = ln.Addr().String()
	ln.Close()
	gatewayRunCfg(t, dir, helperArgv("demo-agent"), fmt.Sprintf("mcp: {listen: %q}", addr))
	return dir, addr, strings.TrimSpace(mustSB(t, dir, "token", "add", "main", "--ttl", "1h"))
}

// TestBridgeURLBothProtocols: an MCP client speaking stdio to
// "switchboard mcp-bridge --url" (token from SWITCHBOARD_MCP_TOKEN) lists
// its group's tools, calls one, and gets list_changed after `grants set`,
// in both protocol generations.
func TestBridgeURLBothProtocols(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			dir, addr, tok := gatewayOverHTTP(t)

			cmd := exec.Command(helperArgv()[0], append(helperArgv()[1:], "mcp-bridge", "--url", "http://"+addr+"/mcp")...)
			cmd.Env = append(os.Environ(), "SWITCHBOARD_TEST_HELPER=1", "SWITCHBOARD_MCP_TOKEN="+tok)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr testlog.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				stdin.Close()
				if err := cmd.Wait(); err != nil {
					t.Errorf("bridge: %v\n%s", err, stderr.String())
				}
			})
			var opts []client.ClientOption
			if legacy {
				opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
			}
			c := client.NewClient(transport.NewIO(stdout, stdin, nil), opts...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := c.Start(ctx); err != nil {
				t.Fatal(err)
			}
			notes := make(chan string, 16)
			c.OnNotification(func(n mcp.JSONRPCNotification) { notes <- n.Method })
			req := mcp.InitializeRequest{}
			req.Params.ClientInfo = mcp.Implementation{Name: "t", Version: "1"}
			if _, err := c.Initialize(ctx, req); err != nil {
				t.Fatalf("initialize: %v\n%s", err, stderr.String())
			}
			if got := c.ProtocolVersion() == mcp.ProtocolVersion20260728; got == legacy {
				t.Fatalf("negotiated %s (legacy=%v)", c.ProtocolVersion(), legacy)
			}
			if !legacy {
				stop, err := c.ListenAsync(ctx, mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer stop()
				waitMethod(t, notes, mcp.MethodNotificationSubscriptionsAcknowledged)
			}
			res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
			if err != nil || len(res.Tools) != len(toolCatalog(t).ForGroup(1, nil).ListedTools(toolCatalog(t).Tools())) { // no approve_tool: approvals.agent_tools is not set
				t.Fatalf("tools/list: %d tools, %v", len(res.Tools), err)
			}
			call := mcp.CallToolRequest{}
			call.Params.Name = "list_grants"
			if r, err := c.CallTool(ctx, call); err != nil || r.IsError {
				t.Fatalf("list_grants: %+v, %v", r, err)
			}
			mustSB(t, dir, "grants", "set", "main", "!like")
			waitMethod(t, notes, mcp.MethodNotificationToolsListChanged)
			if legacy { // the GET stream is open; a later call still works
				if r, err := c.CallTool(ctx, call); err != nil || r.IsError {
					t.Fatalf("list_grants after the change: %+v, %v", r, err)
				}
			}
			// A request over the bridge's line limit is answered with an
			// error at once: the client does not wait until its timeout.
			big := mcp.CallToolRequest{}
			big.Params.Name = "send"
			big.Params.Arguments = map[string]any{"chat_jid": "web:lobby", "text": strings.Repeat("x", 5<<20)}
			bctx, bcancel := context.WithTimeout(ctx, 10*time.Second)
			defer bcancel()
			if _, err := c.CallTool(bctx, big); err == nil || !strings.Contains(err.Error(), "longer than") {
				t.Errorf("a 5 MB tools/call: %v; want an error saying the message was too long", err)
			}
		})
	}
}

// waitMethod waits (bounded) for a notification.
func waitMethod(t *testing.T, notes <-chan string, method string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-notes:
			if m == method {
				return
			}
		case <-timeout:
			t.Fatalf("no %s", method)
		}
	}
}
