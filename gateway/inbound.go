package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/routing"
	"switchboard/store"
)

// MaxText is the largest message text stored; longer text is cut.
const MaxText = 64 << 10

// maxInboundText is the largest text an adapter may deliver at all: more is
// garbage, refused rather than cut.
const maxInboundText = 1 << 20

// Deliver is the adapters' DeliverFunc: validate, route, and store the event.
// A new message is stored together with the work it creates, in one
// transaction (shared with concurrent Deliver calls: see committer); edits,
// deletes and reactions change what is stored and never start a turn.
func (g *Gateway) Deliver(ctx context.Context, in adapters.Inbound) (int64, error) {
	m, err := normalize(in)
	if err != nil {
		return 0, err
	}
	if self, ok := g.self(in.Chat.Platform()); ok && string(in.Sender) == self {
		m.FromBot = true
	}
	g.metrics.inbound.WithLabelValues(in.Chat.Platform(), kindName(in.Kind)).Inc()
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
		work = g.route(m, in.Backfilled && time.Since(in.Time) > adapters.BackfillTriggerAge)
	}
	inserted, err := g.commits.commit(ctx, &m, work)
	if err != nil {
		return 0, fmt.Errorf("store message %s/%s: %w", m.ChatJID, m.ID, err)
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
	m, err := normalize(in)
	if err != nil {
		return 0, err
	}
	if self, ok := g.self(in.Chat.Platform()); ok && string(in.Sender) == self {
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

// normalize validates an inbound event and converts it to a store message.
// Garbage gets an error wrapping ErrBadMessage that says what was wrong.
func normalize(in adapters.Inbound) (store.Message, error) {
	bad := func(format string, args ...any) (store.Message, error) {
		where := fmt.Sprintf("%s %q in %q", kindName(in.Kind), in.ID, in.Chat)
		return store.Message{}, fmt.Errorf("%w: %s: %s", ErrBadMessage, where, fmt.Sprintf(format, args...))
	}
	switch in.Kind {
	case "", adapters.KindMessage, adapters.KindEdit, adapters.KindDelete, adapters.KindReaction:
	default:
		return bad("unknown kind %q (want message, edit, delete or reaction)", in.Kind)
	}
	if _, err := adapters.ParseJID(string(in.Chat)); err != nil {
		return bad("chat: %v", err)
	}
	if in.ID == "" || len(in.ID) > 256 || !utf8.ValidString(in.ID) {
		return bad("message id must be 1 to 256 bytes of UTF-8")
	}
	needSender := in.Kind != adapters.KindDelete && in.Kind != adapters.KindEdit
	if in.Sender != "" || needSender {
		if _, err := adapters.ParseJID(string(in.Sender)); err != nil {
			return bad("sender: %v", err)
		}
	}
	if len(in.Text) > maxInboundText {
		return bad("text is %d bytes, more than the %d an adapter may deliver", len(in.Text), maxInboundText)
	}
	for _, f := range []struct{ name, v string }{{"text", in.Text}, {"sender name", in.SenderName}, {"topic", in.Topic}, {"reply_to", in.ReplyTo}} {
		if i := invalidUTF8At(f.v); i >= 0 {
			return bad("%s is not valid UTF-8 (byte %d)", f.name, i)
		}
	}
	if in.Kind == adapters.KindReaction && (in.Reaction == "" || len(in.Reaction) > 128 || !utf8.ValidString(in.Reaction)) {
		return bad("a reaction needs an emoji of 1 to 128 bytes")
	}
	t := in.Time
	if t.IsZero() {
		t = time.Now()
	}
	verb := in.Verb
	if verb != adapters.VerbMention {
		verb = adapters.VerbMessage
	}
	return store.Message{
		ChatJID: string(in.Chat), ID: in.ID, Sender: string(in.Sender), SenderName: in.SenderName,
		Text: capText(in.Text), Topic: in.Topic, ReplyTo: in.ReplyTo, Verb: verb, FromBot: in.FromBot, OtherBot: in.OtherBot,
		Time: t, Attachments: in.Attachments,
	}, nil
}

func kindName(k adapters.Kind) string {
	if k == "" {
		return string(adapters.KindMessage)
	}
	return string(k)
}

// invalidUTF8At is the byte offset of the first invalid UTF-8 in s, or -1.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return -1
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
	return []store.WorkItem{{Folder: r.Target, ChatJID: m.ChatJID, Topic: m.Topic, Mode: string(mode), Trigger: TriggerMessage}}
}

type engageKey struct{ chat, topic string }

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
}

func (e *engagements) start(chat, topic, folder string, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// Bound memory: drop expired entries, at most once a minute so that a
	// map full of live engagements is not rescanned on every start.
	if now := time.Now(); len(e.m) > 10_000 && now.Sub(e.pruned) > time.Minute {
		e.pruned = now
		for k, v := range e.m {
			if now.After(v.until) {
				delete(e.m, k)
			}
		}
	}
	e.m[engageKey{chat, topic}] = engagement{folder: folder, until: time.Now().Add(ttl)}
}

func (e *engagements) stop(chat, topic string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, engageKey{chat, topic})
}

