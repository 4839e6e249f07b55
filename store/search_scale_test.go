package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

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
		for _, q := range scalegen.Queries() {
			b.Run(scope.name+"/"+q.Name, func(b *testing.B) {
				store.BenchSearch(b, s, q.Query, store.SearchOptions{ChatJIDs: scope.chats})
			})
		}
	}
}
