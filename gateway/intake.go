package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// intakeStore is what intake needs of the store besides the committer.
type intakeStore interface {
	EditMessage(ctx context.Context, m *store.Message) (existed bool, err error)
	DeleteMessage(ctx context.Context, chat adapters.JID, id adapters.MessageID) (int64, error)
	MessageByID(ctx context.Context, chat adapters.JID, id adapters.MessageID) (store.Message, error)
	SetReaction(ctx context.Context, r store.Reaction, noteFolder groups.Folder) (int64, error)
}

// The checks at Deliver (see guards.go).
type (
	// roomGuard is the loop guard's side at Deliver (loopGuard).
	roomGuard interface {
		refuse(ctx context.Context, in adapters.Inbound, work []store.WorkItem) error
		arrived(m store.Message, work []store.WorkItem, fromHost bool)
	}
	// floodWatch is the flood guard's side at Deliver (floodGuard).
	floodWatch interface {
		arrived(ctx context.Context, m store.Message, work []store.WorkItem)
	}
)

// intake takes what adapters deliver (and what the CLI or an agent
// injects) into the store: validated, routed, stored with the work it
// creates, the folders woken.
type intake struct {
	st          intakeStore
	commits     *committer
	table       func() *routing.Table
	adapters    adapterSet
	engage      *engagements
	engageTTL   time.Duration
	now         func() time.Time // Options.Now: whether a backfilled message is stale
	loop        roomGuard
	flood       floodWatch
	stops       *stopper
	mid         *midTurns
	storeInject func(context.Context, *routing.Table, ops.InjectRequest) (store.Message, groups.Folder, error) // ops.Inject
	kick        func(folder groups.Folder)
	// approvalCommand answers an /approve or /deny message (approvals.go).
	approvalCommand func(ctx context.Context, m store.Message, c approvalCommand)
	inbound         *prometheus.CounterVec // switchboard_inbound_events_total
	unroutedMetric  *prometheus.CounterVec // switchboard_unrouted_messages_total; nil in some tests
	log             *slog.Logger

	unrouted     atomic.Int64
	unroutedSeen unroutedLog // chats named in the log as unrouted
}

