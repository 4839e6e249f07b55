package discord

import (
	"bytes"
	"encoding/json"
	"io"
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
	if err := t.hold.Wait(req.Context()); err != nil {
		return nil, err
	}
	resp, err := t.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		capWait(resp, t.hold)
	}
	return resp, err
}

var _ adapters.Pacer = (*Adapter)(nil)

// SendDue implements adapters.Pacer: a send waits out a 429's hold (the
// per-route buckets discordgo keeps are short and not seen from here).
func (a *Adapter) SendDue(adapters.JID) time.Duration { return a.held.Left() }

// maxLimitBody is the most of a 429's body read to find its retry_after.
const maxLimitBody = 64 << 10

// capWait holds the adapter for the wait a 429 asks for — the longest of
// X-RateLimit-Reset-After, Retry-After and the body's retry_after
// (seconds, with a fraction), a second when none says — as adapters.Hold
// caps it, and writes the capped wait back into the response: discordgo
// sleeps for the body's retry_after and holds the route's bucket until
// X-RateLimit-Reset-After, and would otherwise wait out a day's retry_after
// that the hold cut to adapters.MaxRetryAfter.
func capWait(resp *http.Response, hold *adapters.Hold) {
	var asked time.Duration
	for _, key := range []string{"X-RateLimit-Reset-After", "Retry-After"} {
		if d, ok := adapters.ParseRetryAfter(resp.Header.Get(key)); ok {
			asked = max(asked, d)
		}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxLimitBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var fields map[string]any
	if err == nil && json.Unmarshal(body, &fields) == nil {
		if s, ok := fields["retry_after"].(float64); ok {
			d, _ := adapters.ParseRetryAfter(strconv.FormatFloat(s, 'f', -1, 64))
			asked = max(asked, d)
		}
	}
	wait := hold.Set(asked)
	if asked <= wait {
		return
	}
	secs := strconv.FormatFloat(wait.Seconds(), 'f', -1, 64)
	for _, key := range []string{"X-RateLimit-Reset-After", "Retry-After"} {
		if resp.Header.Get(key) != "" {
			resp.Header.Set(key, secs)
		}
	}
	if _, ok := fields["retry_after"]; ok {
		fields["retry_after"] = wait.Seconds()
		if b, err := json.Marshal(fields); err == nil {
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		}
	}
}
