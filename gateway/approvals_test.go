package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/groups"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/store"
)

// buttonsFake is a platform with buttons: it keeps what was posted and
// how it was edited.
type buttonsFake struct {
	mu    sync.Mutex
	posts []adapters.Outbound
	btns  [][]adapters.Button
	edits []string // texts of edits that removed the buttons
	fail  []error  // what the next SendButtons calls answer, one each
	tries int      // SendButtons calls
}

func (f *buttonsFake) Name() string                                   { return "test" }
func (f *buttonsFake) Run(ctx context.Context, _ adapters.Host) error { <-ctx.Done(); return nil }
func (f *buttonsFake) Send(context.Context, adapters.Outbound) (adapters.MessageID, error) {
	return "", nil
}

func (f *buttonsFake) SendButtons(_ context.Context, m adapters.Outbound, b []adapters.Button) (adapters.MessageID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tries++
	if len(f.fail) > 0 {
		err := f.fail[0]
		f.fail = f.fail[1:]
		return "", err
	}
	f.posts, f.btns = append(f.posts, m), append(f.btns, b)
	return adapters.MessageID("m" + string(rune('0'+len(f.posts)))), nil
}

func (f *buttonsFake) EditButtons(_ context.Context, _ adapters.MessageRef, text string, b []adapters.Button) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b == nil {
		f.edits = append(f.edits, text)
	}
	return nil
}

// request waits for the one request posted and returns it and its buttons.
func (f *buttonsFake) request(t *testing.T) (adapters.Outbound, []adapters.Button) {
	t.Helper()
	var buttons []adapters.Button
	testwait.For(t, 10*time.Second, "the request with buttons", func() bool {
		n, b, _ := f.state()
		buttons = b
		return n == 1
	})
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posts[0], buttons
}

func (f *buttonsFake) state() (int, []adapters.Button, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var last []adapters.Button
	if len(f.btns) > 0 {
		last = f.btns[len(f.btns)-1]
	}
	return len(f.posts), last, append([]string(nil), f.edits...)
}

// buttonsApprovals is the approvals of group main, whose approver is
// test:user/ann, on a platform with buttons (fake), while turn t-1 runs in
// testChat.
func buttonsApprovals(t *testing.T) (*approvals, *buttonsFake, *activeTurns) {
	t.Helper()
	st := openTestStore(t, "main")
	if err := st.SetApprovers(context.Background(), "main", []string{"test:user/ann"}); err != nil {
		t.Fatal(err)
	}
	active := &activeTurns{}
	active.started("t-1", messageBatch("main", testChat, "test:user/ann"))
	fake := &buttonsFake{}
	send := func(context.Context, ops.SendRequest) (store.OutboxItem, error) { return store.OutboxItem{}, nil }
	return newApprovals(st, adapterSet{"test": fake}, active, send, ApprovalOptions{Timeout: time.Minute}, prometheus.NewRegistry(), discard), fake, active
}

// TestApprovalButtons: on a platform with buttons the request carries the
// three buttons and no secret; a non-approver's press changes nothing; an
// approver's decides, is shown on the request (buttons removed) and a
// second press only says who decided; a request whose turn ends expires,
// and says so.
func TestApprovalButtons(t *testing.T) {
	ctx := context.Background()
	p, fake, active := buttonsApprovals(t)
	press := pressHandler{approvals: p}.press

	res := make(chan ipc.ApprovalResult, 1)
	go func() {
		res <- p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: "send", Args: map[string]any{"chat_jid": testChat, "text": "hi", "api_token": "s3cret"}})
	}()
	post, buttons := fake.request(t)
	text := post.Text
	if strings.Contains(text, "s3cret") || !strings.Contains(text, "api_token: [redacted]") || !strings.Contains(text, "text: hi") {
		t.Errorf("request text:\n%s", text)
	}
	if len(buttons) != 3 || !strings.HasSuffix(buttons[1].Data, ":session") || !strings.HasPrefix(buttons[0].Data, "appr:") {
		t.Fatalf("buttons %+v", buttons)
	}
	session := adapters.Press{Chat: testChat, Sender: "test:user/bob", Data: buttons[1].Data}
	if ans, _ := press(ctx, session); !strings.Contains(ans, "Not yours to approve") {
		t.Errorf("non-approver's press answered %q", ans)
	}
	select {
	case r := <-res:
		t.Fatalf("a non-approver's press decided: %+v", r)
	default:
	}
	session.Sender = "test:user/ann"
	if ans, _ := press(ctx, session); ans != "Allowed for this session by test:user/ann." {
		t.Errorf("approver's press answered %q", ans)
	}
	if r := <-res; !r.Allowed || r.Reason != "allowed for this session by test:user/ann" {
		t.Errorf("result %+v", r)
	}
	deny := adapters.Press{Chat: testChat, Sender: "test:user/ann", Data: buttons[2].Data}
	if ans, _ := press(ctx, deny); ans != "Allowed for this session by test:user/ann." {
		t.Errorf("second press answered %q", ans)
	}
	if _, _, edits := fake.state(); len(edits) != 1 || !strings.Contains(edits[0], "Allowed for this session by test:user/ann") {
		t.Errorf("edits %q", edits)
	}

	// The session grant covers send; like asks, and expires with its turn.
	if r := p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: "send"}); !r.Allowed {
		t.Errorf("send in the same session: %+v", r)
	}
	go func() { res <- p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: "like"}) }()
	testwait.For(t, 10*time.Second, "the second request", func() bool { n, _, _ := fake.state(); return n == 2 })
	active.finished("t-1")
	if r := <-res; r.Allowed || !strings.Contains(r.Reason, "turn ended") {
		t.Errorf("request of an ended turn: %+v", r)
	}
	if _, _, edits := fake.state(); len(edits) != 2 || !strings.Contains(edits[1], "Expired") {
		t.Errorf("edits %q", edits)
	}
}

