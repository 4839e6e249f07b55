package ipc_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/routing"
	"switchboard/store"
)

// TestSendFileStaysInFolder: send_file reads only regular files inside the
// group folder; .., absolute paths elsewhere and symlinks out are refused.
func TestSendFileStaysInFolder(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	dir := filepath.Join(h.dir, "groups", "acme")
	mustWrite(t, filepath.Join(dir, "out", "report.txt"), "report")
	mustWrite(t, filepath.Join(h.dir, "secret.txt"), "secret")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.dir, filepath.Join(dir, "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("out/report.txt", filepath.Join(dir, "inside-link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../x", "../../secret.txt", "out/../../secret.txt", "/etc/passwd",
		filepath.Join(h.dir, "secret.txt"), "passwd", "up/secret.txt", "out", "missing.txt", ""} {
		r := call(t, c, "send_file", map[string]any{"chat_jid": "full:room", "path": p})
		if !r.IsError {
			t.Errorf("send_file %q was accepted: %s", p, r.Text)
		}
	}
	if acts := h.all.actions(); len(acts) != 0 {
		t.Fatalf("files reached the adapter: %v", acts)
	}
	for _, p := range []string{"out/report.txt", filepath.Join(dir, "out", "report.txt"), "inside-link"} {
		if r := call(t, c, "send_file", map[string]any{"chat_jid": "full:room", "path": p, "caption": "c"}); r.IsError {
			t.Errorf("send_file %q: %s", p, r.Text)
		}
	}
	acts := h.all.actions()
	if len(acts) != 3 || acts[0] != "file full:room report.txt c" {
		t.Errorf("adapter got %v", acts)
	}
	// A platform without the capability says so.
	mustWrite(t, filepath.Join(dir, "a.txt"), "a")
	if r := call(t, c, "send_file", map[string]any{"chat_jid": "web:acme", "path": "a.txt"}); !strings.Contains(r.Text, "web: send_file is not supported by this platform") {
		t.Errorf("send_file on web: %+v", r)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlatformVerbs: edit, delete, like, pin and unpin reach an adapter
// that has them, and name the platform when it does not.
func TestPlatformVerbs(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	calls := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"edit", map[string]any{"message_id": "m1", "text": "new"}, "edit full:x m1 new"},
		{"delete", map[string]any{"message_id": "m1"}, "delete full:x m1"},
		{"like", map[string]any{"message_id": "m1", "reaction": "👍"}, "react full:x m1 👍"},
		{"pin_message", map[string]any{"message_id": "m1"}, "pin full:x m1"},
		{"unpin_message", map[string]any{"message_id": "m1"}, "unpin full:x m1"},
	}
	for i, tc := range calls {
		tc.args["chat_jid"] = "full:x"
		if r := call(t, c, tc.tool, tc.args); r.IsError || r.Text != `{"ok":true}` {
			t.Errorf("%s: %+v", tc.tool, r)
		}
		if acts := h.all.actions(); len(acts) != i+1 || acts[i] != tc.want {
			t.Errorf("%s: adapter got %v", tc.tool, acts)
		}
		tc.args["chat_jid"] = "web:acme"
		want := "web: " + tc.tool + " is not supported by this platform"
		if r := call(t, c, tc.tool, tc.args); !r.IsError || !strings.Contains(r.Text, want) {
			t.Errorf("%s on web: %+v, want %q", tc.tool, r, want)
		}
	}
	// fetch_history asks the platform where it can.
	var fh struct {
		Source   string `json:"source"`
		Messages []struct {
			Text string `json:"text"`
		} `json:"messages"`
	}
	call(t, c, "fetch_history", map[string]any{"chat_jid": "full:x"}).decode(t, &fh)
	if fh.Source != "platform" || len(fh.Messages) != 1 || fh.Messages[0].Text != "from the platform" {
		t.Errorf("fetch_history full: %+v", fh)
	}
	call(t, c, "fetch_history", map[string]any{"chat_jid": "web:acme"}).decode(t, &fh)
	if fh.Source != "store" {
		t.Errorf("fetch_history web: %+v", fh)
	}
}

// TestNoAdapter: a call on a chat of a platform no enabled adapter serves
// is refused before anything is queued, naming the platform.
func TestNoAdapter(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "root", true)
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"send", map[string]any{"text": "hi"}, "send: no adapter for this platform is enabled: telegram"},
		{"edit", map[string]any{"message_id": "m1", "text": "new"}, "edit: telegram: no adapter for this platform is enabled"},
		{"like", map[string]any{"message_id": "m1", "reaction": "👍"}, "like: telegram: no adapter for this platform is enabled"},
	} {
		tc.args["chat_jid"] = "telegram:user/1"
		if r := call(t, c, tc.tool, tc.args); !r.IsError || r.Text != tc.want {
			t.Errorf("%s: %+v, want the error %q", tc.tool, r, tc.want)
		}
	}
	if n := len(h.web.sends()) + len(h.all.sends()); n != 0 {
		t.Errorf("%d messages reached an adapter", n)
	}
}

