// Package testwait is the one helper tests use to wait for a condition that
// another goroutine or process makes true (a file written by a subprocess, a
// row stored by a running gateway). It is for tests only.
//
// Prefer waiting on an event the code under test exposes (a channel closed, a
// hook called); use For where the only observable is a state polled from
// outside, such as a file on disk or a row in another process's database.
package testwait

import (
	"testing"
	"time"
)

// For checks cond until it holds, and fails t naming what when within passes
// first. The first check is immediate; later ones back off from 1 ms to 20 ms,
// so a condition that holds quickly is seen quickly.
func For(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("after %s: still waiting for %s", within, what)
	}
}

// Until checks cond until it holds or within passes, and reports whether it
// held. For tests that must do their own clean-up before failing.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	pause := time.Millisecond
	for !cond() {
		if !time.Now().Before(deadline) {
			return cond()
		}
		time.Sleep(min(pause, time.Until(deadline)))
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}

// Count waits until count reaches want, and fails t naming what when within
// passes first, or when count went past want: an exact count polled with
// For (count() == want) would only time out on a double run, hiding it as
// a slow one.
func Count(t testing.TB, within time.Duration, what string, want int, count func() int) {
	t.Helper()
	n := 0
	if !Until(within, func() bool { n = count(); return n >= want }) {
		t.Fatalf("after %s: still waiting for %s (%d of %d)", within, what, n, want)
	}
	if n > want {
		t.Fatalf("%s: %d; want %d", what, n, want)
	}
}
