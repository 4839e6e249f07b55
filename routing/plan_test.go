package routing

import (
	"fmt"
	"testing"

	"switchboard/adapters"
	"switchboard/groups"
)

// A chat's plan leaves out the routes its chat rules out and stops at the
// first route that takes every message in it; past maxPlanEntries the table
// resolves through its three lists instead. Both answer as the routes read
// in order (naiveResolve).
func TestPlansResolveLikeTheRoutesInOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		early int // sender routes ordered before every chat's own
		plans bool
	}{
		{"planned", 3, true},
		{"past the bound", maxPlanEntries/2000 + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var routes []Route
			id := int64(0)
			add := func(seq int, m map[string]string, target groups.Folder) {
				id++
				routes = append(routes, Route{ID: id, Seq: seq, Match: m, Target: target})
			}
			for i := range tc.early {
				add(0, match("sender", fmt.Sprintf("telegram:user/vip%d", i)), "vip")
			}
			add(0, match("platform", "discord", "verb", "mention"), "discord-mentions")
			add(0, match("chat_jid", "telegram:group/1*", "topic", "ops"), "ops")
			for i := range 2000 {
				add(10, match("chat_jid", fmt.Sprintf("telegram:group/%d", i), "verb", "mention"), groups.Folder(fmt.Sprintf("m%d", i)))
				add(10, match("platform", "telegram", "room", fmt.Sprintf("group/%d", i)), groups.Folder(fmt.Sprintf("g%d", i)))
			}
			add(20, match("platform", "telegram"), "telegram")
			add(30, nil, "main")
			tab := mustNew(t, routes...)
			if got := len(tab.plans.byChat) > 0; got != tc.plans {
				t.Fatalf("table has plans: %v, want %v", got, tc.plans)
			}
			sorted := naiveSort(routes)
			for _, m := range []Message{
				{ChatJID: "telegram:group/12", Sender: "telegram:user/vip1", Verb: "message"},
				{ChatJID: "telegram:group/12", Sender: "telegram:user/ann", Verb: "mention"},
				{ChatJID: "telegram:group/12", Sender: "telegram:user/ann", Verb: "message", Topic: "ops"},
				{ChatJID: "telegram:group/7", Sender: "telegram:user/ann", Verb: "message", Topic: "ops"},
				{ChatJID: "telegram:group/7", Sender: "telegram:user/ann", Verb: "message"},
				{ChatJID: "telegram:group/99999", Sender: "telegram:user/ann", Verb: "mention"},
				{ChatJID: "discord:1/2", Sender: "discord:user/ann", Verb: "mention"},
				{ChatJID: "web:lobby", Sender: "web:user/ann", Verb: "message"},
			} {
				want, _, wantOK := naiveResolve(sorted, m, false)
				if got, ok := tab.Resolve(m); ok != wantOK || got.ID != want.ID {
					t.Errorf("Resolve(%+v) = route %d (%s) %v, want %d (%s)", m, got.ID, got.Target, ok, want.ID, want.Target)
				}
				owner, _, _ := naiveResolve(sorted, Message{ChatJID: m.ChatJID, Topic: m.Topic}, true)
				if got, _ := tab.Owner(adapters.JID(m.ChatJID), m.Topic); got != owner.Target {
					t.Errorf("Owner(%s, %q) = %s, want %s", m.ChatJID, m.Topic, got, owner.Target)
				}
			}
		})
	}
}