// blockingAgent writes an agent script that waits for gate to exist, then
// prints "stdout reply".
func blockingAgent(t *testing.T) (argv []string, gate string) {
	t.Helper()
	gate = filepath.Join(t.TempDir(), "go")
	return testagent.Script(t, `cat > /dev/null; while [ ! -e "$1" ]; do sleep 0.01; done; echo 'stdout reply'`, gate), gate
}

// TestReplyDuringTurn: reply without reply_to answers the turn's last
// message in its topic, and the turn's stdout reply is then not sent.
func TestReplyDuringTurn(t *testing.T) {
	agent, gate := blockingAgent(t)
	h := newHarnessAgent(t, nil, agent)
	h.waitStarted(t) // past its crash recovery, which would take the turn below for a crashed one
	c := h.connect(t, "acme", true)
	if r := call(t, c, "reply", map[string]any{"chat_jid": "web:acme", "text": "x"}); !r.IsError || !strings.Contains(r.Text, "no turn of group acme") {
		t.Errorf("reply with no turn running: %+v", r)
	}
	_, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: "web:acme", ID: "m7", Sender: "web:user/ann",
		Text: "question", Topic: "t9", Verb: adapters.VerbMention})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "turn running", func() bool {
		return strings.Contains(call(t, c, "inspect_session", nil).Text, `"running":{`)
	})
	var sent struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	call(t, c, "reply", map[string]any{"chat_jid": "web:acme", "text": "answer"}).decode(t, &sent)
	if sent.Status != "sent" || sent.ID == "" {
		t.Errorf("reply result %+v", sent)
	}
	mustWrite(t, gate, "")
	// The turn is recorded in the same transaction that would queue its
	// stdout reply, and the outbox delivers a chat's messages oldest first:
	// once a later send is delivered, a wrongly queued reply would be too.
	waitTurn(t, h.st, "acme", store.TriggerMessage)
	call(t, c, "send", map[string]any{"chat_jid": "web:acme", "text": "later"}).decode(t, &sent)
	if sent.Status != "sent" {
		t.Fatalf("send after the turn: %+v", sent)
	}
	got := h.web.sends()
	if len(got) != 2 || got[1].Text != "later" {
		t.Fatalf("adapter got %+v, want exactly the MCP reply, then the later send", got)
	}
	if got[0].Text != "answer" || got[0].ReplyTo != "m7" || got[0].Topic != "t9" {
		t.Errorf("reply sent as %+v, want text answer, reply_to m7, topic t9", got[0])
	}
	// An explicit reply_to goes to that message's thread.
	call(t, c, "reply", map[string]any{"chat_jid": "web:acme", "text": "again", "reply_to": "m7"}).decode(t, &sent)
	if got := h.web.sends(); len(got) != 3 || got[2].Topic != "t9" || got[2].ReplyTo != "m7" {
		t.Errorf("explicit reply_to: %+v", got)
	}
	// A reply_to that is not stored is refused, naming it.
	if r := call(t, c, "reply", map[string]any{"chat_jid": "web:acme", "text": "x", "reply_to": "nope"}); !r.IsError || !strings.Contains(r.Text, "message nope is not stored in web:acme") {
		t.Errorf("unknown reply_to: %+v", r)
	}
}

// TestFindMessagesOwnedChats: without chat_jid, search covers only chats
// the caller's subtree owns; the operator searches everything.
func TestFindMessagesOwnedChats(t *testing.T) {
	h := newHarness(t, nil)
	h.deliver(t, "web:root", "r1", "secret plans of the operator")
	h.deliver(t, "web:acme", "a1", "secret plans of acme")
	h.deliver(t, "web:eng", "e1", "secret plans of eng")
	h.deliver(t, "web:stray", "s1", "secret plans of nobody")
	search := func(folder groups.Folder, args map[string]any) []string {
		var res struct {
			Hits []struct {
				ChatJID string `json:"chat_jid"`
				Snippet string `json:"snippet"`
			} `json:"hits"`
		}
		call(t, h.connect(t, folder, true), "find_messages", args).decode(t, &res)
		var chats []string
		for _, hit := range res.Hits {
			chats = append(chats, hit.ChatJID)
			if !strings.Contains(hit.Snippet, "[secret]") {
				t.Errorf("snippet %q does not mark the match", hit.Snippet)
			}
		}
		slices.Sort(chats)
		return chats
	}
	if got := search("acme", map[string]any{"query": "secret"}); !slices.Equal(got, []string{"web:acme", "web:eng"}) {
		t.Errorf("acme finds %v", got)
	}
	if got := search("acme/eng", map[string]any{"query": "secret"}); !slices.Equal(got, []string{"web:eng"}) {
		t.Errorf("acme/eng finds %v", got)
	}
	if got := search("root", map[string]any{"query": "secret"}); len(got) != 4 {
		t.Errorf("root finds %v", got)
	}
	if got := search("acme", map[string]any{"query": "secret", "chat_jid": "web:eng"}); !slices.Equal(got, []string{"web:eng"}) {
		t.Errorf("acme in web:eng finds %v", got)
	}
	if r := call(t, h.connect(t, "acme", true), "find_messages", map[string]any{"query": "secret", "chat_jid": "web:root"}); !r.refused() {
		t.Errorf("acme searching web:root: %+v", r)
	}
}