// TestApprovalRequestRetriedAndStored: a request whose post with buttons
// meets a rate limit and a passing failure is posted once the platform
// takes it (not as text through the outbox), and it is in the chat's
// history as the bot's message, showing the decision once decided; one
// the platform refuses for good goes out as text through the outbox.
func TestApprovalRequestRetriedAndStored(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "main")
	if err := st.SetApprovers(ctx, "main", []string{"test:user/ann"}); err != nil {
		t.Fatal(err)
	}
	active := &activeTurns{}
	active.started("t-1", messageBatch("main", testChat, "test:user/ann"))
	fake := &buttonsFake{fail: []error{&adapters.RetryAfterError{Wait: 50 * time.Millisecond}, errors.New("connection reset by peer")}}
	var mu sync.Mutex
	var texts []string
	send := func(_ context.Context, r ops.SendRequest) (store.OutboxItem, error) {
		mu.Lock()
		defer mu.Unlock()
		texts = append(texts, r.Text)
		return store.OutboxItem{}, nil
	}
	p := newApprovals(st, adapterSet{"test": fake}, active, send, ApprovalOptions{Timeout: time.Minute}, prometheus.NewRegistry(), discard)

	res := make(chan ipc.ApprovalResult, 1)
	go func() {
		res <- p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: "send", Args: map[string]any{"text": "hi"}})
	}()
	_, buttons := fake.request(t)
	fake.mu.Lock()
	tries := fake.tries
	fake.mu.Unlock()
	mu.Lock()
	if tries != 3 || len(texts) != 0 {
		t.Errorf("posted after %d tries, %d text fallbacks; want the third try and none", tries, len(texts))
	}
	mu.Unlock()
	// Stored once SendButtons returned, which the fake's count does not wait for.
	var m store.Message
	testwait.For(t, 10*time.Second, "the request in the chat's history", func() bool {
		var err error
		m, err = st.MessageByID(ctx, testChat, "m1")
		return err == nil
	})
	if !m.FromBot || !strings.Contains(m.Text, "wants to call `send`") {
		t.Fatalf("the request in the chat's history: %+v", m)
	}
	if ans, _ := (pressHandler{approvals: p}).press(ctx, adapters.Press{Chat: testChat, Sender: "test:user/ann", Data: buttons[0].Data}); !strings.Contains(ans, "Allowed once") {
		t.Fatalf("press answered %q", ans)
	}
	<-res
	if m, err := st.MessageByID(ctx, testChat, "m1"); err != nil || !strings.Contains(m.Text, "Allowed once by test:user/ann") {
		t.Errorf("the decided request in the chat's history: %+v, %v", m, err)
	}

	fake.mu.Lock()
	fake.fail = []error{fmt.Errorf("chat is gone: %w", adapters.ErrPermanent)}
	fake.mu.Unlock()
	go func() { res <- p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: "like"}) }()
	testwait.For(t, 10*time.Second, "the request as text", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(texts) == 1 && strings.Contains(texts[0], "/approve ")
	})
	active.finished("t-1")
	<-res
}

