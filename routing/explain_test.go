package routing

import (
	"slices"
	"testing"

	"switchboard/groups"
)

func TestExplain(t *testing.T) {
	routes := []Route{
		{ID: 1, Seq: 1, Match: match("platform", "web"), Target: "webonly"},
		{ID: 2, Seq: 2, Match: match("chat_jid", "telegram:group/1", "sender", "telegram:user/9"), Target: "boss"},
		{ID: 3, Seq: 3, Match: match("chat_jid", "telegram:*", "verb", "mention"), Target: "star"},
		{ID: 4, Seq: 4, Match: match("chat_jid", "telegram:group/1"), Target: "main", Mode: Observe},
		{ID: 5, Seq: 5, Target: "fallback"},
	}
	tab := mustNew(t, routes...)
	cases := []struct {
		name       string
		msg        Message
		wantRoute  int64 // 0: unmatched
		wantMode   Mode
		wantOwner  groups.Folder
		wantReason []string
	}{
		{
			name:      "observe route after three rejections",
			msg:       Message{ChatJID: "telegram:group/1", Sender: "telegram:user/5", Verb: "mention"},
			wantRoute: 4, wantMode: Observe, wantOwner: "boss",
			wantReason: []string{
				`platform "telegram" does not match "web"`,
				`sender "telegram:user/5" does not match "telegram:user/9"`,
				`chat_jid "telegram:group/1" does not match "telegram:*"`,
			},
		},
		{
			name:      "first route wins: nothing rejected",
			msg:       Message{ChatJID: "web:lobby"},
			wantRoute: 1, wantMode: Trigger, wantOwner: "webonly",
			wantReason: nil,
		},
		{
			name:      "first failing key in MatchKeys order is reported",
			msg:       Message{ChatJID: "slack:T1/channel/C1", Verb: "message"},
			wantRoute: 5, wantMode: Trigger, wantOwner: "fallback",
			wantReason: []string{
				`platform "slack" does not match "web"`,
				`chat_jid "slack:T1/channel/C1" does not match "telegram:group/1"`,
				`chat_jid "slack:T1/channel/C1" does not match "telegram:*"`,
				`chat_jid "slack:T1/channel/C1" does not match "telegram:group/1"`,
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := tab.Explain(c.msg)
			if !x.Matched || x.Route.ID != c.wantRoute || x.Folder != x.Route.Target || x.Mode != c.wantMode || x.Owner != c.wantOwner {
				t.Errorf("Explain = matched %v route %d folder %q mode %q owner %q; want route %d mode %q owner %q",
					x.Matched, x.Route.ID, x.Folder, x.Mode, x.Owner, c.wantRoute, c.wantMode, c.wantOwner)
			}
			var reasons []string
			for i, r := range x.Rejected {
				reasons = append(reasons, r.Reason)
				if r.Route.ID != routes[i].ID {
					t.Errorf("rejection %d is route %d, want %d (in order)", i, r.Route.ID, routes[i].ID)
				}
			}
			if !slices.Equal(reasons, c.wantReason) {
				t.Errorf("reasons = %q\nwant %q", reasons, c.wantReason)
			}
			if r, _ := tab.Resolve(c.msg); r.ID != x.Route.ID {
				t.Errorf("Resolve chose route %d, Explain %d", r.ID, x.Route.ID)
			}
		})
	}
}

func TestExplainUnmatchedListsAll(t *testing.T) {
	tab := mustNew(t,
		Route{ID: 1, Match: match("verb", "mention"), Target: "main"},
		Route{ID: 2, Match: match("topic", "*"), Target: "main"},
	)
	x := tab.Explain(Message{ChatJID: "web:lobby", Verb: "message", Topic: "a/b"})
	// Unrouted, yet the chat has an owner: the mention-only route owns it.
	if x.Matched || x.Folder != "" || x.Mode != "" || x.Owner != "main" {
		t.Errorf("Explain = %+v, want unmatched with no folder or mode, owner main", x)
	}
	want := []string{`verb "message" does not match "mention"`, `topic "a/b" does not match "*"`}
	var got []string
	for _, r := range x.Rejected {
		got = append(got, r.Reason)
	}
	if !slices.Equal(got, want) {
		t.Errorf("reasons = %q, want %q", got, want)
	}
}