// TestSetRoutesKeepsTheGroupsChats: a group's set_routes puts its pinned
// routes where add_route would, ahead of other groups' catch-alls: the
// chats it re-routes stay its own.
func TestSetRoutesKeepsTheGroupsChats(t *testing.T) {
	h := newHarness(t, nil)
	if r := call(t, h.connect(t, "root", true), "add_route", map[string]any{"match": map[string]any{"platform": "web"}, "target": "root"}); r.IsError {
		t.Fatalf("root's catch-all: %+v", r)
	}
	if owner, _ := h.g.Table().Owner("web:acme", ""); owner != "acme" {
		t.Fatalf("before: web:acme is owned by %s", owner)
	}
	c := h.connect(t, "acme", true)
	if r := call(t, c, "set_routes", map[string]any{"routes": []any{
		map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme", "mode": "observe"},
	}}); r.IsError {
		t.Fatalf("set_routes: %+v", r)
	}
	if owner, _ := h.g.Table().Owner("web:acme", ""); owner != "acme" {
		t.Errorf("after acme's set_routes web:acme is owned by %s, want acme (routes %+v)", owner, h.g.Table().Routes())
	}
}

// TestRouteEditKeepsOtherGroupsTopics: a group's route for a whole chat it
// owns may not go ahead of another group's route for one of the chat's
// threads (add_route without seq puts a pinned route first): it would
// capture that thread.
func TestRouteEditKeepsOtherGroupsTopics(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	// A route for a whole chat may not go ahead of another group's route for
	// one of its threads: it would capture that thread.
	if r := call(t, h.connect(t, "root", true), "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme", "topic": "ops"}, "target": "root"}); r.IsError {
		t.Fatalf("root pinning a topic of web:acme: %+v", r)
	}
	if r := call(t, c, "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme"}); !r.IsError || !strings.Contains(r.Text, `would take topic "ops" of chat "web:acme" from group "root"`) {
		t.Errorf("acme routing web:acme ahead of root's topic route: %+v, want refused", r)
	}
	if owner, _ := h.g.Table().Owner("web:acme", "ops"); owner != "root" {
		t.Errorf("topic ops of web:acme is owned by %s, want root", owner)
	}
	// After root's topic route, the same route is fine.
	if r := call(t, c, "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme", "seq": 5}); r.IsError {
		t.Errorf("acme routing web:acme after root's topic route: %+v", r)
	}
}