// stopIf ends the engagement in chat/topic if allowed(its folder).
func (e *engagements) stopIf(chat, topic string, allowed func(string) bool) (folder string, ended bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.m[engageKey{chat, topic}]
	if !ok || time.Now().After(en.until) {
		return "", false
	}
	if !allowed(en.folder) {
		return en.folder, false
	}
	delete(e.m, engageKey{chat, topic})
	return en.folder, true
}

func (e *engagements) active(chat, topic, folder string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	en, ok := e.m[engageKey{chat, topic}]
	return ok && en.folder == folder && time.Now().Before(en.until)
}

// Engage makes folder answer follow-ups in chat/topic without a mention.
func (g *Gateway) Engage(chat, topic, folder string) {
	g.engage.start(chat, topic, folder, g.opt.EngageTTL)
}

// Disengage ends an engagement.
func (g *Gateway) Disengage(chat, topic string) { g.engage.stop(chat, topic) }

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// InjectRequest is a synthetic inbound message addressed to a folder.
type InjectRequest struct {
	Chat    string
	Text    string
	Sender  string // default "switchboard:user/operator"
	Folder  string // default: the chat's owner
	Trigger string // default TriggerInject
}

// Inject stores a synthetic message in chat and queues a turn of the chat's
// owner (or req.Folder), bypassing trigger rules. It works with or without a
// running gateway: a running one picks the work up within its poll interval.
func Inject(ctx context.Context, st *store.Store, t *routing.Table, req InjectRequest) (store.Message, string, error) {
	if _, err := adapters.ParseJID(req.Chat); err != nil {
		return store.Message{}, "", err
	}
	if strings.TrimSpace(req.Text) == "" {
		return store.Message{}, "", fmt.Errorf("%w: text is empty", ErrBadMessage)
	}
	folder := req.Folder
	if folder == "" {
		owner, ok := t.Owner(req.Chat, "")
		if !ok {
			return store.Message{}, "", fmt.Errorf("inject into %s: %w; add a route for it first", req.Chat, ErrNoOwner)
		}
		folder = owner
	}
	sender := req.Sender
	if sender == "" {
		sender = "switchboard:user/operator"
	}
	trigger := req.Trigger
	if trigger == "" {
		trigger = TriggerInject
	}
	name := sender[strings.LastIndexByte(sender, '/')+1:]
	m, err := normalize(adapters.Inbound{Chat: adapters.JID(req.Chat), ID: newID("inj-"), Sender: adapters.JID(sender),
		SenderName: name, Text: req.Text, Verb: adapters.VerbMention})
	if err != nil {
		return store.Message{}, "", err
	}
	work := []store.WorkItem{{Folder: folder, ChatJID: req.Chat, Mode: string(routing.Trigger), Trigger: trigger}}
	if _, err := st.EnqueueMessage(ctx, &m, work); err != nil {
		return store.Message{}, "", fmt.Errorf("inject into %s: %w", req.Chat, err)
	}
	return m, folder, nil
}

// Inject is the running gateway's Inject: it also wakes the folder at once.
func (g *Gateway) Inject(ctx context.Context, req InjectRequest) (store.Message, error) {
	m, folder, err := Inject(ctx, g.st, g.table.Load(), req)
	if err != nil {
		return m, err
	}
	g.notifyStored(m.ChatJID, m.Seq)
	g.queue.kick(folder)
	return m, nil
}

// SendRequest is an outbound message queued in the outbox.
type SendRequest struct {
	Chat    string
	Text    string
	Topic   string
	ReplyTo string
	Folder  string           // who sent it (for delivery-failure notices); "" for the operator
	Key     string           // idempotency key; generated when empty
	Kind    store.OutboxKind // store.OutboxSend when empty
	File    string           // kind file: the file, relative to Folder's directory; Text is the caption
}

// QueueSend writes a message to the outbox. Delivery happens in the running
// gateway (at once if it is this process, else within its poll interval).
func QueueSend(ctx context.Context, st *store.Store, req SendRequest) (store.OutboxItem, error) {
	if _, err := adapters.ParseJID(req.Chat); err != nil {
		return store.OutboxItem{}, err
	}
	if req.File != "" {
		req.Kind = store.OutboxFile
		if req.Folder == "" || !filepath.IsLocal(req.File) {
			return store.OutboxItem{}, fmt.Errorf("send file to %s: the file must be inside the sending group's folder", req.Chat)
		}
	} else if strings.TrimSpace(req.Text) == "" {
		return store.OutboxItem{}, fmt.Errorf("send to %s: text is empty", req.Chat)
	}
	if req.Key == "" {
		req.Key = newID("send-")
	}
	if req.Kind == "" {
		req.Kind = store.OutboxSend
	}
	return st.AddOutbox(ctx, store.OutboxItem{Key: req.Key, Kind: req.Kind, Folder: req.Folder, ChatJID: req.Chat,
		Topic: req.Topic, ReplyTo: req.ReplyTo, Text: capText(strings.ToValidUTF8(req.Text, "\uFFFD")), FilePath: req.File})
}

// Send queues a message and wakes the outbox.
func (g *Gateway) Send(ctx context.Context, req SendRequest) (store.OutboxItem, error) {
	it, err := QueueSend(ctx, g.st, req)
	if err == nil {
		g.outbox.wake()
	}
	return it, err
}
