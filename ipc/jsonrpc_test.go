package ipc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/groups"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
	"switchboard/ipc"
)

// rawConn speaks newline-delimited JSON-RPC by hand.
type rawConn struct {
	t testing.TB
	c net.Conn
	r *bufio.Reader
}

func (h *harness) raw(t testing.TB, folder groups.Folder) *rawConn {
	t.Helper()
	h.waitSocket(t, folder)
	c, err := net.Dial("unix", h.sock(folder))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: bufio.NewReaderSize(c, 1<<20)}
}

func (rc *rawConn) send(line string) {
	rc.t.Helper()
	if _, err := rc.c.Write([]byte(line + "\n")); err != nil {
		rc.t.Fatal(err)
	}
}

// rpcMsg is any JSON-RPC message from the server.
type rpcMsg struct {
	ID     any             `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (rc *rawConn) recv() rpcMsg {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := rc.r.ReadBytes('\n')
	if err != nil {
		rc.t.Fatalf("read: %v", err)
	}
	var m rpcMsg
	if err := json.Unmarshal(line, &m); err != nil {
		rc.t.Fatalf("server sent %q: %v", line, err)
	}
	return m
}

// initialize runs the legacy handshake.
func (rc *rawConn) initialize() {
	rc.t.Helper()
	rc.send(testmcp.InitializeRequest(1, testmcp.Options{Client: "raw"}))
	if m := rc.recv(); m.Error != nil || m.Result == nil {
		rc.t.Fatalf("initialize: %+v", m)
	}
	rc.send(testmcp.Initialized)
}

// toolsCall sends a tools/call and returns the result.
func (rc *rawConn) toolsCall(id int, tool string, args string) (mcp.CallToolResult, rpcMsg) {
	rc.t.Helper()
	rc.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args))
	m := rc.recv()
	var res mcp.CallToolResult
	if m.Result != nil {
		if err := json.Unmarshal(m.Result, &res); err != nil {
			rc.t.Fatal(err)
		}
	}
	return res, m
}

func resultText(r mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// TestFramingErrors: bad input gets a JSON-RPC error and the connection
// keeps working.
func TestFramingErrors(t *testing.T) {
	h := newHarness(t, nil)
	rc := h.raw(t, "acme")
	rc.initialize()
	cases := []struct {
		name, line string
		code       int
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":2,"method":`, mcp.PARSE_ERROR},
		{"not JSON at all", `hello`, mcp.PARSE_ERROR},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"ping"}]`, mcp.INVALID_REQUEST},
		{"not an object", `42`, mcp.INVALID_REQUEST},
		{"method of the wrong type", `{"jsonrpc":"2.0","id":4,"method":7}`, mcp.INVALID_REQUEST},
		{"no method", `{"jsonrpc":"2.0","id":5}`, mcp.INVALID_REQUEST},
		{"unknown method", `{"jsonrpc":"2.0","id":6,"method":"tools/frobnicate"}`, mcp.METHOD_NOT_FOUND},
		{"wrong version", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, mcp.INVALID_REQUEST},
		{"unknown tool", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`, mcp.INVALID_PARAMS},
	}
	for _, c := range cases {
		rc.send(c.line)
		m := rc.recv()
		if m.Error == nil || m.Error.Code != c.code {
			t.Errorf("%s: got %+v, want error %d", c.name, m, c.code)
		}
		rc.send(`{"jsonrpc":"2.0","id":100,"method":"ping"}`)
		if m := rc.recv(); m.Error != nil || fmt.Sprint(m.ID) != "100" {
			t.Fatalf("after %s the connection does not answer ping: %+v", c.name, m)
		}
	}
}

