package testwait

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntilSeesAConditionThatBecomesTrue(t *testing.T) {
	var n atomic.Int32
	if !Until(5*time.Second, func() bool { return n.Add(1) >= 5 }) {
		t.Fatal("Until gave up on a condition that held at the fifth check")
	}
	if got := n.Load(); got != 5 {
		t.Errorf("checked %d times, want 5 (it must stop at the first true)", got)
	}
}

func TestUntilGivesUpOnAConditionThatNeverHolds(t *testing.T) {
	if Until(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until reported a condition that never held as held")
	}
}
