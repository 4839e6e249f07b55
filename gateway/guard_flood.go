package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/store"
)

// Limits bound what people and agents can make the gateway spend: how
// many turns chat messages start (flood limits), and how deep a chain of
// turns that agents start for each other goes (the chain guard).
type Limits struct {
	// TurnsPerSender bounds the message turns that carry a sender's
	// messages, over all chats. Every sender with a message in a turn's
	// batch is charged that turn; a turn waits only when every sender in
	// its batch is over the limit (one person's flood never holds another
	// person's message back beyond the chat's limit).
	TurnsPerSender Rate
	// TurnsPerChat bounds the message turns of one chat (all its topics
	// and folders together).
	TurnsPerChat Rate
	// MaxChain is how many hops of agent-started work (delegate_group,
	// escalate_group, inject_message) may follow the turn that started a
	// chain; a deeper item is not run. Default 8.
	MaxChain int
}

// Rate is at most Count turns started per Window; a zero Count is no
// limit.
type Rate struct {
	Count  int
	Window time.Duration
}

// DefaultMaxChain is Limits.MaxChain when unset.
const DefaultMaxChain = 8

func (l Limits) withDefaults() Limits {
	if l.MaxChain <= 0 {
		l.MaxChain = DefaultMaxChain
	}
	return l
}

func (r Rate) on() bool { return r.Count > 0 && r.Window > 0 }

// trim drops the starts that left r's window at now.
func (r Rate) trim(starts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(starts) && !starts[i].After(now.Add(-r.Window)) {
		i++
	}
	return starts[i:]
}

// wait is how long until one more turn fits in r, given the starts in
// its window (0: it fits now).
func (r Rate) wait(starts []time.Time, now time.Time) time.Duration {
	if !r.on() || len(starts) < r.Count {
		return 0
	}
	return starts[len(starts)-r.Count].Add(r.Window).Sub(now)
}

// floodHold is a chat and topic of a folder that the flood limits hold.
type floodHold struct {
	until    time.Time // the store time DeferChat holds the work to; zero once lifted or over
	byChat   bool      // the chat's own limit holds it, not only its senders'
	noticeTo time.Time // no further notice before this (gateway clock): one notice per window
	// roomy is the newest message (its seq) that arrived from a sender
	// with room while the chat had room: a hold of a batch claimed
	// before it came is lifted for it (floodLimiter.passed).
	roomy int64
}

// floodLimiter counts message turns per sender and per chat in sliding
// windows, in memory: a restart forgets them (at worst a flood gets one
// more window's worth of turns).
type floodLimiter struct {
	mu      sync.Mutex
	cfg     Limits
	now     func() time.Time
	senders map[adapters.JID][]time.Time // turn starts within the window, oldest first
	chats   map[adapters.JID][]time.Time
	holds   map[loopKey]*floodHold
	pruned  time.Time
}

func (f *floodLimiter) on() bool { return f.cfg.TurnsPerSender.on() || f.cfg.TurnsPerChat.on() }

// admit decides whether a message turn of chat whose batch carries
// senders' messages may start now, and if so counts it for the chat and
// every sender. Otherwise it returns how long until it may, and whether
// the chat's own limit is (part of) why.
func (f *floodLimiter) admit(chat adapters.JID, senders []adapters.JID) (wait time.Duration, byChat bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.init()
	f.prune(now)
	cr, sr := f.cfg.TurnsPerChat, f.cfg.TurnsPerSender
	var chatWait, senderWait time.Duration
	if cr.on() {
		f.chats[chat] = cr.trim(f.chats[chat], now)
		chatWait = cr.wait(f.chats[chat], now)
	}
	if sr.on() {
		for i, s := range senders {
			f.senders[s] = sr.trim(f.senders[s], now)
			if w := sr.wait(f.senders[s], now); i == 0 || w < senderWait {
				senderWait = w
			}
		}
	}
	if wait = max(chatWait, senderWait); wait > 0 {
		return wait, chatWait > 0
	}
	if cr.on() {
		f.chats[chat] = append(f.chats[chat], now)
	}
	if sr.on() {
		for _, s := range senders {
			f.senders[s] = append(f.senders[s], now)
		}
	}
	return 0, false
}