// deliver is the adapters' DeliverFunc: validate, route, and store the event.
// A new message is stored together with the work it creates, in one
// transaction (shared with concurrent deliver calls: see committer); edits,
// deletes and reactions change what is stored and never start a turn.
func (i *intake) deliver(ctx context.Context, in adapters.Inbound) (int64, error) {
	if err := in.Validate(); err != nil {
		return 0, err
	}
	m := ops.StoreMessage(in)
	if self, ok := i.adapters.self(in.Chat.Platform()); ok && in.Sender == self {
		m.FromBot = true
	}
	i.inbound.WithLabelValues(i.adapters.platformLabel(in.Chat), in.Kind.Name()).Inc()
	switch in.Kind {
	case adapters.KindEdit:
		if _, err := i.st.EditMessage(ctx, &m); err != nil {
			return 0, err
		}
		i.adapters.notifyStored(m.ChatJID, m.Seq)
		return m.Seq, nil
	case adapters.KindDelete:
		return i.st.DeleteMessage(ctx, m.ChatJID, m.ID)
	case adapters.KindReaction:
		return i.react(ctx, in, m)
	}
	bot := i.adapters.mention(in.Chat.Platform())
	if !m.FromBot && !m.OtherBot && !in.ToOtherBot && isStopCommand(m.Text, m.Verb, bot) && i.stops.owns(m.ChatJID, m.Topic) {
		return i.stop(ctx, m, !in.Backfilled)
	}
	var work []store.WorkItem
	cmd, isCmd := parseApprovalCommand(m.Text, m.Verb, bot)
	isCmd = isCmd && !m.FromBot && !m.OtherBot && !in.ToOtherBot
	if !m.FromBot && !m.OtherBot && !isCmd { // an /approve or /deny is stored, never prompted
		work = i.route(m, in.Backfilled && i.now().Sub(in.Time) > adapters.BackfillTriggerAge)
	}
	// A backfilled one is not acted on either: the requests it meant
	// expired with the restart (as a backfilled /stop's turn is gone).
	act := isCmd && !in.Backfilled
	if err := i.loop.refuse(ctx, in, work); err != nil {
		return 0, err
	}
	// Every new message, steered or stored, is noted by the guards; the
	// loop guard's note (did it come while its folder ran?) is taken
	// before the message's own turn can start, or that turn would find
	// it missing and the next turn would count it.
	noteLoop := func(m store.Message) { i.loop.arrived(m, work, in.FromHost) }
	arrived := func(m store.Message) {
		noteLoop(m)
		i.flood.arrived(ctx, m, work)
	}
	mid := i.mid.message(work) // the running turn it may meet (midturn.go)
	if steered, err := mid.steer(ctx, &m, arrived); steered || err != nil {
		return m.Seq, err // for the running turn (midturn.go)
	}
	mid.joinInterrupted(ctx, m.Sender, work) // from the running turn's reply thread
	inserted, err := i.commits.commit(ctx, &m, work, noteLoop)
	if err != nil {
		return 0, fmt.Errorf("store message %s/%s: %w", m.ChatJID, m.ID, err)
	}
	// Stored, it is acted on whether or not its sender still waits: a
	// redelivery is a duplicate, acted on by nobody.
	ctx = context.WithoutCancel(ctx)
	if inserted {
		i.flood.arrived(ctx, m, work)
		mid.interrupt(ctx, m)
	}
	// A redelivery was stored once and routed then; for a new message the
	// committer told the watchers and woke the folders.
	if inserted && act && i.approvalCommand != nil {
		i.approvalCommand(ctx, m, cmd)
	}
	if inserted && !m.FromBot && !m.OtherBot && len(work) == 0 && !isCmd {
		i.unrouted.Add(1)
		if i.unroutedMetric != nil {
			i.unroutedMetric.WithLabelValues(i.adapters.platformLabel(m.ChatJID)).Inc()
		}
		i.logUnrouted(m.ChatJID)
	}
	return m.Seq, nil
}

// stop stores a stop request (/stop) without work, so that no prompt ever
// shows it, and acts on it once (not on a redelivery; not at all when it
// was backfilled: the turn it meant is long gone).
func (i *intake) stop(ctx context.Context, m store.Message, act bool) (int64, error) {
	inserted, err := i.commits.commit(ctx, &m, nil, nil)
	if err != nil {
		return 0, fmt.Errorf("store message %s/%s: %w", m.ChatJID, m.ID, err)
	}
	if inserted && act {
		i.stops.command(context.WithoutCancel(ctx), m) // as deliver acts on a stored message
	}
	return m.Seq, nil
}

// storeFetched stores a message read from the platform's history: stored
// once (a known one keeps its seq), never routed.
func (i *intake) storeFetched(ctx context.Context, in adapters.Inbound) (int64, error) {
	in.Kind = adapters.KindMessage
	if err := in.Validate(); err != nil {
		return 0, err
	}
	m := ops.StoreMessage(in)
	if self, ok := i.adapters.self(in.Chat.Platform()); ok && in.Sender == self {
		m.FromBot = true
	}
	if _, err := i.commits.commit(ctx, &m, nil, nil); err != nil {
		return 0, err
	}
	return m.Seq, nil
}

// react stores a reaction; one to the bot's own message is kept for the
// chat owner's next prompt.
func (i *intake) react(ctx context.Context, in adapters.Inbound, m store.Message) (int64, error) {
	var note groups.Folder
	if target, err := i.st.MessageByID(ctx, m.ChatJID, m.ID); err == nil && target.FromBot && !m.FromBot {
		note, _ = i.table().Owner(m.ChatJID, target.Topic)
	}
	return i.st.SetReaction(ctx, store.Reaction{ChatJID: m.ChatJID, MsgID: m.ID, Sender: m.Sender, SenderName: m.SenderName,
		Emoji: in.Reaction, Removed: in.ReactionRemoved, Time: m.Time}, note)
}

