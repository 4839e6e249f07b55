package ipc

// Tests of one connection's requests and subscriptions/listen streams, over
// the real unix socket in raw JSON lines, against a Server with a stub
// backend: Sync changes the grants synchronously, and the session's state
// can be watched, so nothing here waits on a poll.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/groups"
	"switchboard/internal/testwait"
	"switchboard/routing"
)

// stubBackend: Reload (refresh_groups) blocks until its call is cancelled;
// the tests call nothing else.
type stubBackend struct {
	Backend   // nil: any other method panics
	reloading chan struct{}
}

func (b *stubBackend) Table() *routing.Table { return nil }

func (b *stubBackend) Reload(ctx context.Context) error {
	b.reloading <- struct{}{}
	<-ctx.Done()
	return ctx.Err()
}

// newStubServer serves the group acme (tier 1).
func newStubServer(t *testing.T) (*Server, *stubBackend) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sb") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b := &stubBackend{reloading: make(chan struct{}, 1)}
	s, err := New(Options{Layout: groups.Layout{DataDir: dir}, Operator: "root", Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	setOverrides(t, s)
	return s, b
}

// setOverrides syncs acme with the given grant overrides.
func setOverrides(t *testing.T, s *Server, overrides ...string) {
	t.Helper()
	if err := s.Sync([]Group{{Folder: "acme", Overrides: overrides}}); err != nil {
		t.Fatal(err)
	}
}

// modernMeta is the _meta of a 2026-07-28 request.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

type rawClient struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

// msg is any message from the server.
type msg struct {
	ID     any    `json:"id"`
	Method string `json:"method"`
	Params struct {
		Meta map[string]any `json:"_meta"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (m msg) String() string {
	b, _ := json.Marshal(m)
	return string(b)
}

// subscription is the subscription id a notification is tagged with ("" if none).
func (m msg) subscription() string {
	id, ok := m.Params.Meta[mcp.MetaKeySubscriptionID]
	if !ok {
		return ""
	}
	return fmt.Sprint(id)
}

func dialStub(t *testing.T, s *Server) *rawClient {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath("acme"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, r: bufio.NewReader(c)}
}

func (rc *rawClient) send(format string, args ...any) {
	rc.t.Helper()
	if _, err := fmt.Fprintf(rc.c, format+"\n", args...); err != nil {
		rc.t.Fatal(err)
	}
}

func (rc *rawClient) recv() msg {
	rc.t.Helper()
	_ = rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := rc.r.ReadBytes('\n')
	if err != nil {
		rc.t.Fatalf("read: %v", err)
	}
	var m msg
	if err := json.Unmarshal(line, &m); err != nil {
		rc.t.Fatalf("server sent %q: %v", line, err)
	}
	return m
}

// rest ends the client's side of the connection and returns every message
// the server sends until it closes its side: it serves the requests it has
// read, then closes.
func (rc *rawClient) rest() []msg {
	rc.t.Helper()
	if err := rc.c.(*net.UnixConn).CloseWrite(); err != nil {
		rc.t.Fatal(err)
	}
	var out []msg
	for {
		_ = rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		line, err := rc.r.ReadBytes('\n')
		if len(line) > 0 {
			var m msg
			if err := json.Unmarshal(line, &m); err != nil {
				rc.t.Fatalf("server sent %q: %v", line, err)
			}
			out = append(out, m)
		}
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			rc.t.Fatalf("read: %v", err)
		}
	}
}

// listen opens a stream for toolsListChanged; id is a JSON value.
func (rc *rawClient) listen(id string) {
	rc.t.Helper()
	rc.send(`{"jsonrpc":"2.0","id":%s,"method":"subscriptions/listen","params":{%s,"notifications":{"toolsListChanged":true}}}`, id, modernMeta)
	m := rc.recv()
	if m.Method != mcp.MethodNotificationSubscriptionsAcknowledged || m.subscription() != unquote(id) {
		rc.t.Fatalf("listen %s: got %s, want its subscriptions/acknowledged", id, m)
	}
}

func (rc *rawClient) cancel(id string) {
	rc.t.Helper()
	rc.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{%s,"requestId":%s}}`, modernMeta, id)
}

// barrier sends a request (ping is gone in 2026-07-28: tools/list) and
// requires its response to be the next message: what the server sent
// before it has been read, and nothing else came.
func (rc *rawClient) barrier(id int) {
	rc.t.Helper()
	rc.send(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":{%s}}`, id, modernMeta)
	if m := rc.recv(); fmt.Sprint(m.ID) != fmt.Sprint(id) || m.Result == nil {
		rc.t.Fatalf("got %s, want the response to request %d", m, id)
	}
}

func unquote(id string) string {
	var v any
	if err := json.Unmarshal([]byte(id), &v); err != nil {
		panic(err)
	}
	return fmt.Sprint(v)
}

// onlySession returns acme's one session.
func onlySession(t *testing.T, s *Server) *session {
	t.Helper()
	var sess *session
	testwait.For(t, 10*time.Second, "one session", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := 0
		for c := range s.groups["acme"].sessions {
			sess, n = c, n+1
		}
		return n == 1
	})
	return sess
}

// state is a session's open streams and in-flight requests, sorted.
func (c *session) state() (streams, inflight []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.streams {
		streams = append(streams, k)
	}
	for k := range c.inflight {
		inflight = append(inflight, k)
	}
	slices.Sort(streams)
	slices.Sort(inflight)
	return streams, inflight
}

// waitStreams waits until the session's open streams are want (idKeys).
func waitStreams(t *testing.T, sess *session, want ...string) {
	t.Helper()
	testwait.For(t, 10*time.Second, fmt.Sprintf("streams %v", want), func() bool {
		got, _ := sess.state()
		return slices.Equal(got, want)
	})
}

// TestListenStreamsPerRequest: two subscriptions/listen streams on one
// connection (as the TypeScript SDK opens: its auto-subscribe and an explicit
// listen) each get list_changed tagged with their own id; cancelling one
// ends only that one, without a response, and the other keeps receiving.
func TestListenStreamsPerRequest(t *testing.T) {
	s, _ := newStubServer(t)
	rc := dialStub(t, s)
	rc.listen(`7`)
	rc.listen(`"b"`)
	sess := onlySession(t, s)
	waitStreams(t, sess, "int64:7", "string:b")

	setOverrides(t, s, "!like")
	var tags []string
	for range 2 {
		m := rc.recv()
		if m.Method != mcp.MethodNotificationToolsListChanged {
			t.Fatalf("got %s, want list_changed", m)
		}
		tags = append(tags, m.subscription())
	}
	if slices.Sort(tags); !slices.Equal(tags, []string{"7", "b"}) {
		t.Fatalf("list_changed tagged %v, want one per stream: [7 b]", tags)
	}
	rc.barrier(100)

	rc.cancel(`7`)
	waitStreams(t, sess, "string:b")
	testwait.For(t, 10*time.Second, "the cancelled stream's worker done", func() bool {
		_, inflight := sess.state()
		return slices.Equal(inflight, []string{"string:b"})
	})
	setOverrides(t, s, "!like", "!pin_message")
	if m := rc.recv(); m.Method != mcp.MethodNotificationToolsListChanged || m.subscription() != "b" {
		t.Fatalf("after stream 7 ended: got %s, want list_changed on stream b", m)
	}
	rc.barrier(101) // and no response to 7, no list_changed on it

	// A change that leaves the listing alone sends nothing. (The barrier
	// alone would miss a list_changed written after its response: the
	// count of what Sync decided is exact.)
	setOverrides(t, s, "!like", "!pin_message", "send(jid=web:*)")
	if n := sess.listChanged.Load(); n != 3 {
		t.Fatalf("%d list_changed sent, want 3: two for the first change, one for the second", n)
	}
	rc.barrier(102)

	// With no stream left, a 2026-07-28 session gets nothing.
	rc.cancel(`"b"`)
	waitStreams(t, sess)
	setOverrides(t, s)
	if n := sess.listChanged.Load(); n != 3 {
		t.Fatalf("%d list_changed sent, want still 3", n)
	}
	rc.barrier(103)
}

// TestListenStreamsIndependentFilters: a stream that opted in to nothing
// the server offers closes at once and does not silence another stream.
func TestListenStreamsIndependentFilters(t *testing.T) {
	s, _ := newStubServer(t)
	rc := dialStub(t, s)
	rc.listen(`1`)
	rc.send(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{%s,"notifications":{"promptsListChanged":true}}}`, modernMeta)
	// Its acknowledgement (written by the notification writer) and its
	// result (by the worker) may come in either order.
	var acked, closed bool
	for range 2 {
		switch m := rc.recv(); {
		case m.Method == mcp.MethodNotificationSubscriptionsAcknowledged && m.subscription() == "2":
			acked = true
		case fmt.Sprint(m.ID) == "2" && m.Result != nil:
			closed = true
		default:
			t.Fatalf("got %s, want stream 2 acknowledged and closed at once", m)
		}
	}
	if !acked || !closed {
		t.Fatalf("stream 2: acknowledged %v, closed %v", acked, closed)
	}
	sess := onlySession(t, s)
	waitStreams(t, sess, "int64:1")
	setOverrides(t, s, "!like")
	if m := rc.recv(); m.Method != mcp.MethodNotificationToolsListChanged || m.subscription() != "1" {
		t.Fatalf("got %s, want list_changed on stream 1", m)
	}
	rc.barrier(3)
}

// TestCancelledRequestGetsNoResponse: a request the client cancels with
// notifications/cancelled is not answered, though its handler returns; the
// connection goes on.
func TestCancelledRequestGetsNoResponse(t *testing.T) {
	s, b := newStubServer(t)
	rc := dialStub(t, s)
	rc.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{%s,"name":"refresh_groups","arguments":{}}}`, modernMeta)
	select {
	case <-b.reloading:
	case <-time.After(10 * time.Second):
		t.Fatal("refresh_groups never reached the backend")
	}
	sess := onlySession(t, s)
	rc.cancel(`5`)
	testwait.For(t, 10*time.Second, "the cancelled call's worker done", func() bool {
		_, inflight := sess.state()
		return len(inflight) == 0
	})
	rc.barrier(6)
	// An uncancelled call is answered, and nothing else comes, late or not:
	// the server writes all it will before it closes the connection.
	rc.send(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{%s}}`, modernMeta)
	if rest := rc.rest(); len(rest) != 1 || fmt.Sprint(rest[0].ID) != "7" || rest[0].Result == nil {
		t.Fatalf("after the barrier, want only the response to tools/list 7, got %v", rest)
	}
}

// TestListenCyclesNoLeak: streams opened and closed, by cancellation or by
// the connection ending, leave no goroutine and no session state behind.
func TestListenCyclesNoLeak(t *testing.T) {
	s, _ := newStubServer(t)
	base := runtime.NumGoroutine() // the server's own are running: New and Sync start them
	rc := dialStub(t, s)
	rc.barrier(1)
	sess := onlySession(t, s)
	for i := range 20 {
		a, b := fmt.Sprintf(`"a%d"`, i), fmt.Sprintf(`"b%d"`, i)
		rc.listen(a)
		rc.listen(b)
		rc.cancel(b)
		rc.cancel(a)
		waitStreams(t, sess)
	}
	testwait.For(t, 10*time.Second, "no request in flight", func() bool {
		_, inflight := sess.state()
		return len(inflight) == 0
	})
	setOverrides(t, s, "!like")
	if n := sess.listChanged.Load(); n != 0 {
		t.Fatalf("%d list_changed sent, want none: every stream ended", n)
	}
	rc.barrier(2)
	rc.c.Close()
	for i := range 20 {
		rc := dialStub(t, s)
		rc.listen(fmt.Sprint(i))
		rc.c.Close()
	}
	testwait.For(t, 10*time.Second, "every session closed", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.groups["acme"].sessions) == 0
	})
	if !testwait.Until(10*time.Second, func() bool { return runtime.NumGoroutine() <= base+2 }) { // slack for the runtime's own
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
	}
}
