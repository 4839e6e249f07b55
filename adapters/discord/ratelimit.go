package discord

import (
	"net/http"
	"strconv"
	"time"

	"switchboard/adapters"
)

// holding is the REST transport: each request first waits out the hold
// (or its context ends), and a 429 sets the hold for its wait.
type holding struct {
	next http.RoundTripper
	hold *adapters.Hold // discordgo waits out a 429 only in the bucket that got it
}

func (t holding) RoundTrip(req *http.Request) (*http.Response, error) {
	for d := t.hold.Left(); d > 0; d = t.hold.Left() {
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
		t.hold.Set(retryAfter(resp.Header))
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
