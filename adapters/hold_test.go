package adapters

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testlog"
)

// A hold lasts the longest wait it was given: a shorter 429 after a longer
// one does not cut the pause short; the zero value holds nothing.
func TestHoldKeepsTheLongestWait(t *testing.T) {
	var h Hold
	if h.Left() != 0 {
		t.Fatalf("zero hold: %s left", h.Left())
	}
	h.Set(4 * time.Minute)
	h.Set(time.Second)
	if left := h.Left(); left < 3*time.Minute {
		t.Errorf("after a 4 minutes' hold and a second's: %s left; want about 4 minutes", left)
	}
}

// A 429's wait as platforms write it, and as adapters honour it: at least
// a second, at most MaxRetryAfter (said, so that it can be logged).
func TestRetryWaitCaps(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         time.Duration
		capped       bool
	}{
		{"seconds", "7", 7 * time.Second, false},
		{"a fraction", "2.5", 2500 * time.Millisecond, false},
		{"none", "", time.Second, false},
		{"garbage", "soon", time.Second, false},
		{"negative", "-5", time.Second, false},
		{"the cap itself", "300", MaxRetryAfter, false},
		{"a day", "86400", MaxRetryAfter, true},
		{"absurd", "1e300", MaxRetryAfter, true},
		{"a date a day away", time.Now().Add(24 * time.Hour).UTC().Format(http.TimeFormat), MaxRetryAfter, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := ParseRetryAfter(tc.header)
			got, capped := RetryWait(d)
			if got != tc.want || capped != tc.capped {
				t.Errorf("Retry-After %q: wait %s (capped %v); want %s (capped %v)", tc.header, got, capped, tc.want, tc.capped)
			}
		})
	}
}

// Set holds for the capped wait and returns it, and logs a cut wait.
func TestHoldCapsAndLogs(t *testing.T) {
	var logs testlog.Buffer
	h := Hold{Log: slog.New(slog.NewTextHandler(&logs, nil))}
	if got := h.Set(24 * time.Hour); got != MaxRetryAfter {
		t.Errorf("Set(24h) held for %s; want %s", got, MaxRetryAfter)
	}
	if left := h.Left(); left > MaxRetryAfter {
		t.Errorf("%s left; want at most %s", left, MaxRetryAfter)
	}
	if !strings.Contains(logs.String(), "rate limit wait capped") || !strings.Contains(logs.String(), "asked=24h0m0s") {
		t.Errorf("log %q; want the cut wait logged with what was asked", logs.String())
	}
}
