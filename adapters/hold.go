package adapters

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MaxRetryAfter is the longest a platform's 429 holds an adapter. A
// platform (or a proxy, or a fake) that asks for more — retry_after=86400
// — would otherwise freeze every send of the adapter for a day; after this
// long the adapter tries again, and a platform still limiting it answers
// 429 again.
const MaxRetryAfter = 5 * time.Minute

// RetryWait is the wait adapters honour for a platform's 429 that asked
// for d: at least a second (a missing or zero wait), at most
// MaxRetryAfter; capped says the platform asked for more.
func RetryWait(d time.Duration) (wait time.Duration, capped bool) {
	return min(max(d, time.Second), MaxRetryAfter), d > MaxRetryAfter
}

// ParseRetryAfter reads a rate limit's wait as platforms write it:
// seconds, fractions too (Discord's retry_after and
// X-RateLimit-Reset-After), or an HTTP date (Retry-After); ok is false
// when v is none of these. The wait is not capped: see RetryWait.
func ParseRetryAfter(v string) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if s, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(s) && !math.IsInf(s, 0) {
		return time.Duration(min(max(s, 0), (100*365*24*time.Hour).Seconds()) * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}

// RetryAfter is the wait a 429's Retry-After header asks for (seconds, a
// fraction, or an HTTP date) as RetryWait honours it: missing or
// unparsable, a second; over MaxRetryAfter, MaxRetryAfter.
func RetryAfter(h http.Header) time.Duration {
	d, _ := ParseRetryAfter(h.Get("Retry-After"))
	wait, _ := RetryWait(d)
	return wait
}

// Hold is an adapter-wide pause after a 429: CONTRACT §13 pauses the whole
// adapter for the platform's wait, not only the route or method that got
// it. The zero value holds nothing; it is safe for concurrent use.
type Hold struct {
	// Log, when set, gets a warning for each wait cut to MaxRetryAfter.
	Log *slog.Logger

	mu    sync.Mutex
	until time.Time
	host  Host // Report's: told of each hold
}

// Report makes each Set tell host that the adapter holds its requests:
// StateBackingOff with a *RetryAfterError of the time left (Host.SetState),
// which the gateway shows while it lasts. An adapter calls it as Run starts.
func (h *Hold) Report(host Host) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.host = host
}

// Set holds from now for the wait a 429 asked for (RetryWait: at least a
// second, at most MaxRetryAfter), never shortening a longer hold, tells
// Report's host, and returns the wait it honoured: what a RetryAfterError
// for this 429 says.
func (h *Hold) Set(asked time.Duration) time.Duration {
	d, capped := RetryWait(asked)
	if capped && h.Log != nil {
		h.Log.Warn("rate limit wait capped: the platform asked for longer", "asked", asked, "wait", d)
	}
	h.mu.Lock()
	if until := time.Now().Add(d); until.After(h.until) {
		h.until = until
	}
	host, left := h.host, time.Until(h.until)
	h.mu.Unlock()
	if host != nil {
		host.SetState(StateBackingOff, &RetryAfterError{Wait: max(left.Round(time.Second), time.Second)})
	}
	return d
}

// Left is how long the hold lasts from now (0: none).
func (h *Hold) Left() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(time.Until(h.until), 0)
}

// Wait waits until the hold is over (at once when there is none), or ctx
// ends; a hold set meanwhile is waited out too.
func (h *Hold) Wait(ctx context.Context) error {
	for d := h.Left(); d > 0; d = h.Left() {
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}