// TestHugeLine: a message over the 4 MiB limit is answered with an error
// and skipped; the connection goes on.
func TestHugeLine(t *testing.T) {
	h := newHarness(t, nil)
	rc := h.raw(t, "acme")
	rc.initialize()
	huge := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"send","arguments":{"chat_jid":"web:acme","text":"` +
		strings.Repeat("x", ipc.DefaultMaxLine) + `"}}}`
	go rc.c.Write([]byte(huge + "\n")) // the server reads while we wait for its answer
	m := rc.recv()
	if m.Error == nil || m.Error.Code != mcp.INVALID_REQUEST || !strings.Contains(m.Error.Message, "too large") {
		t.Fatalf("huge line: %+v", m)
	}
	// The error answers the request (its id), so that its client does not
	// wait for an answer until its own timeout: with the id first (Go and
	// Python clients) or last (the TypeScript SDK, Claude Code's).
	if m.ID != float64(9) {
		t.Errorf("huge request 9 answered with id %v; want 9", m.ID)
	}
	last := `{"method":"tools/call","params":{"name":"send","arguments":{"chat_jid":"web:acme","text":"` +
		strings.Repeat("y", ipc.DefaultMaxLine) + `","id":"inner"}},"jsonrpc":"2.0","id":"req-11"}`
	go rc.c.Write([]byte(last + "\n"))
	if m := rc.recv(); m.Error == nil || m.ID != "req-11" {
		t.Errorf("huge request req-11 (id last) answered %+v; want an error for req-11", m)
	}
	// An id that cannot be told for sure (neither first nor last) is not
	// guessed from what the message holds.
	mid := `{"method":"tools/call","id":12,"params":{"name":"send","arguments":{"text":"` + strings.Repeat("z", ipc.DefaultMaxLine) + `","id":5}}}`
	go rc.c.Write([]byte(mid + "\n"))
	if m := rc.recv(); m.Error == nil || m.ID != nil {
		t.Errorf("huge request with its id in the middle answered %+v; want an error with id null", m)
	}
	res, m := rc.toolsCall(10, "list_grants", `{}`)
	if m.Error != nil || res.IsError {
		t.Fatalf("after a huge line: %+v %+v", m, res)
	}
	if len(h.web.sends()) != 0 {
		t.Error("the huge message was sent anyway")
	}
}

// TestBadArguments: wrong types and missing params are isError results that
// say what is wrong; unknown params are named.
func TestBadArguments(t *testing.T) {
	h := newHarness(t, nil)
	h.deliver(t, "web:acme", "m1", "hello")
	c := h.connect(t, "acme", false)
	cases := []struct {
		tool string
		args any
		want string
	}{
		{"send", map[string]any{"chat_jid": 42, "text": "x"}, "param chat_jid: want a string, got an integer"},
		{"send", map[string]any{"chat_jid": "web:acme"}, "missing required param text"},
		{"send", map[string]any{"chat_jid": "web:acme", "text": "x", "colour": "red"}, `unknown param "colour"`},
		{"inspect_messages", map[string]any{"chat_jid": "web:acme", "limit": 2.5}, "param limit: want an integer"},
		{"inspect_messages", map[string]any{"chat_jid": "web:acme", "limit": "10"}, "param limit: want an integer, got a string"},
		{"add_route", map[string]any{"match": "chat_jid=web:acme", "target": "acme"}, "param match: want an object"},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": 5}, "target": "acme"}, "match key chat_jid: want a string glob"},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme", "mode": "loud"}, `"loud" is not one of trigger, observe`},
		{"set_routes", map[string]any{"routes": []any{"x"}}, "routes[0]: want an object"},
		{"send", []any{"web:acme", "x"}, "arguments must be a JSON object"},
		{"send", map[string]any{"chat_jid": "not a jid", "text": "x"}, `param chat_jid: invalid JID "not a jid"`}, // checked before ownership
		{"find_messages", map[string]any{"query": "AND OR ("}, "bad search query"},
		{"find_messages", map[string]any{"query": "x", "since": "last tuesday"}, "since \"last tuesday\""},
		{"register_group", map[string]any{"folder": "Bad Name"}, "invalid group folder"},
		// Integers under the schema's minimum were ignored: all the
		// messages came back for limit 0 or before_seq -1.
		{"inspect_messages", map[string]any{"chat_jid": "web:acme", "limit": 0}, "param limit: 0 is below the minimum 1"},
		{"inspect_messages", map[string]any{"chat_jid": "web:acme", "before_seq": -1}, "param before_seq: -1 is below the minimum 1"},
		{"preview_schedule", map[string]any{"schedule": "@daily", "count": 0}, "param count: 0 is below the minimum 1"},
		{"inspect_tasks", map[string]any{"limit": -3}, "param limit: -3 is below the minimum 1"},
	}
	for _, tc := range cases {
		r, err := tryCall(c, tc.tool, tc.args)
		if err != nil {
			t.Errorf("%s %v: JSON-RPC error %v, want an isError result", tc.tool, tc.args, err)
			continue
		}
		if !r.IsError || !strings.Contains(r.Text, tc.want) {
			t.Errorf("%s %v: %+v, want isError containing %q", tc.tool, tc.args, r, tc.want)
		}
	}
	// A hidden tool with bad arguments is still refused, not validated.
	ops := h.connect(t, "acme/eng/ops", true)
	if r := call(t, ops, "send", map[string]any{"chat_jid": 1}); !r.refused() {
		t.Errorf("hidden tool with bad args: %+v", r)
	}
}

