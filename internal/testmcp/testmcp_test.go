package testmcp_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchboard/internal/testmcp"
)

// fakeServer answers on a unix socket the way the group servers do, as far
// as the client needs: initialize, tools/list (after a list_changed
// notification), tools/call, and an error for anything else. It records
// every line it got.
func fakeServer(t *testing.T) (sock string, got chan string) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "mcp.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got = make(chan string, 16)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			got <- sc.Text()
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal(sc.Bytes(), &req)
			var out string
			switch req.Method {
			case "notifications/initialized":
				continue
			case "initialize":
				out = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18"}}`, req.ID)
			case "tools/list":
				out = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n" +
					fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"reply"},{"name":"send"}]}}`, req.ID)
			case "tools/call":
				out = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"isError":true,"content":[{"type":"text","text":"got %s"}]}}`,
					req.ID, strings.ReplaceAll(string(req.Params), `"`, `'`))
			default:
				out = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no %s"}}`, req.ID, req.Method)
			}
			fmt.Fprintln(c, out)
		}
	}()
	return sock, got
}

func TestConn(t *testing.T) {
	sock, got := fakeServer(t)
	c, err := testmcp.Connect(sock, testmcp.Options{Client: "unit"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if init := <-got; init != testmcp.InitializeRequest(1, testmcp.Options{Client: "unit"}) ||
		!strings.Contains(init, `"protocolVersion":"2025-06-18"`) || !strings.Contains(init, `"name":"unit"`) {
		t.Errorf("initialize sent as %s", init)
	}
	if n := <-got; n != testmcp.Initialized {
		t.Errorf("after initialize the client sent %s", n)
	}
	tools, err := c.ListTools()
	if err != nil || !slices.Equal(tools, []string{"reply", "send"}) {
		t.Errorf("ListTools = %v, %v", tools, err)
	}
	res, err := c.CallTool("reply", `{"text":"hi"}`)
	if err != nil || !res.IsError || res.Text() != `got {'name':'reply','arguments':{'text':'hi'}}` {
		t.Errorf("CallTool = %+v (%q), %v", res, res.Text(), err)
	}
	var rpcErr *testmcp.RPCError
	if _, err := c.Request("tools/frobnicate", nil); !errors.As(err, &rpcErr) || rpcErr.Code != -32601 {
		t.Errorf("unknown method: %v, want a -32601 RPCError", err)
	}
	// The notification that came before the tools/list answer was kept.
	if m, err := c.Notification("notifications/tools/list_changed"); err != nil || !strings.Contains(string(m.Raw), "list_changed") {
		t.Errorf("Notification = %+v, %v", m, err)
	}
}

// The shell handshake prints the same two frames, one a line.
func TestShellHandshake(t *testing.T) {
	o := testmcp.Options{Version: "2099-01-01", Client: "it's sh"}
	out, err := exec.Command("sh", "-c", testmcp.ShellHandshake(o)).Output()
	if err != nil {
		t.Fatal(err)
	}
	want := testmcp.InitializeRequest(1, o) + "\n" + testmcp.Initialized + "\n"
	if string(out) != want {
		t.Errorf("sh printed\n%s\nwant\n%s", out, want)
	}
	if !strings.Contains(want, `"protocolVersion":"2099-01-01"`) {
		t.Errorf("the version option is not in %s", want)
	}
}
