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
)

// outbox is the one sender: it delivers outbox rows through the adapters, at
// most once each, oldest first per chat, retrying transient failures with
// backoff and failing permanently dead chats without blocking others.
type outbox struct {
	g     *Gateway
	wakeC chan struct{}
	sem   chan struct{}
	wg    sync.WaitGroup
}

func newOutbox(g *Gateway) *outbox {
	return &outbox{g: g, wakeC: make(chan struct{}, 1), sem: make(chan struct{}, sendConcurrency)}
}

func (o *outbox) wake() {
	select {
	case o.wakeC <- struct{}{}:
	default:
	}
}

func (o *outbox) run(ctx context.Context) {
	defer o.wg.Wait()
	for {
		o.sendDue(ctx)
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
		case <-t.C:
		}
		t.Stop()
	}
}

func (o *outbox) sendDue(ctx context.Context) {
	items, err := o.g.st.DueOutbox(ctx, time.Now().UnixMilli(), 256)
	if err != nil {
		if ctx.Err() == nil {
			o.g.log.Error("read outbox", "err", err)
		}
		return
	}
	for _, it := range items {
		claimed, err := o.g.st.ClaimOutbox(ctx, it.ID)
		if err != nil || !claimed {
			continue
		}
		it.Attempts++
		select {
		case o.sem <- struct{}{}:
		case <-ctx.Done():
			// Not sent: put it back for the next start.
			_ = o.g.st.OutboxRetry(context.WithoutCancel(ctx), it.ID, time.Now().UnixMilli(), "shutdown")
			return
		}
		o.wg.Add(1)
		go func() {
			defer o.wg.Done()
			defer func() { <-o.sem }()
			o.deliver(ctx, it)
			o.wake() // the chat's next reply may now be due
		}()
	}
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
		bot := &store.Message{ChatJID: it.ChatJID, ID: id, Sender: chat.Platform() + ":bot/switchboard", SenderName: "switchboard",
			Text: it.Text, Topic: it.Topic, ReplyTo: it.ReplyTo, Verb: adapters.VerbMessage, FromBot: true, Time: time.Now().UnixMilli()}
		if err := g.st.OutboxSent(context.WithoutCancel(ctx), it.ID, id, bot); err != nil {
			g.log.Error("record delivery", "jid", it.ChatJID, "outbox", it.ID, "err", err)
			return
		}
		g.notifyStored(it.ChatJID, bot.Seq)
		if it.Folder != "" && it.Kind != "notice" {
			g.engage.start(it.ChatJID, it.Topic, it.Folder, g.opt.EngageTTL)
		}
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