// TestRouteEdits: a non-operator group may move its own chats within its
// subtree but not capture others'; set_routes is all or nothing.
func TestRouteEdits(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	refusedEdits := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"add_route", map[string]any{"match": map[string]any{"platform": "web"}, "target": "acme"}, "pin chat_jid"},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:*"}, "target": "acme"}, "is a glob"},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:root"}, "target": "acme"}, `owned by group "root"`},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "root"}, "outside it"},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme/nope"}, "does not exist"},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme", "seq": 1e300}, "param seq: want an integer, got 1e+300, which is too large to be an exact integer"},
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme", "seq": 1e12}, "seq: 1e+12 is out of range; want an integer from -1000000000 to 1000000000"},
		{"delete_route", map[string]any{"id": 1}, "outside it"}, // root's route
		{"add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme", "verb": "mentoin"}, "target": "acme"},
			`match key verb: glob "mentoin" matches neither message nor mention`},
	}
	for _, e := range refusedEdits {
		if r := call(t, c, e.tool, e.args); !r.IsError || !strings.Contains(r.Text, e.want) {
			t.Errorf("%s %v: %+v, want error containing %q", e.tool, e.args, r, e.want)
		}
	}
	// Moving web:acme to acme/eng is fine and takes effect at once.
	var added struct {
		Route routing.Route `json:"route"`
	}
	call(t, c, "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme/eng"}).decode(t, &added)
	if owner, _ := h.g.Table().Owner("web:acme", ""); owner != "acme/eng" || added.Route.Seq >= 0 {
		t.Errorf("after add_route web:acme is owned by %s (route %+v)", owner, added.Route)
	}
	// set_routes with one bad route changes nothing.
	before := h.g.Table().Routes()
	r := call(t, c, "set_routes", map[string]any{"routes": []any{
		map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme"},
		map[string]any{"match": map[string]any{"platform": "slack"}, "target": "acme"},
	}})
	if !r.IsError || !strings.Contains(r.Text, "routes[1]") {
		t.Errorf("set_routes with a catch-all: %+v", r)
	}
	if after := h.g.Table().Routes(); len(after) != len(before) {
		t.Errorf("a refused set_routes changed the table: %d → %d routes", len(before), len(after))
	}
	// Nor does the operator's set_routes with a route no message can match.
	root := h.connect(t, "root", true)
	r = call(t, root, "set_routes", map[string]any{"routes": []any{
		map[string]any{"match": map[string]any{"platform": "web"}, "target": "root"},
		map[string]any{"match": map[string]any{"platform": "slack", "verb": "mentoin"}, "target": "acme"},
	}})
	if !r.IsError || !strings.Contains(r.Text, `routes[1]: route match: match key verb: glob "mentoin" matches neither message nor mention`) {
		t.Errorf("set_routes with verb=mentoin: %+v", r)
	}
	if after := h.g.Table().Routes(); len(after) != len(before) {
		t.Errorf("a refused set_routes changed the table: %d → %d routes", len(before), len(after))
	}
	// A good set_routes replaces only acme's own routes.
	var set struct {
		Removed int `json:"removed"`
	}
	call(t, c, "set_routes", map[string]any{"routes": []any{
		map[string]any{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme"},
	}}).decode(t, &set)
	routes := h.g.Table().Routes()
	var targets []string
	for _, r := range routes {
		targets = append(targets, string(r.Target))
	}
	slices.Sort(targets)
	// root's route and full's platform route (not pinned) survive; acme's
	// subtree is now just web:acme.
	if !slices.Equal(targets, []string{"acme", "acme", "root"}) {
		t.Errorf("after set_routes: %+v", routes)
	}
	// Tier 0 may add a catch-all (here ahead of acme's route).
	op := h.connect(t, "root", true)
	if r := call(t, op, "add_route", map[string]any{"match": map[string]any{"platform": "slack"}, "target": "root", "seq": -100}); r.IsError {
		t.Errorf("operator catch-all: %s", r.Text)
	}
	// explain_route hides other groups' routes from a non-operator.
	var x struct {
		Folder   string `json:"folder"`
		Rejected []struct {
			Route  map[string]any `json:"route"`
			Reason string         `json:"reason"`
		} `json:"rejected"`
	}
	call(t, c, "explain_route", map[string]any{"chat_jid": "web:acme"}).decode(t, &x)
	if x.Folder != "acme" {
		t.Errorf("explain: %+v", x)
	}
	redacted := 0
	for _, rj := range x.Rejected {
		if _, shown := rj.Route["match"]; !shown {
			redacted++
		} else if rj.Route["target"] != "acme" {
			t.Errorf("explain shows another group's route: %+v", rj)
		}
	}
	if redacted == 0 { // root's slack catch-all is tried before acme's
		t.Errorf("explain redacted no route of another group: %+v", x.Rejected)
	}
	// The winning route of another group is redacted too: acme owns web:acme
	// (its mention route comes first), but plain messages go to root.
	for _, r := range []map[string]any{
		{"match": map[string]any{"chat_jid": "web:acme", "verb": "mention"}, "target": "acme", "seq": -20},
		{"match": map[string]any{"chat_jid": "web:acme", "verb": "message"}, "target": "root", "seq": -10},
	} {
		if res := call(t, op, "add_route", r); res.IsError {
			t.Fatal(res.Text)
		}
	}
	var won struct {
		Folder string         `json:"folder"`
		Owner  string         `json:"owner"`
		Route  map[string]any `json:"route"`
	}
	call(t, c, "explain_route", map[string]any{"chat_jid": "web:acme", "verb": "message"}).decode(t, &won)
	if _, shown := won.Route["match"]; shown || won.Folder != "root" || won.Owner != "acme" {
		t.Errorf("explain with another group's winning route: %+v", won)
	}
}

