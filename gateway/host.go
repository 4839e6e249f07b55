package gateway

import (
	"context"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/ops"
)

// adapterHost is the adapters.Host the gateway gives one running adapter:
// delivery into the pipeline, connection state, persisted values in the
// adapter's own namespace, and the routed chats that backfill walks.
type adapterHost struct {
	g    *Gateway
	name string
}

var _ adapters.Host = adapterHost{}

func (h adapterHost) Deliver(ctx context.Context, m adapters.Inbound) (int64, error) {
	return h.g.Deliver(ctx, m)
}

func (h adapterHost) SetState(s adapters.State, err error) { h.g.states.set(h.name, s, err) }

func (h adapterHost) Value(ctx context.Context, key string) (string, bool, error) {
	return h.g.st.AdapterValue(ctx, h.name, key)
}

func (h adapterHost) SetValue(ctx context.Context, key, value string, ttl time.Duration) error {
	return h.g.st.SetAdapterValue(ctx, h.name, key, value, ttl)
}

// RoutedChats lists the adapter's chats that some route owns, with their
// newest stored message.
func (h adapterHost) RoutedChats(ctx context.Context) ([]adapters.ChatCursor, error) {
	heads, err := h.g.st.ChatHeads(ctx, h.name)
	if err != nil {
		return nil, err
	}
	t := h.g.Table()
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

// adapterStates holds each adapter's last reported state.
type adapterStates struct {
	mu        sync.Mutex
	m         map[string]ops.AdapterStatus
	connected map[string]bool // adapters that connected at least once
	dirty     bool            // changed since last persisted
	changed   chan struct{}   // wakes the poll loop to persist a change at once
}

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
	if old, ok := a.m[name]; ok && old.State == s && old.Err == st.Err {
		return // same state: keep its since
	}
	a.m[name] = st
	a.dirty = true
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// AdapterStates returns each adapter's last reported connection state.
func (g *Gateway) AdapterStates() map[string]ops.AdapterStatus {
	g.states.mu.Lock()
	defer g.states.mu.Unlock()
	out := make(map[string]ops.AdapterStatus, len(g.states.m))
	for k, v := range g.states.m {
		out[k] = v
	}
	return out
}

// self is the bot's own sender JID on platform, once its adapter knows it.
func (g *Gateway) self(platform string) (adapters.JID, bool) {
	if id, ok := g.adapters[platform].(adapters.Identity); ok {
		if jid, ok := id.Self(); ok {
			return jid, true
		}
	}
	return "", false
}

// botJID is the sender JID the bot's own messages are stored under: the
// adapter's identity when it knows it, else "<platform>:bot/switchboard".
func (g *Gateway) botJID(platform string) adapters.JID {
	if jid, ok := g.self(platform); ok {
		return jid
	}
	return adapters.JID(platform + ":bot/switchboard")
}

// unroutedLog names each unrouted chat in the log once (per process, for a
// bounded number of chats), so an operator can copy its JID into a route.
type unroutedLog struct {
	mu   sync.Mutex
	seen map[adapters.JID]bool
}

func (g *Gateway) logUnrouted(chat adapters.JID) {
	g.unroutedSeen.mu.Lock()
	defer g.unroutedSeen.mu.Unlock()
	if g.unroutedSeen.seen == nil {
		g.unroutedSeen.seen = map[adapters.JID]bool{}
	}
	if g.unroutedSeen.seen[chat] || len(g.unroutedSeen.seen) >= 10_000 {
		return
	}
	g.unroutedSeen.seen[chat] = true
	g.log.Info("message from an unrouted chat stored; nothing runs until a route matches it",
		"jid", chat, "hint", "switchboard route add --target FOLDER chat_jid="+chat.String())
}
