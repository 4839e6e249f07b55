package telegram

import (
	"context"
	"sync"
	"time"

	"switchboard/adapters"
)

// pacer keeps the bot under Telegram's limits by waiting (never dropping):
// one message a second per private chat, twenty a minute per group, thirty
// a second in all. A chat's drafts (sendMessageDraft, a live reply's
// typing-like preview, not a message) keep the same pace apart from its
// messages: the final message that replaces a draft does not wait a
// second after the last draft.
type pacer struct {
	perChat, perGroup, global time.Duration
	// held is Telegram's 429: every request of the bot waits for its
	// retry_after (CONTRACT §13), a live reply's next update and a final
	// alike; adapters.Hold caps the wait.
	held       adapters.Hold
	mu         sync.Mutex
	next       map[lane]time.Time
	nextGlobal time.Time
	// set lists the slots set in next, oldest first: each wait sweeps a
	// few from its front (forget), so that next holds few lanes whose
	// slot has passed and no call scans it.
	set []laneSlot
}

// lane is what the pacer spaces apart: a chat's messages (every request
// but drafts), or its drafts.
type lane struct {
	chat  int64
	draft bool
}

// laneSlot is a slot set in a lane: next[l] was at when it was set.
type laneSlot struct {
	l  lane
	at time.Time
}

// forgetPerCall is how many set slots a wait looks at to forget: more
// than the one it sets, so that the list keeps up.
const forgetPerCall = 2

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

// wait reserves l's next slot, no earlier than the bot's next one, and
// waits for it.
func (p *pacer) wait(ctx context.Context, l lane) error {
	gap := p.perChat
	if l.chat < 0 {
		gap = p.perGroup
	}
	p.mu.Lock()
	now := time.Now()
	at := now.Add(p.held.Left())
	for _, t := range []time.Time{p.next[l], p.nextGlobal} {
		if t.After(at) {
			at = t
		}
	}
	p.next[l] = at.Add(gap)
	p.nextGlobal = at.Add(p.global)
	p.set = append(p.set, laneSlot{l, p.next[l]})
	p.forget(now)
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

// forget drops, from the front of the slots set, up to forgetPerCall
// that are over (a lane whose slot has passed waits for nothing, as one
// never seen) or were replaced by a later one of their lane; it stops at
// one still ahead (p.mu held). Each slot is set once and looked at once
// here: O(1) a call, however many chats. The list is in slot order but
// for the lanes' gaps (each slot is the bot's next, which only moves on,
// plus its lane's gap), so a slot ahead at the front holds passed ones
// behind it for at most PerGroup-PerChat.
func (p *pacer) forget(now time.Time) {
	for n := 0; n < forgetPerCall && len(p.set) > 0; n++ {
		s := p.set[0]
		cur, ok := p.next[s.l]
		switch {
		case ok && cur.Equal(s.at) && s.at.After(now):
			return // ahead: its lane waits for it
		case ok && cur.Equal(s.at):
			delete(p.next, s.l)
		}
		p.set[0] = laneSlot{}
		p.set = p.set[1:]
	}
	if len(p.set) == 0 {
		p.set = p.set[:0:0] // let the sliced-off array go
	}
}

var _ adapters.Pacer = (*Adapter)(nil)

// SendDue implements adapters.Pacer: how long a message to chat would wait
// for the chat's next slot, the bot's, or a 429's hold (0 for a JID that
// is not a Telegram chat: Send refuses it at once).
func (a *Adapter) SendDue(chat adapters.JID) time.Duration {
	id, err := a.chatID(chat)
	if err != nil {
		return 0
	}
	return a.pace.due(lane{chat: id})
}

// due is how long a request in l would wait for its turn now (0: none):
// for l's next slot, the bot's (Global) and a 429's hold. It reserves nothing: a live
// update not due yet is not sent, so that the next one carries the
// newest text (adapters.NotDue).
func (p *pacer) due(l lane) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return max(time.Until(p.next[l]), time.Until(p.nextGlobal), p.held.Left(), 0)
}
