package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/internal/testmcp"
	"switchboard/internal/testmetrics"
	"switchboard/internal/testwait"
	"switchboard/ops"
)

// scrape reads the gateway's /metrics once.
func scrape(t testing.TB, g *Gateway) string {
	t.Helper()
	rec := httptest.NewRecorder()
	g.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// mcpConn is an MCP session on a group's socket, as an agent has.
type mcpConn struct {
	t testing.TB
	c *testmcp.Conn
}

func dialGroup(t testing.TB, h *harness, folder groups.Folder) *mcpConn {
	t.Helper()
	sock := filepath.Join(h.dir, "ipc", string(folder), "mcp.sock")
	var c *testmcp.Conn
	testwait.For(t, 10*time.Second, "the socket of "+string(folder), func() bool {
		var err error
		c, err = testmcp.Dial(sock, testmcp.Options{Client: "metrics-test"})
		return err == nil
	})
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(); err != nil {
		t.Fatal(err)
	}
	return &mcpConn{t: t, c: c}
}

// rpc sends a request and returns its result, skipping notifications.
func (m *mcpConn) rpc(method, params string) json.RawMessage {
	m.t.Helper()
	res, err := m.c.Request(method, params)
	if err != nil {
		m.t.Fatal(err)
	}
	return res
}

// call runs a tool and reports whether the result is an error result.
func (m *mcpConn) call(tool, args string) (isError bool) {
	m.t.Helper()
	var res struct {
		IsError bool `json:"isError"`
	}
	json.Unmarshal(m.rpc("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)), &res)
	return res.IsError
}

// The metrics move as a message goes through the pipeline (inbound, turn,
// duration, delivery) and as an agent calls tools (allowed, refused,
// error); no chat id or text reaches a label.
func TestMetricsMoveThroughThePipeline(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	h.g.host("test").SetState(adapters.StateConnected, nil) // the fake adapter reports nothing
	before := scrape(t, h.g)
	h.post(testChat, "m1", "secret words")
	h.waitSent(testChat, 1)
	var after string
	testwait.For(t, 10*time.Second, "the delivery counted", func() bool {
		after = scrape(t, h.g)
		return testmetrics.Value(t, after, `switchboard_outbox_deliveries_total{adapter="test",result="sent"}`) == 1
	})
	for _, series := range []string{
		`switchboard_inbound_events_total{kind="message",platform="test"}`,
		`switchboard_turns_total{outcome="succeeded",trigger="message"}`,
		`switchboard_turn_duration_seconds_count{trigger="message"}`,
		`switchboard_commit_messages_count`, // one message, one transaction
		`switchboard_commit_messages_sum`,
	} {
		if b, a := testmetrics.Value(t, before, series), testmetrics.Value(t, after, series); a != b+1 {
			t.Errorf("%s went from %v to %v; want +1", series, b, a)
		}
	}
	if testmetrics.Value(t, after, `switchboard_adapter_state{adapter="test",state="connected"}`) != 1 {
		t.Errorf("adapter state not reported:\n%s", after)
	}

	mc := dialGroup(t, h, "main")
	if mc.call("list_grants", `{}`) {
		t.Error("list_grants failed")
	}
	if !mc.call("send", `{"chat_jid":"web:not-mine","text":"hi"}`) { // a chat main does not own
		t.Error("send to a chat main does not own was not refused")
	}
	if !mc.call("delete_route", `{"id":987654}`) { // no such route
		t.Error("delete_route of a missing route did not fail")
	}
	got := scrape(t, h.g)
	for series, want := range map[string]float64{
		`switchboard_mcp_calls_total{outcome="allowed",tool="list_grants"}`: 1,
		`switchboard_mcp_calls_total{outcome="refused",tool="send"}`:        1,
	} {
		if v := testmetrics.Value(t, got, series); v != want {
			t.Errorf("%s = %v; want %v", series, v, want)
		}
	}
	if e, r := testmetrics.Value(t, got, `switchboard_mcp_calls_total{outcome="error",tool="delete_route"}`),
		testmetrics.Value(t, got, `switchboard_mcp_calls_total{outcome="refused",tool="delete_route"}`); e+r != 1 {
		t.Errorf("delete_route of a missing route counted %v errors and %v refusals; want one of them", e, r)
	}
	for _, leak := range []string{testChat, "web:not-mine", "secret words"} {
		if strings.Contains(got, leak) {
			t.Errorf("%q leaked into the metrics", leak)
		}
	}
}

// downAdapter connects, then reports that it lost its platform and backs off.
type downAdapter struct {
	down chan struct{}
}

func (d *downAdapter) Name() string { return "flaky" }

func (d *downAdapter) Run(ctx context.Context, host adapters.Host) error {
	host.SetState(adapters.StateConnected, nil)
	<-d.down
	host.SetState(adapters.StateBackingOff, errors.New("connection reset by platform"))
	<-ctx.Done()
	return nil
}

func (d *downAdapter) Send(context.Context, adapters.Outbound) (adapters.MessageID, error) {
	return "", errors.New("not connected")
}

// Ready while every adapter is connected and the store takes writes; an
// adapter backing off makes it not ready, named with its error, and the
// state gauge follows.
func TestNotReadyWhileAnAdapterIsDown(t *testing.T) {
	d := &downAdapter{down: make(chan struct{})}
	h := newHarness(t, harnessConfig{agent: []string{"true"}, modify: func(o *Options) {
		o.Adapters = append(o.Adapters, d)
	}})
	h.g.host("test").SetState(adapters.StateConnected, nil) // the fake adapter reports nothing
	testwait.For(t, 10*time.Second, "ready", func() bool { return len(h.g.NotReady(context.Background())) == 0 })
	close(d.down)
	var not []string
	testwait.For(t, 10*time.Second, "not ready", func() bool {
		not = h.g.NotReady(context.Background())
		return len(not) > 0
	})
	if len(not) != 1 || not[0] != "adapter flaky: backing_off: connection reset by platform" {
		t.Errorf("not ready: %q", not)
	}
	m := scrape(t, h.g)
	if testmetrics.Value(t, m, `switchboard_adapter_state{adapter="flaky",state="backing_off"}`) != 1 ||
		testmetrics.Value(t, m, `switchboard_adapter_state{adapter="flaky",state="connected"}`) != 0 {
		t.Errorf("state gauge does not show flaky backing off:\n%s", m)
	}
}

// A platform with no adapter never becomes a metric label: an MCP send to
// it is refused before anything is queued, naming the platform, and rows
// queued anyway (the CLI queues without the gateway) fail under the label
// "other", however many made-up platforms they name.
func TestUnknownPlatformsShareOneLabel(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: []string{"true"}})
	mc := dialGroup(t, h, "root") // tier 0: no ownership check stands in the way
	var res struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	json.Unmarshal(mc.rpc("tools/call", `{"name":"send","arguments":{"chat_jid":"zz1:x","text":"hi"}}`), &res)
	if !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "zz1") {
		t.Fatalf("send to a platform without an adapter: %+v; want an error naming zz1", res)
	}
	if st, err := h.st.Status(context.Background()); err != nil || st.OutboxPending+st.OutboxFailed != 0 {
		t.Fatalf("the refused send left outbox rows: %+v %v", st, err)
	}
	for i := range 20 {
		if _, err := ops.QueueSend(context.Background(), h.st, ops.SendRequest{Chat: adapters.JID(fmt.Sprintf("zz%d:x", i)), Text: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	h.g.outbox.wake()
	var got string
	testwait.For(t, 10*time.Second, "the 20 rows failed", func() bool {
		got = scrape(t, h.g)
		return testmetrics.Value(t, got, `switchboard_outbox_deliveries_total{adapter="other",result="failed"}`) == 20
	})
	if strings.Contains(got, `adapter="zz`) {
		t.Errorf("a made-up platform became a label:\n%s", got)
	}
}

// fencedRunner is a Runner that has refused stale folder uploads, as
// remote.Runner counts them.
type fencedRunner struct {
	agent.Local
	stale int64
}

func (f fencedRunner) StaleFolderUploads() int64 { return f.stale }

// A runner that fences stale folder uploads has its refusals on /metrics.
func TestMetricsStaleFolderUploads(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: []string{"true"}, noStart: true,
		modify: func(o *Options) { o.Runner = fencedRunner{stale: 3} }})
	if got := testmetrics.Value(t, scrape(t, h.g), "switchboard_stale_folder_uploads_total"); got != 3 {
		t.Errorf("switchboard_stale_folder_uploads_total %v; want 3", got)
	}
}