// init makes the maps; f.mu is held.
func (f *floodLimiter) init() {
	if f.chats == nil {
		f.chats, f.senders, f.holds = map[adapters.JID][]time.Time{}, map[adapters.JID][]time.Time{}, map[loopKey]*floodHold{}
	}
}

// hold returns k's hold, made if missing; f.mu is held.
func (f *floodLimiter) hold(k loopKey) *floodHold {
	f.init()
	h := f.holds[k]
	if h == nil {
		h = &floodHold{}
		f.holds[k] = h
	}
	return h
}

// prune forgets counts whose windows are over, at most once a minute once
// there are many; f.mu is held.
func (f *floodLimiter) prune(now time.Time) {
	if len(f.chats)+len(f.senders)+len(f.holds) < 10_000 || now.Sub(f.pruned) < time.Minute {
		return
	}
	f.pruned = now
	window := max(f.cfg.TurnsPerChat.Window, f.cfg.TurnsPerSender.Window)
	for _, m := range []map[adapters.JID][]time.Time{f.chats, f.senders} {
		for k, starts := range m {
			if len(starts) == 0 || now.Sub(starts[len(starts)-1]) > window {
				delete(m, k)
			}
		}
	}
	for k, h := range f.holds {
		if now.Sub(h.noticeTo) > window { // its hold and notice window are over
			delete(f.holds, k)
		}
	}
}

// noticeDue reports whether a chat held now for wait is to be told, and
// if so starts its notice window: one notice per window, however many
// holds it sees.
func (f *floodLimiter) noticeDue(k loopKey, wait time.Duration) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	h := f.hold(k)
	if now.Before(h.noticeTo) {
		return false
	}
	h.noticeTo = now.Add(wait)
	return true
}

// held records that k's work is deferred until (store time).
func (f *floodLimiter) held(k loopKey, until time.Time, byChat bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hold(k)
	h.until, h.byChat = until, byChat
}

// arrived is told of a new trigger message seq from sender for k. It
// returns the hold to lift when k is held only because the senders of
// its queued messages were over their limit, and sender and the chat
// have room: the new message is not to wait for someone else's flood.
// Held or not, such a message is noted for a hold that its chat's turn
// is about to get (passed).
func (f *floodLimiter) arrived(k loopKey, sender adapters.JID, seq int64) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	f.init()
	cr, sr := f.cfg.TurnsPerChat, f.cfg.TurnsPerSender
	if cr.wait(cr.trim(f.chats[k.chat], now), now) > 0 || sr.wait(sr.trim(f.senders[sender], now), now) > 0 {
		return time.Time{}, false
	}
	h := f.hold(k)
	h.roomy = max(h.roomy, seq)
	if h.until.IsZero() || h.byChat {
		return time.Time{}, false
	}
	until := h.until
	h.until = time.Time{}
	return until, true
}

// passed reports whether k's hold until, set (held) for a batch whose
// newest message is last and stored since, is to be lifted at once: a
// message from a sender with room came after the batch was claimed, and
// either lifted the hold already (arrived, which found it set but maybe
// not yet stored) or came before the hold was set. It is then lifted.
// The message is noted once: should it not be in the next batch (it was
// steered into a running turn), that batch's hold stays.
func (f *floodLimiter) passed(k loopKey, until time.Time, last int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hold(k)
	if h.byChat {
		return false
	}
	came := h.roomy > last
	h.roomy = 0
	if !h.until.Equal(until) || came {
		h.until = time.Time{}
		return true
	}
	return false
}

// floodStore is what the flood guard needs of the store.
type floodStore interface {
	Now() time.Time
	ResumeChat(ctx context.Context, folder groups.Folder, chat adapters.JID, topic string, until time.Time) (bool, error)
}

// floodGuard applies the flood limits: at turn start it holds a message
// turn over them (check), at Deliver it lets a new message through a hold
// that only other senders' flood set (arrived).
type floodGuard struct {
	limits Limits
	count  *floodLimiter
	st     floodStore
	holder chatHolder
	kick   func(folder groups.Folder)
	zone   *time.Location // notices' clock times
	log    *slog.Logger
}

