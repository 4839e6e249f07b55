package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/scalegen"
	"switchboard/store"
)

// BenchmarkSearchInstallation runs BenchmarkFindMessages' queries on an
// installation internal/scalegen made (its directory in
// $SWITCHBOARD_SCALE_DIR; skipped without it; $SWITCHBOARD_SCALE_GROUPS and
// $SWITCHBOARD_SCALE_CHATS: the sizes it was made with, 10,000 and 100,000
// unless set) through Store.Search, as find_messages does: across all chats
// (the root group) and within g000007's chats, the group BenchmarkScaleStart
// searches over MCP. It reports each query's p50 and p99 latency; run it
// with -benchtime=100x for ~100 calls each.
func BenchmarkSearchInstallation(b *testing.B) {
	dir := os.Getenv("SWITCHBOARD_SCALE_DIR")
	if dir == "" {
		b.Skip("SWITCHBOARD_SCALE_DIR is not set")
	}
	env := func(name string, def int) int {
		if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
			return v
		}
		return def
	}
	nGroups, nChats := env("SWITCHBOARD_SCALE_GROUPS", 10_000), env("SWITCHBOARD_SCALE_CHATS", 100_000)
	ctx := context.Background()
	s, err := store.Open(ctx, filepath.Join(dir, "data", "switchboard.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var group []adapters.JID
	for i := range nChats {
		if scalegen.ChatFolder(i, nGroups) == "g000007" {
			group = append(group, adapters.JID(scalegen.Chat(i)))
		}
	}
	type scope struct {
		name  string
		chats []adapters.JID
	}
	scopes := []scope{{"root", nil}, {fmt.Sprintf("g000007_%d_chats", len(group)), group}}
	// $SWITCHBOARD_SCALE_WIDE: also search the first N chats (a group
	// with more messages than a tier-1 group's).
	if n := env("SWITCHBOARD_SCALE_WIDE", 0); n > 0 {
		var wide []adapters.JID
		for i := range min(n, nChats) {
			wide = append(wide, adapters.JID(scalegen.Chat(i)))
		}
		scopes = append(scopes, scope{fmt.Sprintf("first_%d_chats", len(wide)), wide})
	}
	for _, scope := range scopes {
		for _, q := range []struct{ name, query string }{
			{"commonest", "the"},
			{"common", "deploy"},
			{"two_common", "deploy release"},
			{"phrase", `"the and"`},
			{"or", "incident OR rollback"},
			{"prefix", "ba*"},
			{"rare", scalegen.Word(19_999)},
		} {
			b.Run(scope.name+"/"+q.name, func(b *testing.B) {
				var lat []time.Duration
				var hits int
				for b.Loop() {
					start := time.Now()
					h, err := s.Search(ctx, q.query, store.SearchOptions{ChatJIDs: scope.chats})
					if err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
					hits = len(h)
				}
				slices.Sort(lat)
				ms := func(p float64) float64 {
					return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
				}
				b.ReportMetric(ms(0.50), "p50-ms")
				b.ReportMetric(ms(0.99), "p99-ms")
				b.ReportMetric(float64(hits), "hits")
			})
		}
	}
}
