package ipc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testwait"
	"switchboard/store"
)

var update = flag.Bool("update", false, "rewrite the golden tool schemas in testdata/golden")

func TestMain(m *testing.M) {
	// mcp-go's client transport logs a closed connection through the
	// default logger; the tests close connections on purpose.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	os.Exit(m.Run())
}

// catalogTools is every tool the server implements: what tier 0 lists.
func catalogTools(t *testing.T, h *harness) []string {
	t.Helper()
	return listed(t, h.connect(t, "root", true))
}

func TestListingPerTier(t *testing.T) {
	h := newHarness(t, nil)
	all := catalogTools(t, h)
	if len(all) < 29 {
		t.Fatalf("operator lists %d tools, want the whole catalog: %v", len(all), all)
	}
	if want := toolCatalog(t).Tools(); !slices.Equal(slices.Sorted(slices.Values(all)), slices.Sorted(slices.Values(want))) {
		t.Errorf("operator lists\n%v\nwant the whole grants catalog\n%v", all, want)
	}
	for _, g := range tierGroups {
		for _, legacy := range []bool{true, false} {
			got := listed(t, h.connect(t, g.folder, legacy))
			want := toolCatalog(t).ForGroup(g.tier, nil).ListedTools(all)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("tier %d (%s, legacy=%v) lists\n%v\nwant\n%v", g.tier, g.folder, legacy, got, want)
			}
		}
	}
	// Spot checks against CONTRACT §7.
	tier3 := listed(t, h.connect(t, "acme/eng/ops", true))
	if !slices.Equal(tier3, []string{"approve_tool", "edit", "like", "reply", "send_file"}) { // §15: approve_tool while agent_tools is set
		t.Errorf("tier 3 lists %v", tier3)
	}
	tier2 := listed(t, h.connect(t, "acme/eng", true))
	for _, hidden := range []string{"add_route", "pin_message", "register_group", "inject_message", "reset_session"} {
		if slices.Contains(tier2, hidden) {
			t.Errorf("tier 2 lists %s", hidden)
		}
	}
}

// TestGoldenToolSchemas pins each tool's schema as a tier sees it. Run
// `go test ./ipc -update` after changing a tool on purpose.
func TestGoldenToolSchemas(t *testing.T) {
	h := newHarness(t, nil)
	for _, g := range tierGroups {
		res, err := h.connect(t, g.folder, true).ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res.Tools); err != nil {
			t.Fatal(err)
		}
		got := buf.Bytes()
		path := filepath.Join("testdata", "golden", fmt.Sprintf("tier%d.json", g.tier))
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./ipc -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("tier %d tool schemas differ from %s; if the change is intended, run go test ./ipc -update\n%s", g.tier, path, firstDiff(got, want))
		}
	}
}

func firstDiff(got, want []byte) string {
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := range max(len(gl), len(wl)) {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, g, w)
		}
	}
	return ""
}

// inScopeArgs are arguments a group may pass to each tool: its own chat, its
// own folder, a message that exists. Some calls still fail after the
// authorization (no file, no subgroup); none may be refused.
func inScopeArgs(tool, folder, chat string) map[string]any {
	switch tool {
	case "send", "inject_message":
		return map[string]any{"chat_jid": chat, "text": "hello"}
	case "reply":
		return map[string]any{"chat_jid": chat, "text": "hello", "reply_to": "m1"}
	case "send_file":
		return map[string]any{"chat_jid": chat, "path": "out.txt", "caption": "a file"}
	case "edit":
		return map[string]any{"chat_jid": chat, "message_id": "m1", "text": "edited"}
	case "delete", "pin_message", "unpin_message":
		return map[string]any{"chat_jid": chat, "message_id": "m1"}
	case "like":
		return map[string]any{"chat_jid": chat, "message_id": "m1", "reaction": "👍"}
	case "inspect_messages", "fetch_history", "explain_route", "engage", "disengage":
		return map[string]any{"chat_jid": chat}
	case "get_thread":
		return map[string]any{"chat_jid": chat, "topic": "t1"}
	case "find_messages":
		return map[string]any{"query": "hello"}
	case "add_route":
		return map[string]any{"match": map[string]any{"chat_jid": chat, "sender": "web:user/bot"}, "target": folder, "mode": "observe"}
	case "delete_route":
		return map[string]any{"id": 99999}
	case "set_routes":
		return map[string]any{"routes": []any{map[string]any{"match": map[string]any{"chat_jid": chat}, "target": folder}}}
	case "register_group":
		return map[string]any{"folder": "sub"}
	case "delegate_group":
		return map[string]any{"folder": folder + "/sub", "prompt": "do it", "chat_jid": chat}
	case "escalate_group":
		return map[string]any{"prompt": "help", "chat_jid": chat}
	case "set_mid_turn":
		return map[string]any{"folder": folder, "mode": "steer"}
	case "set_work":
		return map[string]any{"content": "notes"}
	case "schedule_task":
		return map[string]any{"chat_jid": chat, "prompt": "post the digest", "schedule": "@daily", "missed": "once"}
	case "pause_task", "resume_task", "cancel_task":
		return map[string]any{"id": 99999}
	case "inspect_tasks":
		return map[string]any{"limit": 3}
	case "preview_schedule":
		return map[string]any{"schedule": "0 9 * * 1-5", "timezone": "Europe/Berlin", "count": 2}
	}
	return map[string]any{}
}

