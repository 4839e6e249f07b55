package adapters

import (
	"testing"
	"time"
)

// A hold lasts the longest wait it was given: a shorter 429 after a longer
// one does not cut the pause short; the zero value holds nothing.
func TestHoldKeepsTheLongestWait(t *testing.T) {
	var h Hold
	if h.Left() != 0 {
		t.Fatalf("zero hold: %s left", h.Left())
	}
	h.Set(time.Hour)
	h.Set(time.Second)
	if left := h.Left(); left < 59*time.Minute {
		t.Errorf("after an hour's hold and a second's: %s left; want about an hour", left)
	}
}