// TestGroupTools: register_group makes a live subgroup (with a pinned
// route); delegate and escalate queue prompt turns.
func TestGroupTools(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	c := h.connect(t, "acme", true)
	if r := call(t, c, "register_group", map[string]any{"folder": "root/x"}); !r.IsError {
		t.Errorf("register a non-child: %+v", r)
	}
	if r := call(t, c, "register_group", map[string]any{"folder": "sales", "chat_jid": "web:root"}); !r.refused() {
		t.Errorf("register with another group's chat: %+v", r)
	}
	if ok, _ := h.st.GroupExists(ctx, "acme/sales"); ok {
		t.Fatal("a refused register_group left a group behind")
	}
	var reg struct {
		Folder string        `json:"folder"`
		Tier   int           `json:"tier"`
		Route  routing.Route `json:"route"`
	}
	call(t, c, "register_group", map[string]any{"folder": "sales", "chat_jid": "full:sales"}).decode(t, &reg)
	if reg.Folder != "acme/sales" || reg.Tier != 2 || reg.Route.Target != "acme/sales" {
		t.Errorf("register_group: %+v", reg)
	}
	// Its socket is up when the call returns.
	sc := h.connect(t, "acme/sales", true)
	var g struct {
		Folder string `json:"folder"`
	}
	call(t, sc, "list_grants", nil).decode(t, &g)
	if g.Folder != "acme/sales" {
		t.Errorf("new group's session acts as %q", g.Folder)
	}
	if owner, _ := h.g.Table().Owner("full:sales", ""); owner != "acme/sales" {
		t.Errorf("full:sales owned by %q", owner)
	}
	if r := call(t, c, "register_group", map[string]any{"folder": "acme/sales"}); !r.IsError || !strings.Contains(r.Text, "already exists") {
		t.Errorf("register twice: %+v", r)
	}
	// A bare name that is the caller's own, or another group's, is refused
	// rather than nested (acme/acme, acme/root).
	for name, want := range map[string]string{"acme": "your own group's name", "root": "group root already exists"} {
		if r := call(t, c, "register_group", map[string]any{"folder": name}); !r.IsError || !strings.Contains(r.Text, want) {
			t.Errorf("register_group %q: %+v; want an error saying %q", name, r, want)
		}
	}
	if ok, _ := h.st.GroupExists(ctx, "acme/acme"); ok {
		t.Error("acme/acme was created")
	}
	// delegate_group: only downwards; the subgroup's turn runs.
	if r := call(t, sc, "delegate_group", map[string]any{"folder": "acme", "prompt": "x", "chat_jid": "full:sales"}); !r.IsError {
		t.Errorf("delegate upwards: %+v", r)
	}
	if r := call(t, c, "delegate_group", map[string]any{"folder": "acme/sales", "prompt": "sum up", "chat_jid": "web:acme"}); r.IsError {
		t.Fatal(r.Text)
	}
	waitTurn(t, h.st, "acme/sales", store.TriggerDelegate)
	// escalate_group: to the parent; top-level groups have none.
	if r := call(t, c, "escalate_group", map[string]any{"prompt": "x", "chat_jid": "web:acme"}); !r.IsError || !strings.Contains(r.Text, "top-level") {
		t.Errorf("escalate from top level: %+v", r)
	}
	eng := h.connect(t, "acme/eng", true)
	if r := call(t, eng, "escalate_group", map[string]any{"prompt": "need help", "chat_jid": "web:eng"}); r.IsError {
		t.Fatal(r.Text)
	}
	waitTurn(t, h.st, "acme", store.TriggerEscalate)
	// refresh_groups shows the caller's subtree only.
	var rg struct {
		Groups []struct {
			Folder string `json:"folder"`
			Online bool   `json:"online"`
		} `json:"groups"`
	}
	call(t, eng, "refresh_groups", nil).decode(t, &rg)
	if len(rg.Groups) != 2 || rg.Groups[0].Folder != "acme/eng" || !rg.Groups[0].Online {
		t.Errorf("refresh_groups as acme/eng: %+v", rg)
	}
}