// TestListedIffCallable is the property of CONTRACT §7 for the tier
// defaults: for every tier and every tool, the tool is listed exactly when a
// call with in-scope params is not refused; a hidden tool called by name is
// refused with isError.
func TestListedIffCallable(t *testing.T) {
	type testCase struct {
		name      string
		folder    groups.Folder
		tier      int
		chat      string
		overrides []string
	}
	var cases []testCase
	for _, g := range tierGroups {
		cases = append(cases, testCase{fmt.Sprintf("tier%d", g.tier), g.folder, g.tier, g.chat, nil})
	}
	// Unconditional overrides keep the property: hidden ⇔ refused.
	cases = append(cases,
		testCase{"tier1-overrides", "acme", 1, "web:acme", []string{"!like", "!*_route", "explain_route"}},
		testCase{"tier3-overrides", "acme/eng/ops", 3, "web:ops", []string{"send", "find_messages", "!edit"}})
	for _, g := range cases {
		t.Run(g.name, func(t *testing.T) {
			h := newHarness(t, func(ctx context.Context, st *store.Store) error {
				if err := standardSetup(ctx, st); err != nil {
					return err
				}
				return st.SetGrantOverrides(ctx, g.folder, g.overrides)
			})
			all := catalogTools(t, h)
			h.deliver(t, g.chat, "m1", "hello there")
			c := h.connect(t, g.folder, false)
			shown := listed(t, c)
			if want := toolCatalog(t).ForGroup(g.tier, g.overrides).ListedTools(all); len(shown) != len(want) {
				t.Errorf("lists %v, want %v", shown, want)
			}
			for _, tool := range all {
				r := call(t, c, tool, inScopeArgs(tool, string(g.folder), g.chat))
				t.Logf("%s: %s", tool, r.Text)
				isListed := slices.Contains(shown, tool)
				if isListed == r.refused() {
					t.Errorf("tier %d %s: listed=%v but call refused=%v: %s", g.tier, tool, isListed, r.refused(), r.Text)
				}
				if !isListed && !r.IsError {
					t.Errorf("tier %d %s: hidden tool call succeeded", g.tier, tool)
				}
			}
		})
	}
}

// TestOutOfScopeChatRefused: a listed tool on a chat owned outside the
// caller's subtree is refused, and an override that narrows a tool by param
// keeps it listed but refuses the calls it denies.
func TestOutOfScopeChatRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.deliver(t, "web:root", "r1", "operator chat")
	for _, g := range tierGroups[1:] {
		c := h.connect(t, g.folder, true)
		for _, tool := range listed(t, c) {
			args := inScopeArgs(tool, string(g.folder), "web:root")
			if _, chatTool := args["chat_jid"]; !chatTool {
				continue
			}
			if r := call(t, c, tool, args); !r.refused() || !bytes.Contains([]byte(r.Text), []byte("belongs to group root")) {
				t.Errorf("tier %d %s on web:root: %+v", g.tier, tool, r)
			}
		}
	}
	// An unowned chat is refused to everyone but the operator.
	c := h.connect(t, "acme", true)
	if r := call(t, c, "send", map[string]any{"chat_jid": "web:nobody", "text": "x"}); !r.refused() {
		t.Errorf("send to an unowned chat: %+v", r)
	}
	if r := call(t, h.connect(t, "root", true), "inspect_messages", map[string]any{"chat_jid": "web:nobody"}); r.IsError {
		t.Errorf("operator on an unowned chat: %+v", r)
	}
	// A narrowing override: send stays listed, sends to web:acme are refused.
	if err := h.st.SetGrantOverrides(context.Background(), "acme", []string{"!send(jid=web:acme)"}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "override in effect", func() bool {
		return call(t, c, "send", map[string]any{"chat_jid": "web:acme", "text": "x"}).refused()
	})
	if !slices.Contains(listed(t, c), "send") {
		t.Error("a param-narrowed deny hid send")
	}
	if r := call(t, c, "send", map[string]any{"chat_jid": "full:acme", "text": "x"}); r.IsError {
		t.Errorf("send to a chat the override does not deny: %+v", r)
	}
}

// deliver stores an inbound message as an adapter would.
func (h *harness) deliver(t testing.TB, chat, id, text string) {
	t.Helper()
	_, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: adapters.JID(chat), ID: adapters.MessageID(id),
		Sender: "web:user/ann", SenderName: "Ann", Text: text, Verb: adapters.VerbMention})
	if err != nil {
		t.Fatal(err)
	}
}

// notes collects the notifications a client receives.
func notes(c *client.Client) <-chan mcp.JSONRPCNotification {
	ch := make(chan mcp.JSONRPCNotification, 64)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		select {
		case ch <- n:
		default:
		}
	})
	return ch
}

