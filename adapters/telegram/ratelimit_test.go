package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testlog"
)

// The pacer forgets the chats whose slot has passed as it goes, however
// few or many: memory follows the chats it still paces, not every chat
// the bot ever wrote to.
func TestPacerForgetsPassedSlots(t *testing.T) {
	p := newPacer(Options{PerChat: -1, PerGroup: -1, Global: -1}) // every slot passed as soon as it is set
	for i := range 5000 {
		if err := p.wait(context.Background(), lane{chat: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.next); n > 10 {
		t.Errorf("the pacer holds %d chats after 5000 chats each sent once, none of them paced; want the few still paced", n)
	}
}

// BenchmarkPacerWait is the cost of one wait that waits for nothing (a
// chat's first message, no global pace) while the pacer paces n other
// chats whose slots are all ahead (an hour apart): flat in n.
func BenchmarkPacerWait(b *testing.B) {
	for _, n := range []int{1_000, 20_000, 100_000} {
		b.Run(fmt.Sprintf("chats=%d", n), func(b *testing.B) {
			p := newPacer(Options{PerChat: time.Hour, Global: -1})
			ctx := context.Background()
			for i := range n {
				if err := p.wait(ctx, lane{chat: int64(i + 1)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := p.wait(ctx, lane{chat: int64(n + i + 1)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A 429 whose retry_after is a day (a broken proxy, a fake, a platform
// gone wrong) does not freeze the bot for a day: the adapter and the
// gateway (the RetryAfterError's wait) hold for adapters.MaxRetryAfter at
// most, and the log says the wait was cut.
func TestHugeRetryAfterIsCapped(t *testing.T) {
	f := telegramtest.New(t)
	var logs testlog.Buffer
	a := newAdapter(f, slog.New(slog.NewTextHandler(&logs, nil)))
	adaptertest.Start(t, a, adaptertest.NewHost())
	f.RateLimit(24 * time.Hour)
	_, err := a.Send(t.Context(), adapters.Outbound{Chat: groupChat, Text: "answered 429"})
	var ra *adapters.RetryAfterError
	if !errors.As(err, &ra) {
		t.Fatalf("send answered 429: %v; want a RetryAfterError", err)
	}
	if ra.Wait > adapters.MaxRetryAfter {
		t.Errorf("the gateway is told to wait %s; want at most %s", ra.Wait, adapters.MaxRetryAfter)
	}
	if d := a.pace.due(lane{chat: chatOf(dmChat)}); d > adapters.MaxRetryAfter || d < adapters.MaxRetryAfter-time.Minute {
		t.Errorf("the bot holds every chat for %s; want about %s", d, adapters.MaxRetryAfter)
	}
	if !strings.Contains(logs.String(), "rate limit wait capped") {
		t.Errorf("no log line says the wait was capped:\n%s", logs.String())
	}
}
