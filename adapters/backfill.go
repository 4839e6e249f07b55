package adapters

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Backfill bounds: after downtime a chat is backfilled with at most
// BackfillMax messages, none older than BackfillWindow.
const (
	BackfillMax    = 100
	BackfillWindow = 24 * time.Hour
)

// Backfill delivers, for each chat a route owns, the messages the platform
// holds that are newer than the newest stored one (at most BackfillMax, none
// older than BackfillWindow), oldest first, marked Backfilled: the gateway
// stores them de-duplicated and lets only those younger than
// BackfillTriggerAge trigger. Adapters that can miss events while
// disconnected (Discord after a session that could not resume, Slack after
// any downtime) call it once connected. A chat that fails does not stop the
// others; the errors are joined. It returns how many messages were delivered.
func Backfill(ctx context.Context, host Host, f HistoryFetcher, now time.Time) (int, error) {
	chats, err := host.RoutedChats(ctx)
	if err != nil {
		return 0, fmt.Errorf("backfill: list routed chats: %w", err)
	}
	var errs []error
	n := 0
	for _, c := range chats {
		q := HistoryQuery{After: c.LastID, Since: now.Add(-BackfillWindow), Limit: BackfillMax}
		if c.Last.After(q.Since) {
			q.Since = c.Last
		}
		msgs, err := f.FetchHistory(ctx, c.Chat, q)
		if err != nil {
			errs = append(errs, fmt.Errorf("backfill %s: %w", c.Chat, err))
			continue
		}
		for _, m := range msgs {
			if m.Time.Before(now.Add(-BackfillWindow)) || m.ID == c.LastID {
				continue
			}
			m.Backfilled = true
			if _, err := host.Deliver(ctx, m); err != nil {
				if errors.Is(err, ErrBadMessage) {
					continue
				}
				errs = append(errs, fmt.Errorf("backfill %s: deliver %s: %w", c.Chat, m.ID, err))
				break
			}
			n++
		}
	}
	return n, errors.Join(errs...)
}

// DeliverUntilStored hands m to host.Deliver, retrying with a capped
// backoff (100 ms doubling to 10 s) while the store refuses it, for
// platforms that will not send an event again once it was acknowledged.
// Garbage (ErrBadMessage) is given up at once. onRetry, when set, is told
// of each refusal before the wait (wait 0: garbage, not retried). It
// returns false only when ctx ended before m was stored.
func DeliverUntilStored(ctx context.Context, host Host, m Inbound, onRetry func(err error, wait time.Duration)) bool {
	wait := 100 * time.Millisecond
	for {
		_, err := host.Deliver(ctx, m)
		switch {
		case err == nil:
			return true
		case errors.Is(err, ErrBadMessage):
			if onRetry != nil {
				onRetry(err, 0)
			}
			return true
		case ctx.Err() != nil:
			return false
		}
		if onRetry != nil {
			onRetry(err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		wait = min(wait*2, 10*time.Second)
	}
}
