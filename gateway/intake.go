package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/control"
	"switchboard/routing"
	"switchboard/store"
)

// Deliver is the adapters' DeliverFunc: validate, route, and store the event.
// A new message is stored together with the work it creates, in one
// transaction (shared with concurrent Deliver calls: see committer); edits,
// deletes and reactions change what is stored and never start a turn.
func (g *Gateway) Deliver(ctx context.Context, in adapters.Inbound) (int64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	m := control.StoreMessage(in)
	if self, ok := g.self(in.Chat.Platform()); ok && in.Sender == self {
		m.FromBot = true
	}
	g.metrics.inbound.WithLabelValues(g.platformLabel(in.Chat), in.Kind.Name()).Inc()
	switch in.Kind {
	case adapters.KindEdit:
		if _, err := g.st.EditMessage(ctx, &m); err != nil {
			return 0, err
		}
		g.notifyStored(m.ChatJID, m.Seq)
		return m.Seq, nil
	case adapters.KindDelete:
		return g.st.DeleteMessage(ctx, m.ChatJID, m.ID)
	case adapters.KindReaction:
		return g.react(ctx, in, m)
	}
	var work []store.WorkItem
	if !m.FromBot && !m.OtherBot {
		work = g.route(m, in.Backfilled && g.opt.Now().Sub(in.Time) > adapters.BackfillTriggerAge)
	}
	if err := g.refuseRoom(ctx, in, work); err != nil {
		return 0, err
	}
	inserted, err := g.commits.commit(ctx, &m, work)
	if err != nil {
		return 0, fmt.Errorf("store message %s/%s: %w", m.ChatJID, m.ID, err)
	}
	if inserted {
		g.watchLoop(m, work, in.FromHost)
		g.floodArrived(ctx, m, work)
	}
	// A redelivery was stored once and routed then; for a new message the
	// committer told the watchers and woke the folders.
	if inserted && !m.FromBot && !m.OtherBot && len(work) == 0 {
		g.unrouted.Add(1)
		g.logUnrouted(m.ChatJID)
	}
	return m.Seq, nil
}

// storeFetched stores a message read from the platform's history: stored
// once (a known one keeps its seq), never routed.
func (g *Gateway) storeFetched(ctx context.Context, in adapters.Inbound) (int64, error) {
	in.Kind = adapters.KindMessage
	if err := in.Validate(); err != nil {
		return 0, err
	}
	m := control.StoreMessage(in)
	if self, ok := g.self(in.Chat.Platform()); ok && in.Sender == self {
		m.FromBot = true
	}
	if _, err := g.commits.commit(ctx, &m, nil); err != nil {
		return 0, err
	}
	return m.Seq, nil
}

// react stores a reaction; one to the bot's own message is kept for the
// chat owner's next prompt.
func (g *Gateway) react(ctx context.Context, in adapters.Inbound, m store.Message) (int64, error) {
	note := ""
	if target, err := g.st.MessageByID(ctx, m.ChatJID, m.ID); err == nil && target.FromBot && !m.FromBot {
		note, _ = g.Table().Owner(m.ChatJID, target.Topic)
	}
	return g.st.SetReaction(ctx, store.Reaction{ChatJID: m.ChatJID, MsgID: m.ID, Sender: m.Sender, SenderName: m.SenderName,
		Emoji: in.Reaction, Removed: in.ReactionRemoved, Time: m.Time}, note)
}

// route decides what a stored message does: nothing (unrouted), observe, or
// trigger a turn of the winning route's folder. An observe route still
// triggers while the folder is engaged in that chat/topic.
// A stale backfilled message is observed context only.
func (g *Gateway) route(m store.Message, stale bool) []store.WorkItem {
	r, ok := g.table.Load().Resolve(routing.Message{ChatJID: m.ChatJID, Sender: m.Sender, Verb: m.Verb, Topic: m.Topic})
	if !ok {
		return nil // unrouted: stored, counted by Deliver, nothing runs
	}
	mode := r.Mode
	if mode == routing.Observe && g.engage.active(m.ChatJID, m.Topic, r.Target) {
		mode = routing.Trigger
	}
	if stale {
		mode = routing.Observe
	}
	if mode == routing.Trigger && m.Verb == adapters.VerbMention {
		g.engage.start(m.ChatJID, m.Topic, r.Target, g.opt.EngageTTL)
	}
	return []store.WorkItem{{Folder: r.Target, ChatJID: m.ChatJID, Topic: m.Topic, Mode: string(mode), Trigger: store.TriggerMessage}}
}

type engageKey struct {
	chat  adapters.JID
	topic string
}

type engagement struct {
	folder string
	until  time.Time
}

// engagements remember, per chat and topic, which folder the bot spoke for
// recently, so follow-ups without a mention reach it.
type engagements struct {
	mu     sync.Mutex
	m      map[engageKey]engagement
	pruned time.Time
	now    func() time.Time
}

func (e *engagements) start(chat adapters.JID, topic, folder string, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Bound memory: drop expired entries, at most once a minute so that a
	// map full of live engagements is not rescanned on every start.
	now := e.now()
	if len(e.m) > 10_000 && now.Sub(e.pruned) > time.Minute {
		e.pruned = now
		for k, v := range e.m {
			if now.After(v.until) {
				delete(e.m, k)
			}
		}
	}
	e.m[engageKey{chat, topic}] = engagement{folder: folder, until: now.Add(ttl)}
}

func (e *engagements) stop(chat adapters.JID, topic string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, engageKey{chat, topic})
}

// stopIf ends the engagement in chat/topic if allowed(its folder).
func (e *engagements) stopIf(chat adapters.JID, topic string, allowed func(string) bool) (folder string, ended bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.m[engageKey{chat, topic}]
	if !ok || e.now().After(en.until) {
		return "", false
	}
	if !allowed(en.folder) {
		return en.folder, false
	}
	delete(e.m, engageKey{chat, topic})
	return en.folder, true
}

func (e *engagements) active(chat adapters.JID, topic, folder string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.m[engageKey{chat, topic}]
	return ok && en.folder == folder && e.now().Before(en.until)
}

// engageChat makes folder answer follow-ups in chat/topic without a mention.
func (g *Gateway) engageChat(chat adapters.JID, topic, folder string) {
	g.engage.start(chat, topic, folder, g.opt.EngageTTL)
}

// inject is control.Inject in the running gateway: it also wakes the folder
// at once.
func (g *Gateway) inject(ctx context.Context, req control.InjectRequest) (store.Message, error) {
	m, folder, err := control.Inject(ctx, g.st, g.table.Load(), req)
	if err != nil {
		return m, err
	}
	g.notifyStored(m.ChatJID, m.Seq)
	g.workers.kick(folder)
	return m, nil
}

// send is control.QueueSend in the running gateway: it also wakes the
// outbox.
func (g *Gateway) send(ctx context.Context, req control.SendRequest) (store.OutboxItem, error) {
	it, err := control.QueueSend(ctx, g.st, req)
	if err == nil {
		g.outbox.wake()
	}
	return it, err
}