func waitTurn(t *testing.T, st *store.Store, folder groups.Folder, trigger store.Trigger) {
	t.Helper()
	testwait.For(t, 10*time.Second, string(trigger)+" turn of "+string(folder), func() bool {
		turns, err := st.Turns(context.Background(), folder, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range turns {
			if tr.Trigger == trigger && tr.Status == store.TurnSucceeded {
				return true
			}
		}
		return false
	})
}

// TestSessionTools: work notes, injection, engagement and session reset.
func TestSessionTools(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	var w struct {
		Content string `json:"content"`
		Exists  bool   `json:"exists"`
	}
	call(t, c, "get_work", nil).decode(t, &w)
	if w.Exists || w.Content != "" {
		t.Errorf("fresh work.md: %+v", w)
	}
	call(t, c, "set_work", map[string]any{"content": "# plan\n- ship"}).decode(t, &struct{}{})
	call(t, c, "get_work", nil).decode(t, &w)
	if !w.Exists || w.Content != "# plan\n- ship" {
		t.Errorf("work.md after set: %+v", w)
	}
	if r := call(t, c, "set_work", map[string]any{"content": strings.Repeat("x", 256<<10+1)}); !r.IsError {
		t.Error("set_work accepted more than 256 KiB")
	}
	// work.md as a symlink out of the folder is not followed.
	dir := filepath.Join(h.dir, "groups", "acme/eng")
	mustWrite(t, filepath.Join(h.dir, "outside.md"), "outside")
	if err := os.Symlink(filepath.Join(h.dir, "outside.md"), filepath.Join(dir, "work.md")); err != nil {
		t.Fatal(err)
	}
	eng := h.connect(t, "acme/eng", true)
	if r := call(t, eng, "get_work", nil); !r.IsError {
		t.Errorf("get_work through a symlink out: %+v", r)
	}
	if r := call(t, eng, "set_work", map[string]any{"content": "mine"}); r.IsError {
		t.Errorf("set_work over a symlink: %s", r.Text)
	}
	if b, _ := os.ReadFile(filepath.Join(h.dir, "outside.md")); string(b) != "outside" {
		t.Errorf("set_work wrote through the symlink: %q", b)
	}
	// inject_message runs a turn of the chat's owner.
	var inj struct {
		Folder string `json:"folder"`
	}
	call(t, c, "inject_message", map[string]any{"chat_jid": "web:eng", "text": "wake up"}).decode(t, &inj)
	if inj.Folder != "acme/eng" {
		t.Errorf("inject answered by %q", inj.Folder)
	}
	waitTurn(t, h.st, "acme/eng", store.TriggerInject)
	if r := call(t, c, "inject_message", map[string]any{"chat_jid": "web:acme", "text": "x", "sender": "web:user/ann"}); !r.IsError ||
		!strings.Contains(r.Text, "switchboard: sender") {
		t.Errorf("inject as a platform user: %+v", r)
	}
	// engage / disengage.
	if r := call(t, c, "engage", map[string]any{"chat_jid": "web:acme", "topic": "t1"}); r.IsError || !strings.Contains(r.Text, "until") {
		t.Errorf("engage: %+v", r)
	}
	if r := call(t, c, "disengage", map[string]any{"chat_jid": "web:acme", "topic": "t1"}); r.IsError {
		t.Errorf("disengage: %+v", r)
	}
	// acme engages in its child's chat; the child cannot end that.
	child := h.connect(t, "acme/eng", true)
	if r := call(t, c, "engage", map[string]any{"chat_jid": "web:eng"}); r.IsError {
		t.Fatalf("engage in a child's chat: %+v", r)
	}
	if r := call(t, child, "disengage", map[string]any{"chat_jid": "web:eng"}); !r.IsError || !strings.Contains(r.Text, "belongs to group acme") {
		t.Errorf("a child ended its parent's engagement: %+v", r)
	}
	if r := call(t, c, "disengage", map[string]any{"chat_jid": "web:eng"}); r.IsError {
		t.Errorf("the engaged group could not end its engagement: %+v", r)
	}
	// reset_session forgets the sessions the turns left.
	h.deliver(t, "web:acme", "m1", "hi")
	waitTurn(t, h.st, "acme", store.TriggerMessage)
	var rs struct {
		Reset int `json:"reset"`
	}
	call(t, c, "reset_session", nil).decode(t, &rs)
	if rs.Reset != 1 {
		t.Errorf("reset %d sessions, want 1", rs.Reset)
	}
}

// A FIFO (or any non-regular file) in a group folder never blocks a tool:
// send_file and get_work answer at once with an error, and the session goes on.
func TestFIFOsDoNotBlock(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	dir := filepath.Join(h.dir, "groups", "acme")
	for _, name := range []string{"pipe", "work.md"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if r := call(t, c, "send_file", map[string]any{"chat_jid": "full:room", "path": "pipe"}); !r.IsError || !strings.Contains(r.Text, "not a regular file") {
			t.Errorf("send_file on a FIFO: %+v", r)
		}
		if r := call(t, c, "get_work", nil); !r.IsError || !strings.Contains(r.Text, "not a regular file") {
			t.Errorf("get_work on a FIFO: %+v", r)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a tool blocked on a FIFO")
	}
	var w struct{ Exists bool }
	call(t, c, "set_work", map[string]any{"content": "plan"}).decode(t, &struct{}{})
	call(t, c, "get_work", nil).decode(t, &w)
	if !w.Exists {
		t.Error("set_work did not replace the FIFO")
	}
}

// A group routed one topic of a chat acts in that topic — send into it,
// read it, reply to its messages — and nowhere else in the chat.
func TestTopicOwnership(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		_, err := st.AddRoute(ctx, routing.Route{Seq: -5, Match: map[string]string{"chat_jid": "web:acme", "topic": "t9"}, Target: "acme/eng"})
		return err
	})
	ctx := context.Background()
	if _, err := h.g.Deliver(ctx, adapters.Inbound{Chat: "web:acme", ID: "in-t9", Sender: "web:user/ann", Text: "thread question", Topic: "t9"}); err != nil {
		t.Fatal(err)
	}
	h.deliver(t, "web:acme", "in-main", "main channel")
	eng := h.connect(t, "acme/eng", true)
	for _, tc := range []struct {
		tool string
		args map[string]any
		ok   bool
	}{
		{"send", map[string]any{"chat_jid": "web:acme", "topic": "t9", "text": "on it"}, true},
		{"get_thread", map[string]any{"chat_jid": "web:acme", "topic": "t9"}, true},
		{"reply", map[string]any{"chat_jid": "web:acme", "reply_to": "in-t9", "text": "answer"}, true},
		{"send", map[string]any{"chat_jid": "web:acme", "text": "to the whole chat"}, false},
		{"reply", map[string]any{"chat_jid": "web:acme", "reply_to": "in-main", "text": "not mine"}, false},
	} {
		r := call(t, eng, tc.tool, tc.args)
		if refused := r.refused(); refused == tc.ok {
			t.Errorf("%s %v: %+v; want allowed=%v", tc.tool, tc.args, r, tc.ok)
		}
	}
}

