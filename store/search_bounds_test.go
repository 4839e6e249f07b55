package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
)

// Search refuses oversized queries with a short, clear error, and stops a
// slow one at its deadline or when the caller goes away.
func TestSearchBounds(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var ms []*Message
	for i := range 5000 {
		ms = append(ms, &Message{ChatJID: "web:a", ID: adapters.MessageID(fmt.Sprint("m", i)), Sender: "web:user/x",
			Text: fmt.Sprintf("alpha%d beta%d gamma%d delta%d epsilon", i%97, i%89, i%83, i%79)})
	}
	if _, err := s.InsertMessages(ctx, ms); err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("alpha OR ", 200_000) + "beta"
	_, err := s.Search(ctx, huge, SearchOptions{})
	if !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), "at most 1024") || len(err.Error()) > 300 {
		t.Errorf("a 1.8 MB query: %v", err)
	}
	many := strings.TrimSuffix(strings.Repeat("a OR ", 100), " OR ")
	if _, err := s.Search(ctx, many, SearchOptions{}); !errors.Is(err, ErrBadQuery) || !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("199 terms: %v", err)
	}
	// A heavy query against a deadline that has already passed is interrupted.
	slow := strings.TrimSuffix(strings.Repeat("a* OR b* OR d* OR e* OR g* OR ", 6), " OR ")
	old := SearchTimeout
	SearchTimeout = time.Nanosecond
	_, err = s.Search(ctx, slow, SearchOptions{})
	SearchTimeout = old
	if err == nil || !strings.Contains(err.Error(), "narrow the query") {
		t.Errorf("a query past its deadline: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Search(cctx, slow, SearchOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("a search whose caller left: %v", err)
	}
	if hits, err := s.Search(ctx, "epsilon", SearchOptions{Limit: 5}); err != nil || len(hits) != 5 {
		t.Errorf("an ordinary search after: %d, %v", len(hits), err)
	}
}

// A word in more than searchScan messages is common: its hits are the
// newest first (Rank 0), found within chats whether their matches are
// among the newest anywhere or not, and whether the chats are few enough
// to walk whole or not; bm25 would put the short messages first.
func TestSearchCommonWordNewestFirst(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var ms []*Message
	add := func(chat adapters.JID, text string) {
		ms = append(ms, &Message{ChatJID: chat, ID: adapters.MessageID(fmt.Sprint("m", len(ms))), Sender: "web:user/x", Text: text})
	}
	for i := range 3 {
		add("web:quiet", fmt.Sprintf("common quiet %d", i)) // old, and few
	}
	for i := range searchScan + 100 {
		if i%2 == 0 {
			add("web:busy", "common")
		} else {
			add("web:busy", "common and a long message that bm25 ranks below the short ones "+fmt.Sprint(i))
		}
	}
	if _, err := s.InsertMessages(ctx, ms); err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, "common", SearchOptions{Limit: 5})
	if err != nil || len(hits) != 5 {
		t.Fatalf("Search = %d hits, %v", len(hits), err)
	}
	for i, h := range hits {
		if want := ms[len(ms)-1-i].Seq; h.Seq != want || h.Rank != 0 {
			t.Errorf("hit %d: seq %d rank %v; want the newest, seq %d, rank 0", i, h.Seq, h.Rank, want)
		}
	}
	// Chats with more than searchRecent messages are not walked whole:
	// their newest matches are found by the walk of the newest matches.
	hits, err = s.Search(ctx, "common", SearchOptions{ChatJIDs: []adapters.JID{"web:quiet", "web:busy"}, Limit: 5})
	if err != nil || len(hits) != 5 {
		t.Fatalf("Search in the busy chats = %d hits, %v; want 5", len(hits), err)
	}
	for i, h := range hits {
		if want := ms[len(ms)-1-i].Seq; h.Seq != want || h.Rank != 0 {
			t.Errorf("busy chats, hit %d: seq %d rank %v; want the newest, seq %d, rank 0", i, h.Seq, h.Rank, want)
		}
	}
	hits, err = s.Search(ctx, "common", SearchOptions{ChatJIDs: []adapters.JID{"web:quiet"}})
	if err != nil || len(hits) != 3 || hits[0].Text != "common quiet 2" || !strings.Contains(hits[0].Snippet, "[common]") {
		t.Fatalf("Search in the quiet chat = %+v, %v; want its 3 messages, newest first", hits, err)
	}
}

// Within chats that hold few messages (at most searchRecent), a common
// word's hits are all found, newest first, with the sender filter applied,
// however far they are behind the newest matches elsewhere.
func TestSearchCommonWordInQuietChats(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var ms []*Message
	add := func(chat adapters.JID, sender adapters.JID, text string) {
		ms = append(ms, &Message{ChatJID: chat, ID: adapters.MessageID(fmt.Sprint("m", len(ms))), Sender: sender, Text: text})
	}
	for i := range searchRecent - 10 {
		switch i {
		case 0, 1449: // the oldest, and the 50th newest
			add("web:quiet", "web:user/x", fmt.Sprintf("common quiet %d", i))
		case 999: // the 500th newest, by another sender
			add("web:quiet", "web:user/y", fmt.Sprintf("common quiet %d", i))
		default:
			add("web:quiet", "web:user/x", fmt.Sprintf("chatter %d", i))
		}
	}
	for range searchScan + 100 {
		add("web:busy", "web:user/x", "common")
	}
	if _, err := s.InsertMessages(ctx, ms); err != nil {
		t.Fatal(err)
	}
	quiet := []adapters.JID{"web:quiet", "web:elsewhere"}
	for _, tc := range []struct {
		name string
		o    SearchOptions
		want []string
	}{
		{"all", SearchOptions{ChatJIDs: quiet}, []string{"common quiet 1449", "common quiet 999", "common quiet 0"}},
		{"limit", SearchOptions{ChatJIDs: quiet, Limit: 2}, []string{"common quiet 1449", "common quiet 999"}},
		{"sender", SearchOptions{ChatJIDs: quiet, Sender: "web:user/y"}, []string{"common quiet 999"}},
	} {
		hits, err := s.Search(ctx, "common", tc.o)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.Text)
			if !strings.Contains(h.Snippet, "[common]") || h.Rank != 0 {
				t.Errorf("%s: hit %q: snippet %q, rank %v", tc.name, h.Text, h.Snippet, h.Rank)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Search in the quiet chat = %q; want %q", tc.name, got, tc.want)
		}
	}
}
