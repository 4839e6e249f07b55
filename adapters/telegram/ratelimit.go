package telegram

import (
	"context"
	"sync"
	"time"
)

// pacer keeps the bot under Telegram's limits by waiting (never dropping):
// one message a second per private chat, twenty a minute per group, thirty
// a second in all. A chat's drafts (sendMessageDraft, a live reply's
// typing-like preview, not a message) keep the same pace apart from its
// messages: the final message that replaces a draft does not wait a
// second after the last draft.
type pacer struct {
	perChat, perGroup, global time.Duration
	mu                        sync.Mutex
	next                      map[lane]time.Time
	nextGlobal                time.Time
}

// lane is what the pacer spaces apart: a chat's messages (every request
// but drafts), or its drafts.
type lane struct {
	chat  int64
	draft bool
}

func newPacer(o Options) pacer {
	def := func(d, v time.Duration) time.Duration {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return d
		}
		return v
	}
	return pacer{perChat: def(time.Second, o.PerChat), perGroup: def(3*time.Second, o.PerGroup),
		global: def(time.Second/30, o.Global), next: map[lane]time.Time{}}
}

func (p *pacer) wait(ctx context.Context, l lane) error {
	gap := p.perChat
	if l.chat < 0 {
		gap = p.perGroup
	}
	p.mu.Lock()
	now := time.Now()
	at := now
	for _, t := range []time.Time{p.next[l], p.nextGlobal} {
		if t.After(at) {
			at = t
		}
	}
	p.next[l] = at.Add(gap)
	p.nextGlobal = at.Add(p.global)
	if len(p.next) > 10_000 { // forget chats whose slot has passed
		for c, t := range p.next {
			if t.Before(now) {
				delete(p.next, c)
			}
		}
	}
	p.mu.Unlock()
	if d := time.Until(at); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// due is how long a request in l would wait for its turn now (0: none).
// It reserves nothing: a live update not due yet is not sent, so that the
// next one carries the newest text (adapters.NotDue).
func (p *pacer) due(l lane) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(time.Until(p.next[l]), 0)
}
