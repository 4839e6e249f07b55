package telegram

import (
	"errors"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// A 429 on getUpdates pauses the whole adapter for its retry_after, as one
// on a send does (CONTRACT §13): the next poll waits for it rather than
// coming again within the SDK's 100 ms, and sends are held meanwhile.
func TestPollRateLimitPausesTheAdapter(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	const wait = 2 * time.Second
	f.RateLimitPolls(wait)
	eventually(t, "the 429 on getUpdates", func() bool { return !f.PollLimitedAt().IsZero() })
	eventually(t, "sends held", func() bool { return a.SendDue(groupChat) > 0 })
	limited := f.PollLimitedAt()
	eventually(t, "a poll after the 429", func() bool {
		for _, c := range f.Calls("getUpdates") {
			if c.At.After(limited) {
				return true
			}
		}
		return false
	})
	for _, c := range f.Calls("getUpdates") {
		if c.At.After(limited) && c.At.Sub(limited) < wait-100*time.Millisecond {
			t.Errorf("getUpdates came again %s after a 429 that asked for %s", c.At.Sub(limited), wait)
		}
	}
}

// eventually polls cond until it holds, for at most 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// While a 429 holds the adapter, the typing indicator sends nothing
// either: the whole bot waits (CONTRACT §13), and Telegram lengthens the
// wait of a bot that keeps calling.
func TestTypingHeldByARateLimit(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	f.RateLimit(3 * time.Second)
	var ra *adapters.RetryAfterError
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: groupChat, Text: "x"}); !errors.As(err, &ra) {
		t.Fatalf("send: %v; want the fake's 429", err)
	}
	if err := a.Typing(t.Context(), groupChat, ""); err != nil {
		t.Errorf("typing during the hold: %v; want it skipped quietly", err)
	}
	if c := f.Calls("sendChatAction"); len(c) != 0 {
		t.Errorf("sendChatAction reached Telegram %d times during the 429's wait", len(c))
	}
}
