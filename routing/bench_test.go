package routing

import (
	"fmt"
	"testing"
	"time"

	"switchboard/groups"
)

// benchRoutes builds n routes: all but 50 pin a literal chat JID (spread over
// four platforms), 25 glob routes come first (narrow: sender, verb, topic or
// DM specific, so they rarely win and own no group chat) and 25 come last
// (platform fallbacks and a catch-all).
func benchRoutes(n int) []Route {
	platforms := []string{"telegram", "discord", "slack", "web"}
	routes := make([]Route, 0, n)
	id := int64(0)
	add := func(seq int, m map[string]string, target groups.Folder) {
		id++
		routes = append(routes, Route{ID: id, Seq: seq, Match: m, Target: target})
	}
	early := []map[string]string{
		match("sender", "*:user/vip*", "topic", "vip-*"),
		match("platform", "telegram", "room", "user/*", "sender", "telegram:user/9*"),
		match("chat_jid", "slack:T1/**", "verb", "mention", "topic", "ops*"),
		match("room", "dm/*", "verb", "mention"),
		match("platform", "discord", "topic", "incident-*"),
	}
	for i := range 25 {
		add(0, early[i%len(early)], "triage")
	}
	for i := range n - 50 {
		p := platforms[i%len(platforms)]
		add(10, match("chat_jid", fmt.Sprintf("%s:group/%d", p, i)), groups.Folder(fmt.Sprintf("g%d", i%100)))
	}
	late := []map[string]string{
		match("platform", "telegram", "verb", "mention"),
		match("chat_jid", "slack:**"),
		match("sender", "web:user/*", "verb", "mention"),
		match("platform", "w*", "room", "lobby*"),
		match("topic", "support-*"),
	}
	for i := range 24 {
		add(100, late[i%len(late)], "fallback")
	}
	add(1000, nil, "main")
	return routes
}

func benchResolve(b *testing.B, tab *Table, m Message, want groups.Folder) {
	b.Helper()
	if r, ok := tab.Resolve(m); !ok || r.Target != want {
		b.Fatalf("Resolve(%+v) = %q %v, want %q", m, r.Target, ok, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		tab.Resolve(m)
	}
}

// table10 is the ten-route table that BenchmarkResolve10 resolves in, and
// the message; Resolve at 10,000 routes is measured against it.
func table10(b *testing.B) (*Table, Message) {
	tab := mustNew(b,
		Route{ID: 1, Seq: 0, Match: match("sender", "*:user/vip*"), Target: "triage"},
		Route{ID: 2, Seq: 1, Match: match("chat_jid", "telegram:group/1"), Target: "a"},
		Route{ID: 3, Seq: 1, Match: match("chat_jid", "telegram:group/2"), Target: "b"},
		Route{ID: 4, Seq: 1, Match: match("chat_jid", "web:lobby", "verb", "mention"), Target: "c"},
		Route{ID: 5, Seq: 1, Match: match("chat_jid", "slack:T1/channel/C1"), Target: "d"},
		Route{ID: 6, Seq: 1, Match: match("platform", "discord", "room", "1/2"), Target: "e"},
		Route{ID: 7, Seq: 2, Match: match("chat_jid", "telegram:**", "verb", "mention"), Target: "f"},
		Route{ID: 8, Seq: 2, Match: match("platform", "web"), Target: "g", Mode: Observe},
		Route{ID: 9, Seq: 3, Match: match("topic", "*"), Target: "h"},
		Route{ID: 10, Seq: 4, Target: "main"},
	)
	return tab, Message{ChatJID: "web:lobby", Sender: "web:user/ann", Verb: "mention"}
}

func BenchmarkResolve10(b *testing.B) {
	tab, m := table10(b)
	benchResolve(b, tab, m, "c")
}

// resolveVs10 measures Resolve(m) in tab against Resolve at ten routes
// (table10) in the same run, in alternating rounds so that both see the
// same machine, and reports both and their ratio (x-floor).
func resolveVs10(b *testing.B, tab *Table, m Message, want groups.Folder) {
	b.Helper()
	small, sm := table10(b)
	if r, ok := tab.Resolve(m); !ok || r.Target != want {
		b.Fatalf("Resolve(%+v) = %q %v, want %q", m, r.Target, ok, want)
	}
	const round = 1000
	var big, floor time.Duration
	n := 0
	for b.Loop() {
		n++
		if n%round != 0 {
			continue
		}
		start := time.Now()
		for range round {
			tab.Resolve(m)
		}
		mid := time.Now()
		for range round {
			small.Resolve(sm)
		}
		big, floor = big+mid.Sub(start), floor+time.Since(mid)
	}
	if floor > 0 {
		rounds := float64(n / round * round)
		b.ReportMetric(float64(big.Nanoseconds())/rounds, "resolve-ns")
		b.ReportMetric(float64(floor.Nanoseconds())/rounds, "floor-resolve-ns")
		b.ReportMetric(float64(big)/float64(floor), "x-floor")
	}
}

// BenchmarkResolve10000 resolves at 10,000 routes; the chat case reports
// its cost against ten routes (resolveVs10), the goal being 2x at most.
func BenchmarkResolve10000(b *testing.B) {
	tab := mustNew(b, benchRoutes(10000)...)
	b.Run("chat", func(b *testing.B) {
		// A chat in the middle of the literal routes.
		resolveVs10(b, tab, Message{ChatJID: "slack:group/4998", Sender: "slack:T1/user/U1", Verb: "message", Topic: "1700000000.0001"}, "g98")
	})
	b.Run("wildcard", func(b *testing.B) {
		// No chat or platform route: only the wildcard list, down to the catch-all.
		benchResolve(b, tab, Message{ChatJID: "matrix:room/1", Sender: "matrix:user/1", Verb: "message"}, "main")
	})
}

func BenchmarkOwner10000(b *testing.B) {
	tab := mustNew(b, benchRoutes(10000)...)
	if got, ok := tab.Owner("telegram:group/5000", ""); !ok || got != "g0" {
		b.Fatalf("Owner = %q %v, want g0", got, ok)
	}
	b.ReportAllocs()
	for b.Loop() {
		tab.Owner("telegram:group/5000", "")
	}
}

// BenchmarkExplain10000 is the linear scan, for comparison with Resolve.
func BenchmarkExplain10000(b *testing.B) {
	tab := mustNew(b, benchRoutes(10000)...)
	m := Message{ChatJID: "slack:group/4998", Sender: "slack:T1/user/U1", Verb: "message"}
	b.ReportAllocs()
	for b.Loop() {
		tab.Explain(m)
	}
}
