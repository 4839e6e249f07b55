package routing

import (
	"context"
	"errors"
	"slices"
	"testing"

	"switchboard/adapters"
	"switchboard/groups"
)

func mustNew(t testing.TB, routes ...Route) *Table {
	t.Helper()
	tab, err := New(routes)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tab
}

func match(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func TestKeyIndexesFollowMatchKeys(t *testing.T) {
	idx := map[string]int{KeyPlatform: kPlatform, KeyRoom: kRoom, KeyChatJID: kChatJID, KeySender: kSender, KeyVerb: kVerb, KeyTopic: kTopic}
	if len(MatchKeys) != numKeys {
		t.Fatalf("MatchKeys has %d keys, the index %d", len(MatchKeys), numKeys)
	}
	for i, k := range MatchKeys {
		if idx[k] != i {
			t.Errorf("key %s is MatchKeys[%d] but index %d", k, i, idx[k])
		}
	}
}

func TestResolveKeys(t *testing.T) {
	msg := Message{ChatJID: "telegram:group/42", Sender: "telegram:user/7", Verb: "mention", Topic: "99"}
	cases := []struct {
		name  string
		match map[string]string
		msg   Message
		want  bool
	}{
		{"catch-all", nil, msg, true},
		{"platform", match("platform", "telegram"), msg, true},
		{"platform other", match("platform", "web"), msg, false},
		{"platform glob", match("platform", "tele*"), msg, true},
		{"room", match("room", "group/42"), msg, true},
		{"room star does not cross slash", match("room", "*"), msg, false},
		{"room segments", match("room", "group/*"), msg, true},
		{"room other", match("room", "group/43"), msg, false},
		{"platform and room", match("platform", "telegram", "room", "group/42"), msg, true},
		{"platform and room other", match("platform", "telegram", "room", "user/42"), msg, false},
		{"chat_jid", match("chat_jid", "telegram:group/42"), msg, true},
		{"chat_jid other", match("chat_jid", "telegram:group/4"), msg, false},
		{"chat_jid star", match("chat_jid", "telegram:*"), msg, false},
		{"chat_jid double star", match("chat_jid", "telegram:**"), msg, true},
		{"chat_jid double star other platform", match("chat_jid", "web:**"), msg, false},
		{"sender", match("sender", "telegram:user/7"), msg, true},
		{"sender glob", match("sender", "telegram:user/*"), msg, true},
		{"sender other", match("sender", "telegram:user/8"), msg, false},
		{"verb", match("verb", "mention"), msg, true},
		{"verb other", match("verb", "message"), msg, false},
		{"topic", match("topic", "99"), msg, true},
		{"topic star", match("topic", "*"), msg, true},
		{"topic other", match("topic", "98"), msg, false},
		{"topic star matches no topic", match("topic", "*"), Message{ChatJID: "web:lobby"}, true},
		{"topic literal needs a topic", match("topic", "99"), Message{ChatJID: "web:lobby"}, false},
		{"all keys must match", match("platform", "telegram", "verb", "message"), msg, false},
		{"every key", match("platform", "telegram", "room", "group/*", "chat_jid", "telegram:**", "sender", "*:user/7", "verb", "mention", "topic", "9*"), msg, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab := mustNew(t, Route{ID: 1, Match: c.match, Target: "main"})
			_, ok := tab.Resolve(c.msg)
			if ok != c.want {
				t.Errorf("Resolve matched = %v, want %v", ok, c.want)
			}
			if x := tab.Explain(c.msg); x.Matched != c.want {
				t.Errorf("Explain matched = %v, want %v", x.Matched, c.want)
			}
		})
	}
}