// TestBadJIDArguments: a chat_jid or sender that is not a JID is an isError
// result that names the param, for every tool that takes one, also for the
// operator, whom chat ownership does not stop first. Engaging "garbage"
// answered {"ok":true}, and reading its history an empty list, as if the
// chat existed.
func TestBadJIDArguments(t *testing.T) {
	h := newHarness(t, nil)
	root := h.connect(t, "root", false)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"engage", map[string]any{"chat_jid": "garbage"}, `param chat_jid: invalid JID "garbage"`},
		{"disengage", map[string]any{"chat_jid": "web:has space"}, `param chat_jid: invalid JID "web:has space"`},
		{"inspect_messages", map[string]any{"chat_jid": "lobby"}, `param chat_jid: invalid JID "lobby"`},
		{"get_thread", map[string]any{"chat_jid": "lobby", "topic": "t"}, `param chat_jid: invalid JID "lobby"`},
		{"fetch_history", map[string]any{"chat_jid": "lobby"}, `param chat_jid: invalid JID "lobby"`},
		{"explain_route", map[string]any{"chat_jid": "lobby"}, `param chat_jid: invalid JID "lobby"`},
		{"explain_route", map[string]any{"chat_jid": "web:acme", "sender": "ann"}, `param sender: invalid JID "ann"`},
		{"send", map[string]any{"chat_jid": "", "text": "x"}, `param chat_jid: invalid JID: empty`},
		{"find_messages", map[string]any{"query": "x", "sender": "ann"}, `param sender: invalid JID "ann"`},
	}
	for _, tc := range cases {
		r, err := tryCall(root, tc.tool, tc.args)
		if err != nil {
			t.Errorf("%s %v: JSON-RPC error %v, want an isError result", tc.tool, tc.args, err)
			continue
		}
		if !r.IsError || !strings.Contains(r.Text, tc.want) {
			t.Errorf("%s %v: %+v, want isError containing %q", tc.tool, tc.args, r, tc.want)
		}
	}
}

// TestOversizeIDArguments: a topic or message id longer than any platform's
// (256 bytes, as an inbound message id may be) is an isError naming the
// param. A 1 MB topic was sent and stored with the bot's message, and
// engage kept one in memory per call.
func TestOversizeIDArguments(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", false)
	huge := strings.Repeat("t", 1<<20)
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"send", map[string]any{"chat_jid": "web:acme", "text": "hi", "topic": huge}, "param topic: 1048576 bytes, at most 256"},
		{"engage", map[string]any{"chat_jid": "web:acme", "topic": huge}, "param topic: 1048576 bytes, at most 256"},
		{"get_thread", map[string]any{"chat_jid": "web:acme", "topic": huge}, "param topic: 1048576 bytes, at most 256"},
		{"reply", map[string]any{"chat_jid": "web:acme", "text": "hi", "reply_to": huge}, "param reply_to: 1048576 bytes, at most 256"},
		{"delete", map[string]any{"chat_jid": "web:acme", "message_id": huge}, "param message_id: 1048576 bytes, at most 256"},
	}
	for _, tc := range cases {
		r, err := tryCall(c, tc.tool, tc.args)
		if err != nil {
			t.Errorf("%s: JSON-RPC error %v, want an isError result", tc.tool, err)
			continue
		}
		if !r.IsError || !strings.Contains(r.Text, tc.want) {
			t.Errorf("%s: %.200s, want isError containing %q", tc.tool, r.Text, tc.want)
		}
	}
	if n := len(h.web.sends()); n != 0 {
		t.Errorf("%d sends went out", n)
	}
	if r := call(t, c, "send", map[string]any{"chat_jid": "web:acme", "text": "hi", "topic": strings.Repeat("t", 256)}); r.IsError {
		t.Errorf("send with a 256-byte topic: %s", r.Text)
	}
}

