package gateway

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// adapterSet is the enabled adapters by platform name.
type adapterSet map[string]adapters.Adapter

// names lists the adapters' names, sorted.
func (s adapterSet) names() []string { return slices.Sorted(maps.Keys(s)) }

// storeDelivered lists the platforms whose messages show only once stored
// (adapters.StoreDelivered): a send a crash cut short is sent again.
func (s adapterSet) storeDelivered() []string {
	var out []string
	for platform, a := range s {
		if _, ok := a.(adapters.StoreDelivered); ok {
			out = append(out, platform)
		}
	}
	return out
}

// replyTopic is the topic out lands in when sent through a: its own, or,
// for a reply outside a topic on a platform where a reply opens one
// (adapters.Threader: a Slack channel's thread under the message it
// answers), that one. The outbox sends every part of a reply there, the
// live reply streams there, and the Stop button shows there.
func replyTopic(a adapters.Adapter, out adapters.Outbound) string {
	if th, ok := a.(adapters.Threader); ok && out.Topic == "" && out.ReplyTo != "" {
		return th.ReplyTopic(out)
	}
	return out.Topic
}

// self is the bot's own sender JID on platform, once its adapter knows it.
func (s adapterSet) self(platform string) (adapters.JID, bool) {
	if id, ok := s[platform].(adapters.Identity); ok {
		if jid, ok := id.Self(); ok {
			return jid, true
		}
	}
	return "", false
}

// botJID is the sender JID the bot's own messages are stored under: the
// adapter's identity when it knows it, else "<platform>:bot/switchboard".
func (s adapterSet) botJID(platform string) adapters.JID {
	if jid, ok := s.self(platform); ok {
		return jid
	}
	return adapters.JID(platform + ":bot/switchboard")
}

// mention tells which first word of platform's messages mentions the bot
// (botMention): its adapter's own mention where it says.
func (s adapterSet) mention(platform string) botMention {
	m, _ := s[platform].(adapters.Mentioner)
	return botMention{m}
}

// platformLabel is chat's platform as a metric label: the name of an
// enabled adapter, or "other" for anything else, so that queued rows
// naming made-up platforms cannot grow a label set without bound.
func (s adapterSet) platformLabel(chat adapters.JID) string {
	p := chat.Platform()
	if _, ok := s[p]; ok {
		return p
	}
	return "other"
}

// notifyStored tells the chat's adapter, if it watches, that a message is stored.
func (s adapterSet) notifyStored(chat adapters.JID, seq int64) {
	if a, ok := s[chat.Platform()]; ok {
		if w, ok := a.(adapters.Watcher); ok {
			w.Stored(chat, seq)
		}
	}
}

// hostStore is what an adapterHost needs of the store.
type hostStore interface {
	AdapterValue(ctx context.Context, adapter, key string) (value string, ok bool, err error)
	SetAdapterValue(ctx context.Context, adapter, key, value string, ttl time.Duration) error
	ChatHeads(ctx context.Context, platform string) ([]store.ChatHead, error)
}

// adapterHost is the adapters.Host the gateway gives one running adapter:
// delivery into the pipeline, connection state, persisted values in the
// adapter's own namespace, and the routed chats that backfill walks.
type adapterHost struct {
	name    string
	deliver adapters.DeliverFunc // intake.deliver
	states  *adapterStates
	st      hostStore
	table   func() *routing.Table
	press   func(ctx context.Context, p adapters.Press) (string, error) // nil: no button is live
}

var _ adapters.Host = adapterHost{}

func (h adapterHost) Deliver(ctx context.Context, m adapters.Inbound) (int64, error) {
	return h.deliver(ctx, m)
}

func (h adapterHost) SetState(s adapters.State, err error) { h.states.set(h.name, s, err) }

func (h adapterHost) Value(ctx context.Context, key string) (string, bool, error) {
	return h.st.AdapterValue(ctx, h.name, key)
}

func (h adapterHost) SetValue(ctx context.Context, key, value string, ttl time.Duration) error {
	return h.st.SetAdapterValue(ctx, h.name, key, value, ttl)
}

// Press hands a button press to the gateway part that minted the button.
func (h adapterHost) Press(ctx context.Context, p adapters.Press) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	if h.press == nil {
		return "This button is no longer active.", nil
	}
	return h.press(ctx, p)
}