// fetch_history pages back with before_id (here from the store, which the
// web chat falls back to).
func TestFetchHistoryBeforeID(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	for _, id := range []string{"h1", "h2", "h3"} {
		h.deliver(t, "web:acme", id, "text "+id)
	}
	var fh struct {
		Source   string `json:"source"`
		Messages []struct {
			ID string `json:"id"`
		} `json:"messages"`
	}
	call(t, c, "fetch_history", map[string]any{"chat_jid": "web:acme", "before_id": "h3"}).decode(t, &fh)
	var ids []string
	for _, m := range fh.Messages {
		if strings.HasPrefix(m.ID, "h") {
			ids = append(ids, m.ID)
		}
	}
	if fh.Source != "store" || strings.Join(ids, ",") != "h1,h2" {
		t.Errorf("fetch_history before h3: %s %v; want h1, h2 from the store", fh.Source, ids)
	}
	if r := call(t, c, "fetch_history", map[string]any{"chat_jid": "web:acme", "before_id": "nope"}); !r.IsError || !strings.Contains(r.Text, "before_id nope") {
		t.Errorf("unknown before_id: %+v", r)
	}
}

// A rule that denies find_messages in some chats (`!find_messages(jid=…)`)
// holds when the call names no chat too: a search of "every chat the group
// owns" leaves those chats out, at tier 0 as below it, instead of the
// deny being dodged by omitting chat_jid.
func TestFindMessagesWithoutChatKeepsJIDDenials(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		if err := st.SetGrantOverrides(ctx, "acme", []string{"!find_messages(jid=web:eng)"}); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "root", []string{"!find_messages(jid=web:st*)"})
	})
	h.deliver(t, "web:root", "r1", "secret plans of the operator")
	h.deliver(t, "web:acme", "a1", "secret plans of acme")
	h.deliver(t, "web:eng", "e1", "secret plans of eng")
	h.deliver(t, "web:stray", "s1", "secret plans of nobody")
	search := func(folder groups.Folder, args map[string]any) []string {
		var res struct {
			Hits []struct {
				ChatJID string `json:"chat_jid"`
			} `json:"hits"`
		}
		call(t, h.connect(t, folder, true), "find_messages", args).decode(t, &res)
		var chats []string
		for _, hit := range res.Hits {
			chats = append(chats, hit.ChatJID)
		}
		slices.Sort(chats)
		return chats
	}
	if got := search("acme", map[string]any{"query": "secret"}); !slices.Equal(got, []string{"web:acme"}) {
		t.Errorf("acme, denied web:eng, finds %v", got)
	}
	if r := call(t, h.connect(t, "acme", true), "find_messages", map[string]any{"query": "secret", "chat_jid": "web:eng"}); !r.refused() {
		t.Errorf("acme searching web:eng: %+v", r)
	}
	if got := search("root", map[string]any{"query": "secret"}); !slices.Equal(got, []string{"web:acme", "web:eng", "web:root"}) {
		t.Errorf("root, denied web:st*, finds %v", got)
	}
	// Without such a rule nothing changes: acme/eng finds its chat.
	if got := search("acme/eng", map[string]any{"query": "secret"}); !slices.Equal(got, []string{"web:eng"}) {
		t.Errorf("acme/eng finds %v", got)
	}
}

// TestAddRouteWarnsOfAGlobMatchingNothing: add_route tells the agent, as
// route add tells the operator, when its match can match no chat it names
// (telegram:* matches no Telegram chat: "*" does not cross the "/" of
// telegram:group/1); a match that works carries no warning.
func TestAddRouteWarnsOfAGlobMatchingNothing(t *testing.T) {
	h := newHarness(t, nil)
	root := h.connect(t, "root", true)
	var got struct {
		Warning string `json:"warning"`
	}
	call(t, root, "add_route", map[string]any{"match": map[string]any{"chat_jid": "telegram:*"}, "target": "root", "seq": 50}).decode(t, &got)
	if !strings.Contains(got.Warning, "telegram:**") {
		t.Errorf("add_route chat_jid telegram:*: warning %q, want one suggesting telegram:**", got.Warning)
	}
	got.Warning = ""
	call(t, root, "add_route", map[string]any{"match": map[string]any{"chat_jid": "telegram:**"}, "target": "root", "seq": 51}).decode(t, &got)
	if got.Warning != "" {
		t.Errorf("add_route chat_jid telegram:**: warning %q, want none", got.Warning)
	}
}