// blockingSend makes the "web" fake hold every Send until release closes.
func (f *fakeAdapter) block() (entered <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	f.gate, f.entered = gate, in
	var once sync.Once
	return in, func() { once.Do(func() { close(gate) }) }
}

// TestClientDisconnectMidCall: a client that goes away while a call runs
// costs nothing lasting: the session ends, the gateway keeps serving, and no
// goroutine is left behind.
func TestClientDisconnectMidCall(t *testing.T) {
	h := newHarness(t, nil)
	h.waitStarted(t)
	base := runtime.NumGoroutine()
	entered, release := h.web.block()
	defer release()
	rc := h.raw(t, "acme")
	rc.initialize()
	rc.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"send","arguments":{"chat_jid":"web:acme","text":"slow"}}}`)
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("send never reached the adapter")
	}
	rc.c.Close()
	release()
	c := h.connect(t, "acme", true)
	if r := call(t, c, "list_grants", nil); r.IsError {
		t.Fatal(r.Text)
	}
	c.Close()
	waitGoroutines(t, base)
}

// TestConcurrentConnections: 100 sessions at once, each listing and calling.
func TestConcurrentConnections(t *testing.T) {
	h := newHarness(t, nil)
	h.waitStarted(t)
	h.waitSocket(t, "acme")
	h.waitSocket(t, "acme/eng")
	base := runtime.NumGoroutine()
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			folder := []string{"acme", "acme/eng"}[i%2]
			c, err := dialMCP(h.sock(groups.Folder(folder)), i%3 == 0)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
			if err != nil {
				errs <- err
				return
			}
			want := map[string]int{"acme": 41, "acme/eng": 22}[folder] // CONTRACT §7: tier 1 all, tier 2 a subset (§15: approve_tool at every tier)
			if len(res.Tools) != want {
				errs <- fmt.Errorf("%s lists %d tools, want %d", folder, len(res.Tools), want)
			}
			r, err := tryCall(c, "list_grants", nil)
			if err != nil || r.IsError || !strings.Contains(r.Text, `"folder":"`+folder+`"`) {
				errs <- fmt.Errorf("%s list_grants: %v %+v", folder, err, r)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	waitGoroutines(t, base)
}

// waitGoroutines waits for the goroutine count to come back to base, the
// count once the gateway had started (a few of slack for the runtime's
// own), failing with a dump if it does not.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	if !testwait.Until(15*time.Second, func() bool { return runtime.NumGoroutine() <= base+2 }) {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		t.Fatalf("%d goroutines, %d at the start:\n%s", runtime.NumGoroutine(), base, buf)
	}
}

// TestSessionsAreSeparate: two sessions of different groups on the same
// server never see each other's identity.
func TestSessionsAreSeparate(t *testing.T) {
	h := newHarness(t, nil)
	a, b := h.connect(t, "acme", false), h.connect(t, "acme/eng", false)
	var ga, gb struct {
		Folder string `json:"folder"`
		Tier   int    `json:"tier"`
	}
	call(t, a, "list_grants", nil).decode(t, &ga)
	call(t, b, "list_grants", nil).decode(t, &gb)
	if ga.Folder != "acme" || ga.Tier != 1 || gb.Folder != "acme/eng" || gb.Tier != 2 {
		t.Errorf("identities: %+v %+v", ga, gb)
	}
}
