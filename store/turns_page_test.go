package store

import (
	"context"
	"testing"
)

// A group's view of turns never widens to every folder's: Turns refuses an
// empty folder instead of reading TurnsPage's "all folders".
func TestTurnsNeedsAFolder(t *testing.T) {
	s := newStore(t)
	if _, err := s.Turns(context.Background(), "", 10); err == nil {
		t.Fatal("Turns with no folder answered; want an error")
	}
}
