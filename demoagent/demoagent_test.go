package demoagent

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"switchboard/routing"
)

const lobby = "web:lobby"

// prompt is a turn prompt whose last message is text.
func prompt(text string) string {
	return `<turn folder="main" tier="1" chat="web:lobby" trigger="message" now="x"/>` + "\n<messages>\n" +
		`<message seq="1" id="m1" sender="web:user/ann" name="Ann" time="x" verb="mention">` + text + "</message>\n</messages>\n"
}

// fakeGroup serves a group's MCP tools on a unix socket, as the gateway
// does, and records what was posted with reply and send.
type fakeGroup struct {
	mu     sync.Mutex
	posted []string // "tool chat: text"
}

func (f *fakeGroup) serve(t *testing.T) (socket string) {
	t.Helper()
	s := server.NewMCPServer("fake-group", "1")
	post := func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.GetArguments()
		f.mu.Lock()
		f.posted = append(f.posted, req.Params.Name+" "+args["chat_jid"].(string)+": "+args["text"].(string))
		f.mu.Unlock()
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewTool("reply", mcp.WithString("chat_jid"), mcp.WithString("text")), post)
	s.AddTool(mcp.NewTool("send", mcp.WithString("chat_jid"), mcp.WithString("text")), post)
	s.AddTool(mcp.NewTool("list_routes"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		out, _ := json.Marshal(map[string]any{"routes": []routing.Route{
			{ID: 3, Seq: 1, Match: map[string]string{"verb": "mention", "platform": "web"}, Target: "main", Mode: routing.Trigger},
		}})
		return mcp.NewToolResultText(string(out)), nil
	})
	dir, err := os.MkdirTemp("", "demo") // short: a socket path has ~100 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	socket = filepath.Join(dir, "g.sock")
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = server.NewStdioServer(s).Listen(ctx, conn, conn)
	}()
	return socket
}

func (f *fakeGroup) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.posted...)
}

func options(vars map[string]string, stdout, stderr *bytes.Buffer) Options {
	return Options{Getenv: func(k string) string { return vars[k] }, Stdout: stdout, Stderr: stderr, Version: "test"}
}

// Over its group's socket the demo agent answers with the reply tool (a
// task turn with send), runs chat commands through the group's tools, and
// leaves stdout empty.
func TestRunAnswersOverMCP(t *testing.T) {
	for _, c := range []struct {
		name, prompt, trigger, want string
	}{
		{"message", prompt("hello there"), "", `reply web:lobby: Hi Ann! I am the Switchboard demo agent in folder main. You said: "hello there"`},
		{"routes command", prompt("/routes"), "", "reply web:lobby: Routes I can see (1), tried in this order:\n- #3 (seq 1) platform=web verb=mention -> main [trigger]"},
		{"task", `<turn folder="main" trigger="task"/>` + "\n<task id=\"7\">stretch</task>\n", "task", "send web:lobby: Scheduled task ran: stretch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f fakeGroup
			vars := map[string]string{"SWITCHBOARD_MCP_SOCKET": f.serve(t), "SWITCHBOARD_CHAT_JID": lobby,
				"SWITCHBOARD_FOLDER": "main", "SWITCHBOARD_TRIGGER": c.trigger}
			var out, errb bytes.Buffer
			if err := Run(t.Context(), c.prompt, options(vars, &out, &errb)); err != nil {
				t.Fatal(err)
			}
			if got := f.got(); len(got) != 1 || got[0] != c.want {
				t.Errorf("posted %q; want [%q]", got, c.want)
			}
			if out.Len() != 0 || errb.Len() != 0 {
				t.Errorf("stdout %q, stderr %q; want both empty", out.String(), errb.String())
			}
		})
	}
}

// Without a reachable MCP server the answer goes to stdout and stderr says
// why; a CA file without Options.HTTPClient is such a case.
func TestRunFallsBackToStdout(t *testing.T) {
	for _, c := range []struct {
		name string
		vars map[string]string
		text string
		want string
	}{
		{"no socket", map[string]string{"SWITCHBOARD_MCP_SOCKET": filepath.Join(t.TempDir(), "none.sock"), "SWITCHBOARD_CHAT_JID": lobby},
			"/tools", "/tools: I have no MCP connection"},
		{"CA file without an HTTP client", map[string]string{"SWITCHBOARD_MCP_URL": "https://127.0.0.1:1/mcp", "SWITCHBOARD_MCP_TOKEN": "t",
			"SWITCHBOARD_MCP_CA": "ca.pem", "SWITCHBOARD_CHAT_JID": lobby, "SWITCHBOARD_FOLDER": "main"},
			"hi", `Hi Ann! I am the Switchboard demo agent in folder main. You said: "hi"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if err := Run(t.Context(), prompt(c.text), options(c.vars, &out, &errb)); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out.String(), c.want) || !strings.Contains(errb.String(), "answering on stdout") {
				t.Errorf("stdout %q, stderr %q; want stdout %q and the reason on stderr", out.String(), errb.String(), c.want)
			}
		})
	}
}