func waitNote(ch <-chan mcp.JSONRPCNotification, method string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case n := <-ch:
			if n.Method == method {
				return true
			}
		case <-deadline:
			return false
		}
	}
}

// TestListChanged: a grant change reaches the affected group's sessions, in
// both protocol generations (2026-07-28 through a subscriptions/listen
// stream that asked for it), and they then list the changed tools. That no
// other session is notified, nor any for a change that leaves the listing
// alone, is checked exactly against Sync in TestListChangedReachesOnlyAffected.
func TestListChanged(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			affected := h.connect(t, "acme", legacy)
			affected2 := h.connect(t, "acme", legacy)
			chA, chA2 := notes(affected), notes(affected2)
			if !legacy {
				if affected.ProtocolVersion() != mcp.ProtocolVersion20260728 {
					t.Fatalf("client negotiated %s, want the stateless protocol", affected.ProtocolVersion())
				}
				listenToolsChanged(t, affected, chA)
				listenToolsChanged(t, affected2, chA2)
			}
			before := listed(t, affected)
			if err := h.st.SetGrantOverrides(ctx, "acme", []string{"!like", "!pin_message"}); err != nil {
				t.Fatal(err)
			}
			for i, ch := range []<-chan mcp.JSONRPCNotification{chA, chA2} {
				if !waitNote(ch, mcp.MethodNotificationToolsListChanged, 10*time.Second) {
					t.Fatalf("session %d of the affected group got no list_changed", i)
				}
			}
			after := listed(t, affected)
			if len(after) != len(before)-2 || slices.Contains(after, "like") {
				t.Errorf("after the change acme lists %v", after)
			}
		})
	}
}

// TestGroupLifecycleSockets: a group added while the gateway runs gets a
// socket (mode 0600, directory 0700) within a poll; a removed group loses
// its socket file and its open sessions.
func TestGroupLifecycleSockets(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	if err := h.st.AddGroup(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	h.waitSocket(t, "beta")
	fi, err := os.Stat(h.sock("beta"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want socket 0600", fi.Mode())
	}
	di, err := os.Stat(filepath.Dir(h.sock("beta")))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode %v, want 0700", di.Mode().Perm())
	}
	c := h.connect(t, "beta", true)
	if r := call(t, c, "list_grants", nil); r.IsError {
		t.Fatal(r.Text)
	}
	if _, err := h.st.RemoveGroup(ctx, "beta"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "socket removed", func() bool {
		_, err := os.Stat(h.sock("beta"))
		return os.IsNotExist(err)
	})
	testwait.For(t, 10*time.Second, "session closed", func() bool {
		_, err := tryCall(c, "list_grants", nil)
		return err != nil
	})
	// Shutdown removes every socket.
	h.stop()
	for _, g := range tierGroups {
		if _, err := os.Stat(h.sock(g.folder)); !os.IsNotExist(err) {
			t.Errorf("socket of %s left after shutdown: %v", g.folder, err)
		}
	}
}

// TestStaleSocketReplaced: a socket file left by a crashed gateway does not
// stop the next one.
func TestStaleSocketReplaced(t *testing.T) {
	h := newHarness(t, nil)
	path := h.sock("acme")
	h.waitSocket(t, "acme")
	h.stop()
	// Simulate the crash: a socket file nobody listens on.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	makeStaleSocket(t, path)
	h2 := restart(t, h)
	h2.waitSocket(t, "acme")
	if r := call(t, h2.connect(t, "acme", true), "list_grants", nil); r.IsError {
		t.Fatal(r.Text)
	}
}

// TestSocketPathTooLongKeepsGateway: a data_dir too deep for unix socket
// paths costs the groups their tools, with an error that says what to do,
// but the gateway runs.
func TestSocketPathTooLongKeepsGateway(t *testing.T) {
	base := shortTempDir(t)
	deep := filepath.Join(base, strings.Repeat("d", 50), strings.Repeat("e", 50))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(deep, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := standardSetup(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	h := start(t, deep, st, []string{"true"})
	testwait.For(t, 10*time.Second, "socket error logged", func() bool {
		return strings.Contains(h.logs.String(), "use a shorter data_dir")
	})
	for _, want := range []string{"group acme/eng/ops", "mcp socket unavailable"} {
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("log does not mention %q:\n%s", want, h.logs.String())
		}
	}
	h.deliver(t, "web:acme", "m1", "still routed")
	waitTurn(t, h.st, "acme", store.TriggerMessage)
	select {
	case err := <-h.done:
		t.Fatalf("gateway stopped: %v", err)
	default:
	}
}

// listenToolsChanged opens c's 2026-07-28 subscriptions/listen stream for
// tools list_changed (ch is c's notifications) and waits for its
// acknowledgement; the stream ends with the test.
func listenToolsChanged(t *testing.T, c *client.Client, ch <-chan mcp.JSONRPCNotification) {
	t.Helper()
	stop, err := c.ListenAsync(context.Background(), mcp.SubscriptionFilter{ToolsListChanged: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if !waitNote(ch, mcp.MethodNotificationSubscriptionsAcknowledged, 10*time.Second) {
		t.Fatal("no subscriptions/acknowledged")
	}
}