func TestParseApprovalCommand(t *testing.T) {
	ours := botMention{selfMention("@ourbot")}
	for _, c := range []struct {
		in, id, choice string
		ok             bool
		bot            botMention // zero: any mention (the web chat)
	}{
		{"/approve abc1234", "abc1234", "allow", true, botMention{}},
		{" /approve@switchboard_bot abc1234 session ", "abc1234", "session", true, botMention{}},
		{"/deny abc1234", "abc1234", "deny", true, botMention{}},
		{"/deny abc1234 session", "", "", false, botMention{}},
		{"/approve", "", "", false, botMention{}},
		{"please /approve abc1234", "", "", false, botMention{}},
		{"/approve ABC1234", "", "", false, botMention{}},
		{"<@UBOT> /approve abc1234", "abc1234", "allow", true, botMention{}},
		{"@switchboard /deny abc1234", "abc1234", "deny", true, botMention{}},
		{"@switchboard please /deny abc1234", "", "", false, botMention{}},
		{"@ourbot /approve abc1234 session", "abc1234", "session", true, ours},
		{"@ourbot: /deny abc1234", "abc1234", "deny", true, ours},
		{"/approve abc1234", "abc1234", "allow", true, ours},
		{"@alice /approve abc1234", "", "", false, ours},
		{"<@UBOT> /approve abc1234", "", "", false, ours},
	} {
		got, ok := parseApprovalCommand(c.in, adapters.VerbMention, c.bot)
		if ok != c.ok || got.id != c.id || got.choice != c.choice {
			t.Errorf("parseApprovalCommand(%q) = %+v %v", c.in, got, ok)
		}
	}
}

func TestRenderArgs(t *testing.T) {
	got := renderArgs(map[string]any{
		"command":  "GITHUB_TOKEN=ghp_abcdefghijklmnop1234 make deploy",
		"env":      map[string]any{"AWS_SECRET": "x", "HOME": "/root"},
		"password": "hunter2",
		"text":     strings.Repeat("a", 1000),
		"nested":   map[string]any{"key": "sk-abcdefghijklmnopq", "n": 3},
	})
	for _, bad := range []string{"ghp_abc", "hunter2", "/root", "sk-abc", strings.Repeat("a", 301)} {
		if strings.Contains(got, bad) {
			t.Errorf("rendered args contain %q:\n%s", bad, got)
		}
	}
	for _, want := range []string{"command: GITHUB_TOKEN=[redacted] make deploy", "env: AWS_SECRET=[redacted] HOME=[redacted]", "password: [redacted]", "nested.n: 3", "(700 more bytes)"} {
		if !strings.Contains(got, want) {
			t.Errorf("rendered args lack %q:\n%s", want, got)
		}
	}
	if got := requestText(store.Approval{ID: "x", Folder: "main", Tool: "b`ad", Args: "a```b"}); strings.Contains(got, "a```b") || strings.Contains(got, "b`ad") {
		t.Errorf("request text lets Markdown out:\n%s", got)
	}
}

// TestPressUnknownApproval: a press (or POST /api/approvals/{id}) naming
// a request nobody issued is answered so, with an error wrapping
// adapters.ErrUnknownRequest (the web API's 404); PressAnswer shows the
// answer to the presser as for any press, not the failure text.
func TestPressUnknownApproval(t *testing.T) {
	st := openTestStore(t, "main")
	p := newApprovals(st, adapterSet{}, &activeTurns{}, nil, ApprovalOptions{Timeout: time.Minute}, prometheus.NewRegistry(), discard)
	h := pressHandler{approvals: p}
	press := adapters.Press{Chat: testChat, Sender: "test:user/ann", Data: "appr:nosuch:allow"}
	ans, err := h.press(context.Background(), press)
	if !errors.Is(err, adapters.ErrUnknownRequest) || ans != "There is no approval request nosuch." {
		t.Errorf("press of an unknown request: %q, %v; want its answer and ErrUnknownRequest", ans, err)
	}
	host := &adaptertest.Host{PressFunc: h.press}
	if ans, err := adapters.PressAnswer(context.Background(), host, press); err != nil || ans != "There is no approval request nosuch." {
		t.Errorf("PressAnswer: %q, %v; want the gateway's answer, no error", ans, err)
	}
}

