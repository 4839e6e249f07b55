package routing

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/groups"
)

// naiveSort orders routes by (seq, id), ties in input order.
func naiveSort(routes []Route) []Route {
	sorted := slices.Clone(routes)
	slices.SortStableFunc(sorted, func(a, b Route) int {
		return cmp.Or(cmp.Compare(a.Seq, b.Seq), cmp.Compare(a.ID, b.ID))
	})
	return sorted
}

// naiveResolve is the contract read literally: try each route of sorted in
// turn, every given key must match. It shares only GlobMatch with the table
// (GlobMatch has its own reference test).
func naiveResolve(sorted []Route, m Message, ownerOnly bool) (Route, int, bool) {
	platform, room, _ := strings.Cut(string(m.ChatJID), ":")
	vals := map[string]string{KeyPlatform: platform, KeyRoom: room, KeyChatJID: string(m.ChatJID), KeySender: string(m.Sender), KeyVerb: string(m.Verb), KeyTopic: m.Topic}
next:
	for i, r := range sorted {
		for k, g := range r.Match {
			if ownerOnly && (k == KeySender || k == KeyVerb) {
				continue
			}
			if !GlobMatch(g, vals[k]) {
				continue next
			}
		}
		return r, i, true
	}
	return Route{}, -1, false
}

var (
	eqPlatforms = []string{"telegram", "web", "slack", "discord"}
	eqRooms     = []string{"group/1", "group/2", "user/3", "lobby", "T1/channel/C1"}
	eqGlobs     = map[string][]string{
		KeyPlatform: {"*", "**", "tele*", "w*b", "*a*"},
		KeyRoom:     {"*", "**", "group/*", "*/channel/*", "lob*", "**1"},
		KeyChatJID:  {"**", "telegram:**", "web:*", "*:group/*", "slack:T1/**", "*:lobby", "tele*:**", "web:lob*"},
		KeySender:   {"*:user/*", "telegram:user/*", "**"},
		KeyVerb:     {"m*", "*"},
		KeyTopic:    {"*", "**", "7*"},
	}
)

func eqLiteral(rng *rand.Rand, key string) string {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	switch key {
	case KeyPlatform:
		return pick(eqPlatforms)
	case KeyRoom:
		return pick(eqRooms)
	case KeyChatJID:
		return pick(eqPlatforms) + ":" + pick(eqRooms)
	case KeySender:
		return pick(eqPlatforms) + ":user/" + fmt.Sprint(rng.IntN(3))
	case KeyVerb:
		return pick([]string{"message", "mention"})
	default:
		return pick([]string{"7", "8", "a/b"})
	}
}

func randomRoute(rng *rand.Rand, i int) Route {
	m := map[string]string{}
	for _, k := range MatchKeys {
		p := 0.3
		if k == KeyChatJID || k == KeyPlatform {
			p = 0.5 // exercise the indexes
		}
		if rng.Float64() >= p {
			continue
		}
		if rng.IntN(3) == 0 {
			g := eqGlobs[k]
			m[k] = g[rng.IntN(len(g))]
		} else {
			m[k] = eqLiteral(rng, k)
		}
	}
	mode := []Mode{"", Trigger, Observe}[rng.IntN(3)]
	return Route{ID: int64(rng.IntN(20)), Seq: rng.IntN(6) - 1, Match: m, Target: groups.Folder(fmt.Sprintf("r%d", i)), Mode: mode}
}

func randomMessage(rng *rand.Rand) Message {
	chat := eqLiteral(rng, KeyChatJID)
	switch rng.IntN(8) {
	case 0:
		chat = "matrix:room/1"
	case 1:
		chat = "nocolon"
	}
	m := Message{ChatJID: adapters.JID(chat), Sender: adapters.JID(eqLiteral(rng, KeySender)), Verb: adapters.Verb(eqLiteral(rng, KeyVerb))}
	if rng.IntN(2) == 0 {
		m.Topic = eqLiteral(rng, KeyTopic)
	}
	return m
}

func TestIndexedMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	indexed := 0
	for set := range 300 {
		routes := make([]Route, rng.IntN(40))
		for i := range routes {
			routes[i] = randomRoute(rng, i) // targets are unique: r<i>
		}
		tab := mustNew(t, routes...)
		indexed += len(tab.byChat) + len(tab.byPlatform)
		sorted := naiveSort(routes)
		for range 50 {
			m := randomMessage(rng)
			want, pos, wantOK := naiveResolve(sorted, m, false)
			got, ok := tab.Resolve(m)
			if ok != wantOK || got.Target != want.Target {
				t.Fatalf("set %d, %+v: Resolve = %q %v, naive %q %v\nroutes: %+v", set, m, got.Target, ok, want.Target, wantOK, routes)
			}
			x := tab.Explain(m)
			if x.Matched != wantOK || x.Folder != want.Target || (wantOK && len(x.Rejected) != pos) || (!wantOK && len(x.Rejected) != len(routes)) {
				t.Fatalf("set %d, %+v: Explain = %+v, naive %q at %d", set, m, x, want.Target, pos)
			}
			wantOwner, _, ownedOK := naiveResolve(sorted, m, true)
			owner, owned := tab.Owner(m.ChatJID, m.Topic)
			if owned != ownedOK || owner != wantOwner.Target {
				t.Fatalf("set %d, %+v: Owner = %q %v, naive %q %v", set, m, owner, owned, wantOwner.Target, ownedOK)
			}
		}
	}
	if indexed == 0 {
		t.Fatal("no route was indexed by chat or platform: the test does not exercise the index")
	}
}
