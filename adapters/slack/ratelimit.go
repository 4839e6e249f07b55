package slack

import (
	"context"
	"net/http"
	"sync"
	"time"

	"switchboard/adapters"
)

// Slack's per-method rate-limit tiers, in calls per minute per workspace.
// chat.postMessage has its own limit (about one message per second per
// channel, with short bursts), kept per channel; chat.startStream posts a
// message and is paced as one. A stream's appends are Tier 4.
var tierOf = map[string]int{
	"chat.update": 50, "chat.delete": 50, "reactions.add": 50,
	"chat.appendStream": 100, "chat.stopStream": 50, "chat.postEphemeral": 100,
	"pins.add": 20, "pins.remove": 20,
	"conversations.history": 50, "conversations.replies": 50, "conversations.info": 50,
	"users.info": 100, "files.info": 100,
	"files.getUploadURLExternal": 20, "files.completeUploadExternal": 20,
}

// postBurst and postEvery shape chat.postMessage per channel.
const (
	postBurst = 5
	postEvery = time.Second
)

// tiers is a token bucket per method (and per channel for posts): bursts
// pass at once, a sustained rate waits instead of hammering Slack into 429s.
type tiers struct {
	postEvery time.Duration // 0: postEvery
	mu        sync.Mutex
	buckets   map[string]*bucket
	held      adapters.Hold // Slack answered 429: no call before it ends (holding)
}

type bucket struct {
	tokens float64
	last   time.Time
}

// wait blocks until a call to method (in channel, for posts) is within its
// tier and past a 429's hold, or ctx ends.
func (t *tiers) wait(ctx context.Context, method, channel string) error {
	key, capacity, every, ok := t.bucketOf(method, channel)
	for {
		d := t.held.Left()
		if d == 0 {
			if !ok {
				return nil
			}
			if d = t.take(key, capacity, every); d == 0 {
				return nil
			}
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

var _ adapters.Pacer = (*Adapter)(nil)

// SendDue implements adapters.Pacer: how long a message to chat would
// wait for its channel's chat.postMessage bucket or a 429's hold (0 for a
// JID that is not a Slack chat: Send refuses it at once).
func (a *Adapter) SendDue(chat adapters.JID) time.Duration {
	channel, _, err := channelOf(chat)
	if err != nil {
		return 0
	}
	return a.tiers.due("chat.postMessage", channel)
}

// due is how long wait would hold a call to method (in channel) now, 0
// when none. It takes nothing: a live update not due is not sent, so that
// the next one carries the newest text (adapters.NotDue).
func (t *tiers) due(method, channel string) time.Duration {
	held := t.held.Left()
	key, capacity, every, ok := t.bucketOf(method, channel)
	if !ok {
		return held
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	b, ok := t.buckets[key]
	if !ok {
		return held
	}
	tokens := min(capacity, b.tokens+float64(time.Since(b.last))/float64(every))
	if tokens >= 1 {
		return held
	}
	return max(held, time.Duration((1-tokens)*float64(every)))
}

// holding is the Web API's transport: a 429 holds the tiers for its
// Retry-After (adapters.Hold: at least a second, at most
// adapters.MaxRetryAfter) before it is returned to the caller.
type holding struct {
	base  http.RoundTripper
	tiers *tiers
}

func (h holding) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusTooManyRequests {
		asked, _ := adapters.ParseRetryAfter(resp.Header.Get("Retry-After"))
		h.tiers.held.Set(asked)
	}
	return resp, err
}

// bucketOf is the bucket a call to method (in channel) takes from: its
// key, size and refill time; ok is false for a method not paced.
func (t *tiers) bucketOf(method, channel string) (key string, capacity float64, every time.Duration, ok bool) {
	if n, ok := tierOf[method]; ok {
		return method, float64(n), time.Minute / time.Duration(n), true
	}
	if method != "chat.postMessage" {
		return "", 0, 0, false
	}
	every = postEvery
	if t.postEvery > 0 {
		every = t.postEvery
	}
	return method + "/" + channel, postBurst, every, true
}

// take spends a token and returns 0, or returns how long until one is due.
func (t *tiers) take(key string, capacity float64, every time.Duration) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buckets == nil {
		t.buckets = map[string]*bucket{}
	}
	now := time.Now()
	b, ok := t.buckets[key]
	if !ok {
		if len(t.buckets) > 10_000 {
			t.buckets = map[string]*bucket{}
		}
		b = &bucket{tokens: capacity, last: now}
		t.buckets[key] = b
	}
	b.tokens = min(capacity, b.tokens+float64(now.Sub(b.last))/float64(every))
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return 0
	}
	return time.Duration((1 - b.tokens) * float64(every))
}
