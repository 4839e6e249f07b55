package store

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"switchboard/routing"
)

// TestRoutesForChat: route explain's read leaves out exactly the routes
// whose literal platform, room or chat_jid names another chat, keeps the
// order routes are tried in, and counts the routes tried before one.
func TestRoutesForChat(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, filepath.Join(t.TempDir(), "switchboard.db"))
	add := func(seq int, match map[string]string) int64 {
		r, err := s.AddRoute(ctx, routing.Route{Seq: seq, Match: match, Target: "main"})
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	other := add(0, map[string]string{"chat_jid": "web:other"})
	same := add(5, map[string]string{"chat_jid": "web:lobby", "sender": "web:user/ann"})
	glob := add(0, map[string]string{"chat_jid": "web:lob*"})
	room := add(0, map[string]string{"room": "lobby"})
	otherRoom := add(0, map[string]string{"room": "hall"})
	plat := add(-1, map[string]string{"platform": "web"})
	otherPlat := add(-1, map[string]string{"platform": "telegram"})
	sender := add(9, map[string]string{"sender": "web:user/bob"})
	_, _, _ = other, otherRoom, otherPlat

	rs, err := s.RoutesForChat(ctx, "web:lobby")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	if want := []int64{plat, glob, room, same, sender}; !slices.Equal(ids, want) {
		t.Errorf("RoutesForChat = %v, want %v (in the order tried)", ids, want)
	}
	for _, c := range []struct {
		r    *routing.Route
		want int
	}{{nil, 8}, {&rs[0], 0}, {&rs[1], 3}, {&rs[3], 6}} {
		if n, err := s.RoutesBefore(ctx, c.r); err != nil || n != c.want {
			t.Errorf("RoutesBefore(%v) = %d, %v; want %d", c.r, n, err, c.want)
		}
	}
}