// TestRenderArgsRedactsAsProgress: what an approval request shows is
// redacted at least as the progress note of the same call is (one
// redactor, agent.Redact): a secret in a value under a harmless name (a
// Bash command with --password, a URL with a password, a header, a
// lower-case password=...) was shown in the chat as it was.
func TestRenderArgsRedactsAsProgress(t *testing.T) {
	for _, c := range []struct{ value, secret, want string }{
		{"mysql --password hunter2 db", "hunter2", "mysql --password"},
		{"psql postgres://admin:hunter2@db/prod", "hunter2", "postgres://"},
		{`curl -H "X-Api-Key: k3yk3yk3y" https://api`, "k3yk3yk3y", "X-Api-Key:"},
		{"login user=ann password=hunter2", "hunter2", "user=ann password="},
		{"deploy --token=abc123secret", "abc123secret", "deploy --token="},
		{"curl -u admin:hunter2 https://api.example.com", "hunter2", "curl -u "},
		{"key 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "9f86d081884c7d", "key "},
	} {
		got := renderArgs(map[string]any{"command": c.value})
		if strings.Contains(got, c.secret) || !strings.Contains(got, c.want) || !strings.Contains(got, "[redacted]") {
			t.Errorf("renderArgs of %q:\n%s", c.value, got)
		}
	}
}

// TestApproversInherited: a subgroup without approvers of its own is
// decided by its nearest ancestor's (stored by the CLI before configured,
// at each level), its requests go to that ancestor's approvals.chat, and a
// group with no approvers up its tree has none.
func TestApproversInherited(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "main")
	if err := st.SetApprovers(ctx, "acme", []string{"test:user/cli-set"}); err != nil {
		t.Fatal(err)
	}
	p := newApprovals(st, adapterSet{}, &activeTurns{}, nil, ApprovalOptions{Groups: map[groups.Folder]GroupApprovals{
		"acme":     {Approvers: []adapters.JID{"test:user/configured"}, Chat: "test:chat/approvals"},
		"acme/eng": {}, // no approvers of its own
		"solo":     {Approvers: []adapters.JID{"test:user/ann"}},
	}}, prometheus.NewRegistry(), discard)
	for _, c := range []struct {
		folder groups.Folder
		want   string
	}{
		{"acme/eng/web", "[test:user/cli-set]"},
		{"acme", "[test:user/cli-set]"},
		{"solo/x", "[test:user/ann]"},
		{"main", "[]"},
	} {
		if got := fmt.Sprint(p.approversOf(ctx, c.folder)); got != c.want {
			t.Errorf("approvers of %s: %s, want %s", c.folder, got, c.want)
		}
	}
	if got := p.settingsOf(ctx, "acme/eng/web").Chat; got != "test:chat/approvals" {
		t.Errorf("request chat of acme/eng/web: %q, want the parent's", got)
	}
	if !p.isApprover(ctx, "acme/eng", "test:user/cli-set") || p.isApprover(ctx, "acme/eng", "test:user/configured") {
		t.Error("isApprover does not follow the stored approvers of the nearest ancestor")
	}
}

// A subgroup's request goes where the folder that gives it its approvers
// says: one whose approvers come from the CLI alone posts in the turn's
// chat, not in its parent's approvals.chat (where its approvers may not
// even be); one with a chat of its own and no approvers posts there and
// is decided by its parent's approvers.
func TestApprovalRequestChatFollowsApprovers(t *testing.T) {
	for _, c := range []struct {
		name        string
		folder      groups.Folder
		cli         []string // the folder's approvers set by the CLI
		own         GroupApprovals
		wantChat    adapters.JID
		wantDecider adapters.JID
	}{
		{name: "cli-only-approvers", folder: "main/eng", cli: []string{"test:user/eng-lead"},
			wantChat: testChat, wantDecider: "test:user/eng-lead"},
		{name: "own-chat-inherited-approvers", folder: "main/ops", own: GroupApprovals{Chat: "test:chat/ops-approvals"},
			wantChat: "test:chat/ops-approvals", wantDecider: "test:user/boss"},
		{name: "nothing-of-its-own", folder: "main/qa",
			wantChat: "test:chat/approvals", wantDecider: "test:user/boss"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st := openTestStore(t, "main")
			if c.cli != nil {
				if err := st.SetApprovers(ctx, c.folder, c.cli); err != nil {
					t.Fatal(err)
				}
			}
			active := &activeTurns{}
			active.started("t-1", messageBatch(c.folder, testChat, "test:user/ann"))
			fake := &buttonsFake{}
			send := func(context.Context, ops.SendRequest) (store.OutboxItem, error) { return store.OutboxItem{}, nil }
			cfg := map[groups.Folder]GroupApprovals{"main": {Approvers: []adapters.JID{"test:user/boss"}, Chat: "test:chat/approvals"}}
			if c.own.Chat != "" || len(c.own.Approvers) > 0 {
				cfg[c.folder] = c.own
			}
			p := newApprovals(st, adapterSet{"test": fake}, active, send, ApprovalOptions{Timeout: time.Minute, Groups: cfg},
				prometheus.NewRegistry(), discard)
			res := make(chan ipc.ApprovalResult, 1)
			go func() { res <- p.Approve(ctx, ipc.ApprovalRequest{Folder: c.folder, Tool: "send"}) }()
			post, buttons := fake.request(t)
			posted := post.Chat
			if posted != c.wantChat {
				t.Errorf("request posted in %s; want %s", posted, c.wantChat)
			}
			ans, _ := pressHandler{approvals: p}.press(ctx, adapters.Press{Chat: posted, Sender: c.wantDecider, Data: buttons[0].Data})
			if r := <-res; !r.Allowed {
				t.Errorf("%s pressed Allow (answered %q); result %+v", c.wantDecider, ans, r)
			}
		})
	}
}

