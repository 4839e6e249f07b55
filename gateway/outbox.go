package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

const (
	maxSendAttempts = 8
	sendConcurrency = 16
	// outboxDrainTimeout bounds how long shutdown waits for the replies of
	// the drained turns to be delivered.
	outboxDrainTimeout = 5 * time.Second
)

// outbox is the one sender: it delivers outbox rows through the adapters, at
// most once each, oldest first per chat, retrying transient failures with
// backoff and failing permanently dead chats without blocking others.
type outbox struct {
	g       *Gateway
	wakeC   chan struct{}
	sem     chan struct{}
	wg      sync.WaitGroup
	drainC  chan struct{} // closed by drain: deliver what is due, then stop
	stopped chan struct{} // closed when run returns
	once    sync.Once
}

func newOutbox(g *Gateway) *outbox {
	return &outbox{g: g, wakeC: make(chan struct{}, 1), sem: make(chan struct{}, sendConcurrency),
		drainC: make(chan struct{}), stopped: make(chan struct{})}
}

func (o *outbox) wake() {
	select {
	case o.wakeC <- struct{}{}:
	default:
	}
}

// run delivers due items until ctx ends, or until drain was called and
// nothing is due any more (items waiting for a retry stay for the next start).
func (o *outbox) run(ctx context.Context) {
	defer close(o.stopped)
	defer o.wg.Wait()
	for {
		claimed := o.sendDue(ctx)
		if claimed == 0 && o.draining() {
			// A send in flight may make the next item of its chat due.
			o.wg.Wait()
			if o.sendDue(ctx) == 0 {
				return
			}
		}
		wait := time.Second
		if at, ok, err := o.g.st.NextOutboxAt(ctx); err == nil && ok {
			wait = min(wait, max(time.Until(time.UnixMilli(at)), 0))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-o.wakeC:
		case <-o.drainC:
		case <-t.C:
		}
		t.Stop()
	}
}

func (o *outbox) draining() bool {
	select {
	case <-o.drainC:
		return true
	default:
		return false
	}
}

// drain makes run deliver what is due now and stop; it waits up to timeout
// and reports whether run stopped in time. Call it after the turns drained,
// so that their replies reach the chats before the gateway exits.
func (o *outbox) drain(timeout time.Duration) bool {
	o.once.Do(func() { close(o.drainC) })
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-o.stopped:
		return true
	case <-t.C:
		return false
	}
}

// sendDue claims the due chat heads and starts their delivery; it returns
// how many it claimed.
func (o *outbox) sendDue(ctx context.Context) int {
	items, err := o.g.st.DueOutbox(ctx, time.Now().UnixMilli(), 256)
	if err != nil {
		if ctx.Err() == nil {
			o.g.log.Error("read outbox", "err", err)
		}
		return 0
	}
	n := 0
	for _, it := range items {
		// Claim only with a free sender in hand: a claimed row is
		// "sending", and one a crash leaves so is never resent.
		select {
		case o.sem <- struct{}{}:
		case <-ctx.Done():
			return n
		}
		claimed, err := o.g.st.ClaimOutbox(ctx, it.ID)
		if err != nil || !claimed {
			<-o.sem
			if err != nil && ctx.Err() == nil {
				o.g.log.Error("claim outbox item", "jid", it.ChatJID, "outbox", it.ID, "err", err)
			}
			continue
		}
		n++
		it.Attempts++
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			defer func() { <-o.sem }()
			o.deliver(ctx, it)
			o.wake() // the chat's next reply may now be due
		}()
	}
	return n
}

// deliver sends one claimed item and records the outcome.
func (o *outbox) deliver(ctx context.Context, it store.OutboxItem) {
	g := o.g
	chat := adapters.JID(it.ChatJID)
	a, ok := g.adapters[chat.Platform()]
	if !ok {
		o.fail(ctx, it, fmt.Errorf("%w: %s", ErrNoAdapter, chat.Platform()))
		return
	}
	sendCtx, cancel := context.WithTimeout(ctx, time.Minute)
	id, err := a.Send(sendCtx, adapters.Outbound{Chat: chat, Text: it.Text, Topic: it.Topic, ReplyTo: it.ReplyTo, Key: it.Key})
	cancel()
	var ra *adapters.RetryAfterError
	switch {
	case err == nil:
		if id == "" {
			id = "out-" + it.Key
		}
		// The bot has spoken: follow-ups engage from now, before anyone
		// can see the message stored.
		if it.Folder != "" && it.Kind != "notice" {
			g.engage.start(it.ChatJID, it.Topic, it.Folder, g.opt.EngageTTL)
		}
		bot := &store.Message{ChatJID: it.ChatJID, ID: id, Sender: chat.Platform() + ":bot/switchboard", SenderName: "switchboard",
			Text: it.Text, Topic: it.Topic, ReplyTo: it.ReplyTo, Verb: adapters.VerbMessage, FromBot: true, Time: time.Now().UnixMilli()}
		if err := g.st.OutboxSent(context.WithoutCancel(ctx), it.ID, id, bot); err != nil {
			g.log.Error("record delivery", "jid", it.ChatJID, "outbox", it.ID, "err", err)
			return
		}
		g.notifyStored(it.ChatJID, bot.Seq)
	case errors.Is(err, adapters.ErrPermanent) || errors.Is(err, adapters.ErrUnsupported):
		o.fail(ctx, it, err)
	case errors.As(err, &ra):
		o.retry(ctx, it, ra.Wait, err)
	case it.Attempts >= maxSendAttempts:
		o.fail(ctx, it, fmt.Errorf("gave up after %d attempts: %w", it.Attempts, err))
	default:
		o.retry(ctx, it, min(time.Second<<it.Attempts, 5*time.Minute), err)
	}
}

func (o *outbox) retry(ctx context.Context, it store.OutboxItem, wait time.Duration, cause error) {
	o.g.log.Warn("delivery will be retried", "jid", it.ChatJID, "outbox", it.ID, "attempt", it.Attempts, "wait", wait, "err", cause)
	if err := o.g.st.OutboxRetry(context.WithoutCancel(ctx), it.ID, time.Now().Add(wait).UnixMilli(), cause.Error()); err != nil {
		o.g.log.Error("record delivery retry", "outbox", it.ID, "err", err)
	}
}

func (o *outbox) fail(ctx context.Context, it store.OutboxItem, cause error) {
	o.g.log.Warn("delivery failed permanently", "jid", it.ChatJID, "outbox", it.ID, "err", cause)
	if err := o.g.st.OutboxFailed(context.WithoutCancel(ctx), it.ID, cause.Error()); err != nil {
		o.g.log.Error("record delivery failure", "outbox", it.ID, "err", err)
	}
}
