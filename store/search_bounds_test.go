package store

import (
	"context"
	"errors"
	"fmt"
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