// TestSessionDecisionCoversPendingAsks: two calls of send in one turn ask
// at once; "Allow for this session" on the first also allows the second,
// which was already waiting (a call after the decision would have been
// allowed at once), and its request says who allowed it; a pending ask for
// another tool still waits.
func TestSessionDecisionCoversPendingAsks(t *testing.T) {
	ctx := context.Background()
	p, fake, active := buttonsApprovals(t)
	press := pressHandler{approvals: p}.press

	results := make([]chan ipc.ApprovalResult, 3)
	for i, tool := range []string{"send", "send", "like"} {
		results[i] = make(chan ipc.ApprovalResult, 1)
		go func() {
			results[i] <- p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: tool, Args: map[string]any{"text": fmt.Sprint("call ", i)}})
		}()
		testwait.For(t, 10*time.Second, "request posted", func() bool { n, _, _ := fake.state(); return n == i+1 })
	}
	fake.mu.Lock()
	first := fake.btns[0][1].Data // Allow for this session, on the first send
	fake.mu.Unlock()
	if ans, _ := press(ctx, adapters.Press{Chat: testChat, Sender: "test:user/ann", Data: first}); ans != "Allowed for this session by test:user/ann." {
		t.Fatalf("press answered %q", ans)
	}
	for i := range 2 {
		select {
		case r := <-results[i]:
			if !r.Allowed || r.Reason != "allowed for this session by test:user/ann" {
				t.Errorf("send call %d: %+v", i, r)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("send call %d still waits after its tool was allowed for the session", i)
		}
	}
	testwait.For(t, 10*time.Second, "both send requests edited", func() bool { _, _, e := fake.state(); return len(e) == 2 })
	if _, _, edits := fake.state(); !strings.Contains(edits[1], "Allowed for this session by test:user/ann") {
		t.Errorf("the second request reads %q", edits[1])
	}
	select {
	case r := <-results[2]:
		t.Errorf("the like call was decided by send's session grant: %+v", r)
	default:
	}
	active.finished("t-1")
	<-results[2]
}

// TestApprovalsCounterFromTheStart: switchboard_approvals_total has every
// outcome as a series at 0 before any request, so an operator's scrape or
// alert finds it (and rate() counts the first decision).
func TestApprovalsCounterFromTheStart(t *testing.T) {
	reg := prometheus.NewRegistry()
	newApprovals(openTestStore(t, "main"), adapterSet{}, &activeTurns{}, nil, ApprovalOptions{}, reg, discard)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "switchboard_approvals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	for _, d := range []string{"allowed", "session", "denied", "timeout", "expired"} {
		if v, ok := got[d]; !ok || v != 0 {
			t.Errorf(`switchboard_approvals_total{decision=%q}: %v, present %v; want 0 from the start`, d, v, ok)
		}
	}
}

