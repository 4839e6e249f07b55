package testwait

import (
	"fmt"
	"runtime"
	"strings"
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

// Count fails at once, naming the count, when it goes past what is awaited.
func TestCountFailsPastTheWantedCount(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Count(ft, time.Minute, "runs", 1, func() int { return 2 })
	}()
	<-done
	if !ft.failed || !strings.Contains(ft.msg, "runs: 2; want 1") {
		t.Fatalf("failed %v, %q; want a failure naming 2 runs of 1", ft.failed, ft.msg)
	}
}

// fakeT records a Fatalf and ends its goroutine, as testing.T does.
type fakeT struct {
	testing.TB
	failed bool
	msg    string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