// route decides what a stored message does: nothing (unrouted), observe, or
// trigger a turn of the winning route's folder. An observe route still
// triggers while the folder is engaged in that chat/topic, and so does a
// message no route matches while the chat's owner is engaged there.
// A stale backfilled message is observed context only.
func (i *intake) route(m store.Message, stale bool) []store.WorkItem {
	t := i.table()
	r, ok := t.Resolve(routing.Message{ChatJID: m.ChatJID, Sender: m.Sender, Verb: m.Verb, Topic: m.Topic})
	if !ok {
		// A follow-up that no route matches (a chat routed to its folder
		// for mentions only) still reaches the chat's owner while the
		// bot is engaged there for it.
		if owner, owned := t.Owner(m.ChatJID, m.Topic); owned && !stale && i.engage.active(m.ChatJID, m.Topic, owner) {
			return []store.WorkItem{{Folder: owner, ChatJID: m.ChatJID, Topic: m.Topic, Mode: string(routing.Trigger), Trigger: store.TriggerMessage}}
		}
		return nil // unrouted: stored, counted by deliver, nothing runs
	}
	mode := r.Mode
	if mode == routing.Observe && i.engage.active(m.ChatJID, m.Topic, r.Target) {
		mode = routing.Trigger
	}
	if stale {
		mode = routing.Observe
	}
	if mode == routing.Trigger && m.Verb == adapters.VerbMention {
		i.engage.start(m.ChatJID, m.Topic, r.Target, i.engageTTL)
	}
	return []store.WorkItem{{Folder: r.Target, ChatJID: m.ChatJID, Topic: m.Topic, Mode: string(mode), Trigger: store.TriggerMessage}}
}

// inject is ops.Inject in the running gateway: it also wakes the folder
// at once.
func (i *intake) inject(ctx context.Context, req ops.InjectRequest) (store.Message, error) {
	m, folder, err := i.storeInject(ctx, i.table(), req)
	if err != nil {
		return m, err
	}
	i.adapters.notifyStored(m.ChatJID, m.Seq)
	i.kick(folder)
	return m, nil
}

// unroutedCount counts messages since start that matched no route.
func (i *intake) unroutedCount() int64 { return i.unrouted.Load() }

// unroutedLog names each unrouted chat in the log once (per process, for a
// bounded number of chats), so an operator can copy its JID into a route.
type unroutedLog struct {
	mu   sync.Mutex
	seen map[adapters.JID]bool
}

func (i *intake) logUnrouted(chat adapters.JID) {
	u := &i.unroutedSeen
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil {
		u.seen = map[adapters.JID]bool{}
	}
	if u.seen[chat] || len(u.seen) >= 10_000 {
		return
	}
	u.seen[chat] = true
	i.log.Info("message from an unrouted chat stored; nothing runs until a route matches it",
		"jid", chat, "hint", "switchboard route add --target FOLDER chat_jid="+chat.String())
}

type engageKey struct {
	chat  adapters.JID
	topic string
}

type engagement struct {
	folder groups.Folder
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

func (e *engagements) start(chat adapters.JID, topic string, folder groups.Folder, ttl time.Duration) {
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

// restore engages again, for what is left of ttl, where the bot spoke
// before a restart (store.SpokenSince): the engagements live in memory.
func (e *engagements) restore(spoken []store.Spoken, ttl time.Duration) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	now, n := e.now(), 0
	for _, sp := range spoken {
		until := sp.At.Add(ttl)
		if !now.Before(until) {
			continue
		}
		for _, topic := range []string{sp.Topic, sp.Stored} {
			k := engageKey{sp.ChatJID, topic}
			if cur, ok := e.m[k]; !ok || cur.until.Before(until) {
				e.m[k] = engagement{folder: sp.Folder, until: until}
				n++
			}
		}
	}
	return n
}

// stopIf ends the engagement in chat/topic if allowed(its folder).
func (e *engagements) stopIf(chat adapters.JID, topic string, allowed func(groups.Folder) bool) (folder groups.Folder, ended bool) {
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

func (e *engagements) active(chat adapters.JID, topic string, folder groups.Folder) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.m[engageKey{chat, topic}]
	return ok && en.folder == folder && e.now().Before(en.until)
}