func newFloodGuard(limits Limits, now func() time.Time) floodGuard {
	return floodGuard{limits: limits, count: &floodLimiter{cfg: limits, now: now}}
}

// check holds a message turn that a flood limit does not allow now: the
// chat and topic's work waits until the limit allows the next turn (then
// it all runs as one batch), and the chat is told once per window.
func (f floodGuard) check(ctx context.Context, c turnCandidate) (verdict, error) {
	b := c.batch
	first := b.Items[0]
	if first.Trigger != store.TriggerMessage || first.Attempts+first.Crashes > 0 || !f.count.on() {
		return verdictRun, nil // retries were allowed once already
	}
	senders, names := batchSenders(b)
	wait, byChat := f.count.admit(b.ChatJID, senders)
	if wait <= 0 {
		return verdictRun, nil
	}
	k := loopKey{b.Folder, b.ChatJID, b.Topic}
	until := f.st.Now().Add(wait)
	rate, who := f.limits.TurnsPerSender, strings.Join(names, ", ")
	if byChat {
		rate, who = f.limits.TurnsPerChat, "this chat"
	}
	f.log.Warn("flood limit: turn held", "folder", b.Folder, "jid", b.ChatJID, "by_chat", byChat, "senders", len(senders),
		"limit", rate.Count, "window", rate.Window, "wait", wait.Round(time.Second))
	notice := ""
	if f.count.noticeDue(k, wait) {
		notice = fmt.Sprintf("Slow down: %s started %s in the last %s, the limit here. Nothing is lost: "+
			"I'll answer the messages sent meanwhile at %s.", who, count(rate.Count, "turn"), spell(rate.Window), clockTime(until, f.zone))
	}
	// Set before it is stored, looked at after: a message from a sender
	// with room that comes meanwhile (or came since the batch was
	// claimed) is not held for someone else's flood (arrived, passed).
	f.count.held(k, until, byChat)
	if err := f.holder.hold(ctx, b, until, wait, notice, ""); err != nil {
		f.count.held(k, time.Time{}, byChat)
		return verdictRun, fmt.Errorf("hold flooded chat: %w", err)
	}
	if f.count.passed(k, until, lastSeq(b)) {
		f.lift(ctx, k, until)
	}
	return verdictHeld, nil
}

// lastSeq is the newest message of b's trigger items (0: none).
func lastSeq(b store.Batch) int64 {
	var last int64
	for _, it := range b.Items {
		last = max(last, it.Seq)
	}
	return last
}

// lift lifts k's hold until (ResumeChat) and wakes its folder.
func (f floodGuard) lift(ctx context.Context, k loopKey, until time.Time) {
	if _, err := f.st.ResumeChat(ctx, k.folder, k.chat, k.topic, until); err != nil {
		f.log.Error("lift flood hold", "folder", k.folder, "jid", k.chat, "err", err)
		return
	}
	f.kick(k.folder)
}

// arrived lets a new message through a hold that only other senders'
// flood set (see floodLimiter.arrived).
func (f floodGuard) arrived(ctx context.Context, m store.Message, work []store.WorkItem) {
	if !f.count.on() {
		return
	}
	for _, w := range work {
		if w.Mode != "trigger" || w.Trigger != store.TriggerMessage {
			continue
		}
		k := loopKey{w.Folder, w.ChatJID, w.Topic}
		if until, ok := f.count.arrived(k, m.Sender, m.Seq); ok {
			f.lift(ctx, k, until)
		}
	}
}

// batchSenders lists the senders (and their names) of b's chat messages.
func batchSenders(b store.Batch) (senders []adapters.JID, names []string) {
	seqs := map[int64]bool{}
	for _, it := range b.Items {
		if it.Trigger == store.TriggerMessage && it.Seq > 0 {
			seqs[it.Seq] = true
		}
	}
	seen := map[adapters.JID]bool{}
	for _, m := range b.Messages {
		if seqs[m.Seq] && !seen[m.Sender] {
			seen[m.Sender] = true
			senders = append(senders, m.Sender)
			names = append(names, cmp.Or(m.SenderName, m.Sender.String()))
		}
	}
	return senders, names
}
