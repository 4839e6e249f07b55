package routing

import (
	"errors"
	"strings"
	"testing"

	"switchboard/groups"
)

func authTable(t *testing.T) *Table {
	return mustNew(t,
		Route{ID: 1, Seq: 1, Match: match("chat_jid", "web:lobby"), Target: "main"},
		Route{ID: 2, Seq: 2, Match: match("chat_jid", "telegram:group/1"), Target: "acme"},
		Route{ID: 3, Seq: 3, Match: match("chat_jid", "web:ops", "topic", "7"), Target: "acme/eng"},
		Route{ID: 4, Seq: 4, Match: match("chat_jid", "web:ops"), Target: "main"},
		Route{ID: 5, Seq: 5, Match: match("platform", "slack"), Target: "acme"},
	)
}

func TestCheckAdd(t *testing.T) {
	tab := authTable(t)
	cases := []struct {
		name    string
		caller  groups.Folder
		tier    int
		route   Route
		wantErr string // substring; "" means allowed
	}{
		{"operator catch-all", "root", 0, Route{Target: "main"}, ""},
		{"operator anything", "root", 0, Route{Match: match("chat_jid", "telegram:**"), Target: "acme/eng"}, ""},
		{"tier 1 catch-all refused", "main", 1, Route{Target: "main"},
			"only routes that pin chat_jid to one chat it owns"},
		{"tier 1 platform catch-all refused", "main", 1, Route{Match: match("platform", "web"), Target: "main"},
			"add chat_jid=<chat JID> to the match"},
		{"platform and room gets a hint", "main", 1, Route{Match: match("platform", "web", "room", "lobby"), Target: "main"},
			"use chat_jid=web:lobby instead of platform and room"},
		{"chat_jid glob refused", "main", 1, Route{Match: match("chat_jid", "web:*"), Target: "main"},
			`chat_jid "web:*" is a glob`},
		{"chat owned by another group refused", "main", 1, Route{Match: match("chat_jid", "telegram:group/1"), Target: "main"},
			`chat "telegram:group/1" is owned by group "acme", outside the subtree of group "main"`},
		{"own chat, own target", "main", 1, Route{Match: match("chat_jid", "web:lobby", "verb", "mention"), Target: "main"}, ""},
		{"own chat, sender glob narrows", "main", 1, Route{Match: match("chat_jid", "web:lobby", "sender", "web:user/*"), Target: "main", Mode: Observe}, ""},
		{"own chat, target outside subtree", "main", 1, Route{Match: match("chat_jid", "web:lobby"), Target: "acme"},
			`target "acme" is outside it`},
		{"target sharing a name prefix is outside", "main", 1, Route{Match: match("chat_jid", "web:lobby"), Target: "mainx"},
			`target "mainx" is outside it`},
		{"parent routes its chat to a child", "acme", 1, Route{Match: match("chat_jid", "telegram:group/1"), Target: "acme/eng"}, ""},
		{"child may not take the parent's chat", "acme/eng", 2, Route{Match: match("chat_jid", "telegram:group/1"), Target: "acme/eng"},
			`owned by group "acme"`},
		{"chat under another group's catch-all", "main", 1, Route{Match: match("chat_jid", "slack:T1/channel/C1"), Target: "main"},
			`owned by group "acme"`},
		{"unowned chat refused", "main", 1, Route{Match: match("chat_jid", "web:new"), Target: "main"},
			`no route owns chat "web:new" yet`},
		{"not a JID", "main", 1, Route{Match: match("chat_jid", "lobby"), Target: "main"},
			"invalid JID"},
		{"topic owned by another group", "main", 1, Route{Match: match("chat_jid", "web:ops", "topic", "7"), Target: "main"},
			`topic "7" of chat "web:ops" is owned by group "acme/eng"`},
		{"free topic of own chat", "main", 1, Route{Match: match("chat_jid", "web:ops", "topic", "8"), Target: "main"}, ""},
		{"own chat ahead of another group's topic route", "main", 1, Route{Seq: -1, Match: match("chat_jid", "web:ops"), Target: "main"},
			`would take topic "7" of chat "web:ops" from group "acme/eng"`},
		{"own chat ahead of another group's topic, sender-narrowed", "main", 1, Route{Match: match("chat_jid", "web:ops", "sender", "web:user/ann"), Target: "main"},
			`would take topic "7"`},
		{"own chat after another group's topic route", "main", 1, Route{Seq: 3, Match: match("chat_jid", "web:ops"), Target: "main"}, ""},
		{"non-zero tier is never operator", "root", 3, Route{Target: "root"}, "only routes that pin chat_jid to one chat it owns"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tab.CheckAdd(c.caller, c.tier, c.route)
			checkAuth(t, err, c.wantErr)
		})
	}
}

func TestCheckDelete(t *testing.T) {
	tab := authTable(t)
	routes := map[int64]Route{}
	for _, r := range tab.Routes() {
		routes[r.ID] = r
	}
	cases := []struct {
		name    string
		caller  groups.Folder
		tier    int
		id      int64
		wantErr string
	}{
		{"operator deletes anything", "root", 0, 5, ""},
		{"own pinned route", "main", 1, 1, ""},
		{"own route in a chat owned by self", "main", 1, 4, ""},
		{"another group's route", "main", 1, 2, `target "acme" is outside it`},
		{"own catch-all is not pinned", "acme", 1, 5, "only routes that pin chat_jid to one chat it owns; ask the operator to delete it"},
		{"child's route in a chat the caller does not own", "acme", 1, 3, `chat "web:ops" is owned by group "main"`},
		{"parent deletes child's route in its own chat", "acme", 1, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tab.CheckDelete(c.caller, c.tier, routes[c.id])
			checkAuth(t, err, c.wantErr)
		})
	}
}

func checkAuth(t *testing.T, err error, wantErr string) {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("err = %v, want it to contain %q", err, wantErr)
	}
	if !errors.Is(err, ErrForbidden) {
		t.Errorf("err %v does not wrap ErrForbidden", err)
	}
}