// RoutedChats lists the adapter's chats that some route owns, with their
// newest stored message.
func (h adapterHost) RoutedChats(ctx context.Context) ([]adapters.ChatCursor, error) {
	heads, err := h.st.ChatHeads(ctx, h.name)
	if err != nil {
		return nil, err
	}
	t := h.table()
	var out []adapters.ChatCursor
	for _, c := range heads {
		if _, ok := t.Owner(c.JID, ""); !ok {
			continue
		}
		cur := adapters.ChatCursor{Chat: c.JID, LastID: c.LastID}
		cur.Last = c.LastTime
		out = append(out, cur)
	}
	return out, nil
}

// adapterStates holds each adapter's last reported state, and the
// rate-limit holds shown over it while they last.
type adapterStates struct {
	mu        sync.Mutex
	m         map[string]ops.AdapterStatus
	held      map[string]rateHold
	connected map[string]bool // adapters that connected at least once
	dirty     bool            // changed since last persisted
	changed   chan struct{}   // wakes the poll loop to persist a change at once
}

// rateHold is an adapter holding its requests for a platform's 429
// (adapters.Hold): until it ends, a connected adapter shows as st.
type rateHold struct {
	until time.Time
	st    ops.AdapterStatus
}

func newAdapterStates() *adapterStates { return &adapterStates{changed: make(chan struct{}, 1)} }

func (a *adapterStates) set(name string, s adapters.State, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]ops.AdapterStatus{}
		a.connected = map[string]bool{}
	}
	if s == adapters.StateConnected {
		a.connected[name] = true
	}
	st := ops.AdapterStatus{State: s, Since: time.Now()}
	if err != nil {
		st.Err = err.Error()
	}
	if ra, ok := errors.AsType[*adapters.RetryAfterError](err); ok && s == adapters.StateBackingOff {
		a.holdLocked(name, st, ra.Wait)
		return
	}
	if old, ok := a.m[name]; ok && old.State == s && old.Err == st.Err {
		return // same state: keep its since
	}
	a.m[name] = st
	a.changedLocked()
}

// holdLocked shows name backing off, rate limited, for wait from st.Since
// (over a connected state: a connection down says so itself), or until
// a longer hold it already shows ends (a.mu held).
func (a *adapterStates) holdLocked(name string, st ops.AdapterStatus, wait time.Duration) {
	if a.held == nil {
		a.held = map[string]rateHold{}
	}
	until := st.Since.Add(wait)
	if old, ok := a.held[name]; ok && old.until.After(until) {
		return
	}
	if old, ok := a.held[name]; ok && st.Since.Before(old.until) {
		st.Since = old.st.Since // one hold, extended
	}
	a.held[name] = rateHold{until: until, st: st}
	a.changedLocked()
}

// changedLocked marks the states changed and wakes the poll loop (a.mu held).
func (a *adapterStates) changedLocked() {
	a.dirty = true
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// snapshot returns each adapter's last reported state.
func (a *adapterStates) snapshot() map[string]ops.AdapterStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.copyLocked()
}

// connections is the states without the rate-limit holds shown over them:
// readiness. An adapter holding its sends for a platform's 429 is still
// connected and still takes messages in (Slack's Events API posts among
// them), so it stays ready: a /readyz that went 503 for each 429 would
// have a load balancer or an orchestrator turn those posts away.
func (a *adapterStates) connections() map[string]ops.AdapterStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.m)
}

// rateLimited is the rate-limit holds shown now over a connected
// adapter: what snapshot shows of them, by adapter.
func (a *adapterStates) rateLimited() map[string]ops.AdapterStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]ops.AdapterStatus{}
	now := time.Now()
	for name, h := range a.held {
		if now.Before(h.until) && a.m[name].State == adapters.StateConnected {
			out[name] = h.st
		}
	}
	return out
}

// copyLocked is the states, each rate-limit hold not yet over shown over
// its adapter's connected state (a.mu held).
func (a *adapterStates) copyLocked() map[string]ops.AdapterStatus {
	out := make(map[string]ops.AdapterStatus, len(a.m))
	maps.Copy(out, a.m)
	now := time.Now()
	for name, h := range a.held {
		if now.Before(h.until) && out[name].State == adapters.StateConnected {
			out[name] = h.st
		}
	}
	return out
}

// takeDirty returns the states and whether they changed since the last
// call (a rate-limit hold that ended is a change).
func (a *adapterStates) takeDirty() (map[string]ops.AdapterStatus, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	for name, h := range a.held {
		if !now.Before(h.until) {
			delete(a.held, name)
			a.dirty = true
		}
	}
	dirty := a.dirty
	a.dirty = false
	return a.copyLocked(), dirty
}

// everConnected reports whether adapter name reported StateConnected since
// the gateway started.
func (a *adapterStates) everConnected(name string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.connected[name]
}