// TestSetRoutesWarnsOfAGlobMatchingNothing: set_routes warns as add_route
// does, naming the route by its index; a table that works carries no warning.
func TestSetRoutesWarnsOfAGlobMatchingNothing(t *testing.T) {
	h := newHarness(t, nil)
	root := h.connect(t, "root", true)
	var got struct {
		Routes  []routing.Route `json:"routes"`
		Warning string          `json:"warning"`
	}
	call(t, root, "set_routes", map[string]any{"routes": []any{
		map[string]any{"match": map[string]any{"platform": "web"}, "target": "root"},
		map[string]any{"match": map[string]any{"chat_jid": "telegram:*"}, "target": "root", "seq": 50},
	}}).decode(t, &got)
	if len(got.Routes) != 2 || !strings.Contains(got.Warning, "routes[1]") || !strings.Contains(got.Warning, "telegram:**") || strings.Contains(got.Warning, "routes[0]") {
		t.Errorf("set_routes with chat_jid telegram:* as routes[1]: %+v, want both routes and a warning for routes[1] suggesting telegram:**", got)
	}
	got.Warning = ""
	call(t, root, "set_routes", map[string]any{"routes": []any{
		map[string]any{"match": map[string]any{"chat_jid": "telegram:**"}, "target": "root"},
	}}).decode(t, &got)
	if got.Warning != "" {
		t.Errorf("set_routes with chat_jid telegram:**: warning %q, want none", got.Warning)
	}
}

// A group's route for its whole chat may not go ahead of another group's
// route for the chat's threads by a glob (topic=t*), any more than ahead
// of one for a single thread: it would capture every thread that glob
// gives the other group.
func TestRouteEditKeepsOtherGroupsTopicGlobs(t *testing.T) {
	h := newHarness(t, nil)
	root := h.connect(t, "root", true)
	if r := call(t, root, "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme", "topic": "t*"}, "target": "root", "seq": -5}); r.IsError {
		t.Fatalf("root routing the t* threads of web:acme: %+v", r)
	}
	// acme's own route for thread "t", ahead: the glob's other threads stay root's.
	if r := call(t, root, "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:acme", "topic": "t"}, "target": "acme", "seq": -7}); r.IsError {
		t.Fatalf("root routing thread t of web:acme to acme: %+v", r)
	}
	if owner, _ := h.g.Table().Owner("web:acme", ""); owner != "acme" {
		t.Fatalf("web:acme is owned by %s, want acme", owner)
	}
	c := h.connect(t, "acme", true)
	for _, args := range []map[string]any{
		{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme"},
		{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme", "seq": -8},
		{"match": map[string]any{"chat_jid": "web:acme", "topic": "t1*"}, "target": "acme", "seq": -8},
	} {
		if r := call(t, c, "add_route", args); !r.IsError {
			t.Errorf("acme's add_route %v ahead of root's topic glob: %+v, want refused", args, r)
		}
		if r := call(t, c, "set_routes", map[string]any{"routes": []any{args}}); !r.IsError {
			t.Errorf("acme's set_routes %v ahead of root's topic glob: %+v, want refused", args, r)
		}
	}
	for _, topic := range []string{"t1", "t99"} {
		if owner, _ := h.g.Table().Owner("web:acme", topic); owner != "root" {
			t.Errorf("topic %s of web:acme is owned by %s, want root", topic, owner)
		}
	}
	// Behind root's route, and for topics the glob does not cover, acme may.
	for _, args := range []map[string]any{
		{"match": map[string]any{"chat_jid": "web:acme"}, "target": "acme", "seq": -4},
		{"match": map[string]any{"chat_jid": "web:acme", "topic": "x*"}, "target": "acme", "seq": -9},
	} {
		if r := call(t, c, "add_route", args); r.IsError {
			t.Errorf("acme's add_route %v: %+v", args, r)
		}
	}
}

// A subgroup's folder lies inside its parent's, whose agent may swap it for
// a symlink (to the data directory, or another group's folder). The
// subgroup's tools must not follow it: send_file would send the database,
// set_work write another group's work.md.
func TestFolderSwappedForSymlinkIsNotFollowed(t *testing.T) {
	h := newHarness(t, nil)
	h.waitSocket(t, "acme/eng") // its folder is made by then
	eng := filepath.Join(h.dir, "groups", "acme", "eng")
	if err := os.Rename(eng, eng+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.dir, eng); err != nil {
		t.Fatal(err)
	}
	c := h.connect(t, "acme/eng", true)
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"send_file", map[string]any{"chat_jid": "web:eng", "path": "switchboard.db"}},
		{"set_work", map[string]any{"content": "from eng"}},
		{"get_work", nil},
	} {
		if r := call(t, c, tc.tool, tc.args); !r.IsError || !strings.Contains(r.Text, "is a symlink") {
			t.Errorf("%s through the swapped folder: %+v; want an error saying it is a symlink", tc.tool, r)
		}
	}
	if _, err := os.Stat(filepath.Join(h.dir, "work.md")); !os.IsNotExist(err) {
		t.Errorf("set_work wrote into the data directory: %v", err)
	}
	if acts := h.all.actions(); len(acts) != 0 {
		t.Errorf("a file went out: %v", acts)
	}
}