func TestResolveOrder(t *testing.T) {
	cases := []struct {
		name   string
		routes []Route
		want   groups.Folder
	}{
		{"lower seq wins", []Route{
			{ID: 1, Seq: 2, Target: "late"},
			{ID: 2, Seq: 1, Target: "early"},
		}, "early"},
		{"seq tie: lower id wins", []Route{
			{ID: 9, Seq: 1, Target: "nine"},
			{ID: 3, Seq: 1, Target: "three"},
		}, "three"},
		{"seq beats id", []Route{
			{ID: 1, Seq: 5, Target: "one"},
			{ID: 2, Seq: 0, Target: "two"},
		}, "two"},
		{"negative seq first", []Route{
			{ID: 1, Seq: 0, Target: "zero"},
			{ID: 2, Seq: -1, Target: "minus"},
		}, "minus"},
		{"full tie keeps input order", []Route{
			{Target: "first"},
			{Target: "second"},
		}, "first"},
		{"first match wins over a more specific later route", []Route{
			{ID: 1, Seq: 1, Match: match("platform", "web"), Target: "broad"},
			{ID: 2, Seq: 2, Match: match("chat_jid", "web:lobby"), Target: "specific"},
		}, "broad"},
		{"earlier non-matching route is skipped", []Route{
			{ID: 1, Seq: 1, Match: match("chat_jid", "web:other"), Target: "other"},
			{ID: 2, Seq: 2, Match: match("platform", "web"), Target: "web"},
		}, "web"},
		{"wildcard before indexed chat route", []Route{
			{ID: 2, Seq: 2, Match: match("chat_jid", "web:lobby"), Target: "chat"},
			{ID: 1, Seq: 1, Match: match("sender", "web:user/*"), Target: "wild"},
		}, "wild"},
		{"platform route before chat route", []Route{
			{ID: 2, Seq: 2, Match: match("chat_jid", "web:lobby"), Target: "chat"},
			{ID: 1, Seq: 1, Match: match("chat_jid", "web:**"), Target: "platform"},
		}, "platform"},
	}
	msg := Message{ChatJID: "web:lobby", Sender: "web:user/ann", Verb: "message"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab := mustNew(t, c.routes...)
			r, ok := tab.Resolve(msg)
			if !ok || r.Target != c.want {
				t.Errorf("Resolve = %q, %v; want %q", r.Target, ok, c.want)
			}
		})
	}
}

func TestResolveUnrouted(t *testing.T) {
	tab := mustNew(t, Route{ID: 1, Match: match("platform", "telegram"), Target: "main"})
	if r, ok := tab.Resolve(Message{ChatJID: "web:lobby"}); ok {
		t.Errorf("Resolve = %+v, want unrouted", r)
	}
	if r, ok := mustNew(t).Resolve(Message{ChatJID: "web:lobby"}); ok {
		t.Errorf("empty table Resolve = %+v, want unrouted", r)
	}
}

func TestResolveModePassthrough(t *testing.T) {
	tab := mustNew(t,
		Route{ID: 1, Match: match("chat_jid", "web:quiet"), Target: "main", Mode: Observe},
		Route{ID: 2, Match: match("chat_jid", "web:loud"), Target: "main", Mode: Trigger},
		Route{ID: 3, Match: match("chat_jid", "web:default"), Target: "main"},
	)
	for chat, want := range map[string]Mode{"web:quiet": Observe, "web:loud": Trigger, "web:default": Trigger} {
		r, ok := tab.Resolve(Message{ChatJID: adapters.JID(chat)})
		if !ok || r.Mode != want {
			t.Errorf("Resolve(%s).Mode = %q, %v; want %q", chat, r.Mode, ok, want)
		}
		if x := tab.Explain(Message{ChatJID: adapters.JID(chat)}); x.Mode != want {
			t.Errorf("Explain(%s).Mode = %q, want %q", chat, x.Mode, want)
		}
	}
}

func TestOwner(t *testing.T) {
	cases := []struct {
		name      string
		routes    []Route
		chat      string
		topic     string
		want      groups.Folder
		wantOwned bool
	}{
		{
			// CONTRACT §5: the owner is the first route that matches ignoring
			// sender and verb, so a sender-specific route ordered first makes
			// its target the owner, although most messages go to main.
			name: "sender-specific route first owns the chat",
			routes: []Route{
				{ID: 1, Seq: 1, Match: match("chat_jid", "web:lobby", "sender", "web:user/boss"), Target: "boss"},
				{ID: 2, Seq: 2, Match: match("chat_jid", "web:lobby"), Target: "main"},
			},
			chat: "web:lobby", want: "boss", wantOwned: true,
		},
		{
			// A mention-only folder owns the chat even though plain messages
			// are only observed by another folder (LESSONS: routing and authority).
			name: "mention-only route owns the chat",
			routes: []Route{
				{ID: 1, Seq: 1, Match: match("chat_jid", "web:lobby", "verb", "mention"), Target: "helper"},
				{ID: 2, Seq: 2, Match: match("chat_jid", "web:lobby"), Target: "archive", Mode: Observe},
			},
			chat: "web:lobby", want: "helper", wantOwned: true,
		},
		{
			name: "observe route owns",
			routes: []Route{
				{ID: 1, Match: match("platform", "web"), Target: "main", Mode: Observe},
			},
			chat: "web:lobby", want: "main", wantOwned: true,
		},
		{
			name: "topic route does not own the chat itself",
			routes: []Route{
				{ID: 1, Seq: 1, Match: match("chat_jid", "web:lobby", "topic", "7"), Target: "ops"},
				{ID: 2, Seq: 2, Match: match("platform", "web"), Target: "main"},
			},
			chat: "web:lobby", want: "main", wantOwned: true,
		},
		{
			name: "topic route owns its topic",
			routes: []Route{
				{ID: 1, Seq: 1, Match: match("chat_jid", "web:lobby", "topic", "7"), Target: "ops"},
				{ID: 2, Seq: 2, Match: match("platform", "web"), Target: "main"},
			},
			chat: "web:lobby", topic: "7", want: "ops", wantOwned: true,
		},
		{
			name:   "unowned",
			routes: []Route{{ID: 1, Match: match("platform", "telegram"), Target: "main"}},
			chat:   "web:lobby",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := mustNew(t, c.routes...).Owner(adapters.JID(c.chat), c.topic)
			if got != c.want || ok != c.wantOwned {
				t.Errorf("Owner(%q, %q) = %q, %v; want %q, %v", c.chat, c.topic, got, ok, c.want, c.wantOwned)
			}
		})
	}
}

