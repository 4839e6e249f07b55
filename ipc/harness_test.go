package ipc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/gateway"
	"switchboard/groups"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// The tests run a real gateway (store in a temp dir, fake adapters) and talk
// to its sockets with mcp-go's client.

// Groups of the standard setup, one per tier, each owning one web chat.
var tierGroups = []struct {
	folder groups.Folder
	tier   int
	chat   string
}{
	{"root", 0, "web:root"},
	{"acme", 1, "web:acme"},
	{"acme/eng", 2, "web:eng"},
	{"acme/eng/ops", 3, "web:ops"},
}

type harness struct {
	dir string
	st  *store.Store
	g   *gateway.Gateway
	web *fakeAdapter // "web": Send only
	all *fakeAdapter // "full": every capability

	cancel context.CancelFunc
	done   chan error
	logs   *testlog.Buffer // the gateway's warnings and errors
	debug  *testlog.Buffer // every log line, debug included
}

type setupFunc func(ctx context.Context, st *store.Store) error

// shortTempDir is a temp dir with a short path: unix socket paths are
// limited to ~108 bytes and test names make t.TempDir long.
func shortTempDir(t testing.TB) string {
	dir, err := os.MkdirTemp("", "sb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// standardSetup creates the four tier groups, each routed its chat, and a
// "full:" chat owned by acme.
func standardSetup(ctx context.Context, st *store.Store) error {
	for _, g := range tierGroups {
		if err := st.AddGroup(ctx, g.folder); err != nil {
			return err
		}
		if _, err := st.AddRoute(ctx, routing.Route{Match: map[string]string{"chat_jid": g.chat}, Target: g.folder}); err != nil {
			return err
		}
	}
	_, err := st.AddRoute(ctx, routing.Route{Match: map[string]string{"platform": "full"}, Target: "acme"})
	return err
}

func newHarness(t testing.TB, setup setupFunc) *harness {
	t.Helper()
	return newHarnessAgent(t, setup, []string{"true"})
}

// newHarnessAgent runs the gateway with agent as the agent command.
func newHarnessAgent(t testing.TB, setup setupFunc, agent []string) *harness {
	t.Helper()
	dir := shortTempDir(t)
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	if setup == nil {
		setup = standardSetup
	}
	if err := setup(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return start(t, dir, st, agent)
}

// restart runs a new gateway on a stopped harness's data directory.
func restart(t testing.TB, old *harness) *harness {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(old.dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	return start(t, old.dir, st, []string{"true"})
}

func start(t testing.TB, dir string, st *store.Store, argv []string) *harness {
	t.Helper()
	// The MCP HTTP endpoint on a free loopback port, tokens for turns.
	return startMCP(t, dir, st, argv, gateway.MCPHTTP{Listen: "127.0.0.1:0", PassToAgents: true})
}

func startMCP(t testing.TB, dir string, st *store.Store, argv []string, mcpHTTP gateway.MCPHTTP) *harness {
	t.Helper()
	h := &harness{dir: dir, st: st, web: newFake("web", false), all: newFake("full", true), done: make(chan error, 1), logs: &testlog.Buffer{}, debug: &testlog.Buffer{}}
	g, err := gateway.New(gateway.Options{
		Store: st, Adapters: []adapters.Adapter{h.web, fullAdapter{h.all}}, DataDir: dir, Operator: "root", Exe: "switchboard",
		Agent:        agent.Spec{Command: argv, Output: "text", Timeout: 20 * time.Second},
		EngageTTL:    time.Minute,
		PollInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewMultiHandler(
			slog.NewTextHandler(testWriter{t, h.logs}, &slog.HandlerOptions{Level: slog.LevelWarn}),
			slog.NewTextHandler(h.debug, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		DrainTimeout: 5 * time.Second,
		MCPHTTP:      mcpHTTP,
		// approve_tool is offered, so the listing and golden tests see it.
		// list_* names no Claude Code tool, but switchboard's list_routes
		// (TestApproveToolNamingSwitchboardsTool).
		Approvals: gateway.ApprovalOptions{AgentTools: []string{"Bash", "list_*"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.g = g
	runCtx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- g.Run(runCtx) }()
	t.Cleanup(h.stop)
	return h
}

// makeStaleSocket leaves a socket file at path that nobody listens on, as
// a crashed process does.
func makeStaleSocket(t testing.TB, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

// stop shuts the gateway down (idempotent).
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		fmt.Fprintln(os.Stderr, "gateway run:", err)
	}
	h.st.Close()
}

func (h *harness) sock(folder groups.Folder) string {
	return groups.Layout{DataDir: h.dir}.SocketPath(folder)
}

// waitSocket waits until folder's socket accepts connections.
func (h *harness) waitSocket(t testing.TB, folder groups.Folder) {
	t.Helper()
	testwait.For(t, 10*time.Second, "socket of "+string(folder), func() bool {
		c, err := net.Dial("unix", h.sock(folder))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// waitStarted waits until the gateway has started everything it runs: the
// poll loop, started last, has written its first heartbeat, and every
// adapter is connected.
func (h *harness) waitStarted(t testing.TB) {
	t.Helper()
	testwait.For(t, 10*time.Second, "the gateway started", func() bool {
		rs, err := ops.ReadRuntimeStatus(context.Background(), h.st)
		return err == nil && rs.Heartbeat != nil && len(h.g.NotReady(context.Background())) == 0
	})
}

// connect opens an MCP client session as folder; legacy pins the
// initialize-handshake protocol generation.
func (h *harness) connect(t testing.TB, folder groups.Folder, legacy bool) *client.Client {
	t.Helper()
	h.waitSocket(t, folder)
	c, err := dialMCP(h.sock(folder), legacy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func dialMCP(path string, legacy bool) (*client.Client, error) {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	var opts []client.ClientOption
	if legacy {
		opts = append(opts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	c := client.NewClient(transport.NewIO(conn, conn, nil), opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "switchboard-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// listed returns the names of the tools the session lists.
func listed(t testing.TB, c *client.Client) []string {
	t.Helper()
	res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// callResult is a tool result: its text and whether it is an error.
type callResult struct {
	Text    string
	IsError bool
}

func (r callResult) refused() bool { return r.IsError && strings.HasPrefix(r.Text, "refused: ") }

func (r callResult) decode(t testing.TB, v any) {
	t.Helper()
	if r.IsError {
		t.Fatalf("tool error: %s", r.Text)
	}
	if err := json.Unmarshal([]byte(r.Text), v); err != nil {
		t.Fatalf("decode %q: %v", r.Text, err)
	}
}

func call(t testing.TB, c *client.Client, tool string, args map[string]any) callResult {
	t.Helper()
	r, err := tryCall(c, tool, args)
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return r
}

func tryCall(c *client.Client, tool string, args any) (callResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return callResult{}, err
	}
	var sb strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return callResult{Text: sb.String(), IsError: res.IsError}, nil
}

// testWriter sends log lines to the test log and keeps them.
type testWriter struct {
	t    testing.TB
	keep *testlog.Buffer
}

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return w.keep.Write(p)
}

// fakeAdapter records what the gateway sends. With caps it implements every
// optional capability.
type fakeAdapter struct {
	name string
	caps bool
	mu   sync.Mutex
	sent []adapters.Outbound
	acts []string
	n    int

	gate    chan struct{} // when set, Send waits for it to close
	entered chan struct{} // Send signals here before it waits
}

func newFake(name string, caps bool) *fakeAdapter { return &fakeAdapter{name: name, caps: caps} }

func (f *fakeAdapter) Name() string { return f.name }

func (f *fakeAdapter) Run(ctx context.Context, host adapters.Host) error {
	host.SetState(adapters.StateConnected, nil)
	<-ctx.Done()
	return nil
}

func (f *fakeAdapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	f.mu.Lock()
	gate, entered := f.gate, f.entered
	f.mu.Unlock()
	if gate != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, m)
	f.n++
	return adapters.MessageID(fmt.Sprintf("%s-out-%d", f.name, f.n)), nil
}

func (f *fakeAdapter) sends() []adapters.Outbound {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

func (f *fakeAdapter) record(s string) error {
	if !f.caps {
		return adapters.Unsupported(f.name, "x")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acts = append(f.acts, s)
	return nil
}

func (f *fakeAdapter) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.acts)
}

// fullAdapter is the fake with every capability, as its own type so that the
// gateway's type assertions see them.
type fullAdapter struct{ *fakeAdapter }

func (f fullAdapter) Edit(_ context.Context, m adapters.MessageRef, text string) error {
	return f.record("edit " + string(m.Chat) + " " + m.ID.String() + " " + text)
}
func (f fullAdapter) Delete(_ context.Context, m adapters.MessageRef) error {
	return f.record("delete " + string(m.Chat) + " " + m.ID.String())
}
func (f fullAdapter) React(_ context.Context, m adapters.MessageRef, reaction string) error {
	return f.record("react " + string(m.Chat) + " " + m.ID.String() + " " + reaction)
}
func (f fullAdapter) Pin(_ context.Context, m adapters.MessageRef) error {
	return f.record("pin " + string(m.Chat) + " " + m.ID.String())
}
func (f fullAdapter) Unpin(_ context.Context, m adapters.MessageRef) error {
	return f.record("unpin " + string(m.Chat) + " " + m.ID.String())
}
func (f fullAdapter) SendFile(_ context.Context, m adapters.Outbound, file adapters.File) (adapters.MessageID, error) {
	where := string(m.Chat)
	if m.Topic != "" {
		where += " topic " + m.Topic
	}
	return "file-1", f.record("file " + where + " " + file.Name + " " + m.Text)
}
func (f fullAdapter) FetchHistory(_ context.Context, chat adapters.JID, _ adapters.HistoryQuery) ([]adapters.Inbound, error) {
	return []adapters.Inbound{{Chat: chat, ID: "p1", Sender: "full:user/1", Text: "from the platform", Time: time.Unix(1, 0)}}, nil
}
