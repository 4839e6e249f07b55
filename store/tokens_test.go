package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestTokens: a token is found by its hash until it expires; deleting the
// tokens of turns (all, at start) leaves operators' tokens alone; rm
// revokes one by id.
func TestTokens(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	clock := time.UnixMilli(1_800_000_000_000)
	s.now = func() time.Time { return clock }
	add := func(id, turn string, ttl time.Duration) TokenHash {
		t.Helper()
		h := HashToken("secret-" + id)
		if err := s.AddToken(ctx, Token{ID: id, Folder: "acme", TurnID: turn, Created: clock, Expires: clock.Add(ttl)}, h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	op, turn, short := add("op", "", time.Hour), add("turn", "t-1", time.Hour), add("short", "", time.Minute)

	if tok, err := s.TokenByHash(ctx, op); err != nil || tok.ID != "op" || tok.Folder != "acme" {
		t.Fatalf("operator token: %+v, %v", tok, err)
	}
	clock = clock.Add(2 * time.Minute)
	if _, err := s.TokenByHash(ctx, short); !errors.Is(err, ErrNotFound) {
		t.Errorf("expired token: %v, want ErrNotFound", err)
	}
	if _, err := s.TokenByHash(ctx, HashToken("unknown")); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown token: %v, want ErrNotFound", err)
	}
	if n, err := s.DeleteTurnTokens(ctx, ""); err != nil || n != 2 { // the turn's and the expired one
		t.Fatalf("DeleteTurnTokens: %d, %v", n, err)
	}
	if _, err := s.TokenByHash(ctx, turn); !errors.Is(err, ErrNotFound) {
		t.Errorf("turn token after DeleteTurnTokens: %v", err)
	}
	if ts, err := s.Tokens(ctx); err != nil || len(ts) != 1 || ts[0].ID != "op" {
		t.Fatalf("Tokens: %+v, %v", ts, err)
	}
	if err := s.DeleteToken(ctx, "op"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteToken(ctx, "op"); !errors.Is(err, ErrNotFound) {
		t.Errorf("DeleteToken twice: %v", err)
	}
}
