package discord

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// hold is the adapter-wide pause after a 429: discordgo waits out a 429
// in the bucket that got it only, while CONTRACT §13 pauses the whole
// adapter for the wait, so that no request of any route reaches Discord
// before it is over.
type hold struct {
	mu    sync.Mutex
	until time.Time
}

// set holds every request for d from now (never shortening a longer hold).
func (h *hold) set(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if until := time.Now().Add(d); until.After(h.until) {
		h.until = until
	}
}

// left is how long the hold lasts from now (0: none).
func (h *hold) left() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return max(time.Until(h.until), 0)
}

// holding is the REST transport: each request first waits out the hold
// (or its context ends), and a 429 sets the hold for its wait.
type holding struct {
	next http.RoundTripper
	hold *hold
}

func (t holding) RoundTrip(req *http.Request) (*http.Response, error) {
	for d := t.hold.left(); d > 0; d = t.hold.left() {
		timer := time.NewTimer(d)
		select {
		case <-req.Context().Done():
			timer.Stop()
			return nil, req.Context().Err()
		case <-timer.C:
		}
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		t.hold.set(retryAfter(resp.Header))
	}
	return resp, err
}

// retryAfter is a 429's wait: X-RateLimit-Reset-After (seconds, with a
// fraction), else Retry-After (seconds), else a second.
func retryAfter(h http.Header) time.Duration {
	for _, key := range []string{"X-RateLimit-Reset-After", "Retry-After"} {
		if s, err := strconv.ParseFloat(h.Get(key), 64); err == nil && s > 0 && s < 24*3600 {
			return time.Duration(s * float64(time.Second))
		}
	}
	return time.Second
}