// "@bot /approve ID" (a mention first: Slack's clients take a message
// that starts with "/" for a slash command) is an approval command like
// "/approve ID": answered, and never prompted.
func TestApprovalCommandAfterMention(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "cat >/dev/null; echo ran")})
	h.post(testChat, "m1", "<@UBOT> /approve abc1234")
	if sent := texts(h.waitSent(testChat, 1)); len(sent) != 1 || sent[0] != "There is no approval request abc1234." {
		t.Fatalf("the chat got %q; want the command answered", sent)
	}
	h.stop()
	if n := len(h.turns("main")); n != 0 {
		t.Errorf("%d turns; an approval command is never prompted", n)
	}
}

// An /approve or /deny that the platform's backfill brings after downtime
// (Discord, Slack) is stored and never prompted, as one that came live:
// the agent never gets "/approve ID" as a question, and the command is not
// answered (the requests pending then expired with the restart). A
// backfilled message of its age that is no command triggers as usual.
func TestBackfilledApprovalCommandNotPrompted(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	for i, text := range []string{"/approve abc1234", "/deny abc1234", "/approve abc1234 session"} {
		h.deliver(adapters.Inbound{Chat: testChat, ID: adapters.MessageID(fmt.Sprintf("cmd%d", i)), Text: text,
			Time: time.Now().Add(-time.Minute), Backfilled: true, Verb: adapters.VerbMention})
	}
	h.deliver(adapters.Inbound{Chat: testChat, ID: "q", Text: "a question", Time: time.Now().Add(-time.Minute), Backfilled: true, Verb: adapters.VerbMention})
	h.waitSent(testChat, 1)
	h.stop()
	ps := rec.prompts(t)
	if len(ps) != 1 || strings.Contains(ps[0], "/approve") || strings.Contains(ps[0], "/deny") || !strings.Contains(ps[0], "a question") {
		t.Fatalf("prompts %q; want one turn, for the question alone", ps)
	}
	if sent := texts(h.fa.sentTo(testChat)); len(sent) != 1 {
		t.Errorf("the chat got %q; want the question's reply alone", sent)
	}
}

// grantingStore is the store of approvals whose next AddApproval first
// runs beforeAdd: a decision made between a call's session check and
// its request being stored.
type grantingStore struct {
	approvalStore
	beforeAdd func()
}

func (s *grantingStore) AddApproval(ctx context.Context, a store.Approval) (store.Approval, error) {
	if f := s.beforeAdd; f != nil {
		s.beforeAdd = nil
		f()
	}
	return s.approvalStore.AddApproval(ctx, a)
}

// TestSessionGrantDuringAskCoversIt: a call of a tool that asks at the
// moment an approver allows that tool for the session (after the call
// found no session grant, before its request was stored, so the grant
// saw no pending request to cover) is allowed by that grant: the
// approver is not asked again for what they just allowed, and the call
// does not wait for the timeout.
func TestSessionGrantDuringAskCoversIt(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "main")
	if err := st.SetApprovers(ctx, "main", []string{"test:user/ann"}); err != nil {
		t.Fatal(err)
	}
	active := &activeTurns{}
	active.started("t-1", messageBatch("main", testChat, "test:user/ann"))
	defer active.finished("t-1")
	fake := &buttonsFake{}
	send := func(context.Context, ops.SendRequest) (store.OutboxItem, error) { return store.OutboxItem{}, nil }
	gs := &grantingStore{approvalStore: st}
	p := newApprovals(gs, adapterSet{"test": fake}, active, send, ApprovalOptions{Timeout: 2 * time.Second}, prometheus.NewRegistry(), discard)

	first := make(chan ipc.ApprovalResult, 1)
	go func() {
		first <- p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: "send", Args: map[string]any{"text": "one"}})
	}()
	_, buttons := fake.request(t)
	gs.beforeAdd = func() {
		if ans, _ := p.decide(ctx, strings.Split(buttons[1].Data, ":")[1], "session", "test:user/ann"); ans != "Allowed for this session by test:user/ann." {
			t.Errorf("session press answered %q", ans)
		}
	}
	second := p.Approve(ctx, ipc.ApprovalRequest{Folder: "main", Tool: "send", Args: map[string]any{"text": "two"}})
	if !second.Allowed {
		t.Errorf("the call asked during the session grant got %+v; want it allowed by the grant", second)
	}
	if r := <-first; !r.Allowed {
		t.Errorf("the first call got %+v", r)
	}
	if n, _, _ := fake.state(); n != 1 {
		t.Errorf("%d requests posted; want only the first (the second call's tool was allowed for the session)", n)
	}
	if got, err := st.PendingApprovals(ctx); err != nil || len(got) != 0 {
		t.Errorf("pending requests left: %+v, %v", got, err)
	}
}
