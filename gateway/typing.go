package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"switchboard/adapters"
)

// typing shows the chat's typing indicator while a turn runs, repeated as
// often as the platform needs (Limits.TypingEvery), for adapters that have
// one. The returned stop ends it and waits for the refresher to exit.
func typing(ctx context.Context, as adapterSet, log *slog.Logger, chat adapters.JID, topic string) (stop func()) {
	t, ok := as[chat.Platform()].(adapters.Typer)
	if !ok {
		return func() {}
	}
	var every time.Duration
	if l, ok := t.(adapters.Limiter); ok {
		every = l.Limits().TypingEvery
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
			if err := t.Typing(tctx, chat, topic); err != nil && ctx.Err() == nil {
				log.Debug("typing indicator", "jid", chat, "err", err)
			}
			tcancel()
			if every <= 0 {
				return
			}
			tm := time.NewTimer(every)
			select {
			case <-ctx.Done():
				tm.Stop()
				return
			case <-tm.C:
			}
		}
	})
	return func() { cancel(); wg.Wait() }
}