// The route that triggers and the owner are separate answers.
func TestOwnerSeparateFromResolve(t *testing.T) {
	tab := mustNew(t,
		Route{ID: 1, Seq: 1, Match: match("chat_jid", "web:lobby", "sender", "web:user/boss"), Target: "boss"},
		Route{ID: 2, Seq: 2, Match: match("chat_jid", "web:lobby"), Target: "main"},
	)
	r, _ := tab.Resolve(Message{ChatJID: "web:lobby", Sender: "web:user/ann", Verb: "message"})
	owner, _ := tab.Owner("web:lobby", "")
	if r.Target != "main" || owner != "boss" {
		t.Errorf("ann's message goes to %q, owner %q; want main and boss", r.Target, owner)
	}
	x := tab.Explain(Message{ChatJID: "web:lobby", Sender: "web:user/ann"})
	if x.Folder != "main" || x.Owner != "boss" {
		t.Errorf("Explain folder %q owner %q; want main and boss", x.Folder, x.Owner)
	}
}

func TestRoutesSortedAndCopied(t *testing.T) {
	in := []Route{
		{ID: 3, Seq: 1, Target: "c", Match: match("platform", "web")},
		{ID: 1, Seq: 2, Target: "a"},
		{ID: 2, Seq: 1, Target: "b"},
	}
	tab := mustNew(t, in...)
	in[0].Match["platform"] = "telegram" // the table keeps its own copy
	got := tab.Routes()
	ids := []int64{got[0].ID, got[1].ID, got[2].ID}
	if !slices.Equal(ids, []int64{2, 3, 1}) {
		t.Errorf("Routes ids = %v, want [2 3 1]", ids)
	}
	if got[1].Match["platform"] != "web" || got[0].Mode != Trigger || got[0].Match == nil {
		t.Errorf("Routes not normalized or not copied: %+v", got)
	}
	got[1].Match["platform"] = "slack"
	if again := tab.Routes(); again[1].Match["platform"] != "web" {
		t.Errorf("changing Routes() output changed the table: %+v", again[1])
	}
	if tab.Len() != 3 {
		t.Errorf("Len = %d, want 3", tab.Len())
	}
}

type fakeStore struct {
	routes []Route
	err    error
}

func (f fakeStore) ListRoutes(context.Context) ([]Route, error) { return f.routes, f.err }

func TestLoad(t *testing.T) {
	tab, err := Load(context.Background(), fakeStore{routes: []Route{{ID: 1, Target: "main"}}})
	if err != nil || tab.Len() != 1 {
		t.Fatalf("Load = %v, %v", tab, err)
	}
	boom := errors.New("boom")
	if _, err := Load(context.Background(), fakeStore{err: boom}); !errors.Is(err, boom) {
		t.Errorf("Load error = %v, want it to wrap the store error", err)
	}
	if _, err := Load(context.Background(), fakeStore{routes: []Route{{ID: 4, Target: "Bad"}}}); !errors.Is(err, ErrInvalidRoute) {
		t.Errorf("Load of a bad route = %v, want ErrInvalidRoute", err)
	}
}

func TestNilTableIsEmpty(t *testing.T) {
	var tab *Table
	if _, ok := tab.Resolve(Message{ChatJID: "web:lobby"}); ok {
		t.Error("nil table resolved a message")
	}
	if _, ok := tab.Owner("web:lobby", ""); ok {
		t.Error("nil table owns a chat")
	}
	if x := tab.Explain(Message{ChatJID: "web:lobby"}); x.Matched || tab.Len() != 0 || len(tab.Routes()) != 0 {
		t.Errorf("nil table is not empty: %+v", x)
	}
	if err := tab.CheckAdd("main", 1, Route{Match: match("chat_jid", "web:lobby"), Target: "main"}); !errors.Is(err, ErrForbidden) {
		t.Errorf("CheckAdd on a nil table = %v, want ErrForbidden (no owner)", err)
	}
}
