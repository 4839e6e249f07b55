package gateway

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/control"
	"switchboard/ipc"
	"switchboard/routing"
	"switchboard/store"
)

// The gateway side of the MCP tools: mcpBackend implements ipc.Backend over
// the store, the queue, the outbox and the adapters. The tool bodies live in
// ipc; here is only what they act through.

// sendWait bounds how long send and reply wait for the platform to accept a
// message before answering "pending".
const sendWait = 3 * time.Second

// newMCP builds the MCP server; its sockets appear at the first reload.
func newMCP(g *Gateway) (*ipc.Server, error) {
	version := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	return ipc.New(ipc.Options{Layout: g.layout, Operator: g.opt.Operator, Backend: mcpBackend{g},
		Logger: g.log.With("component", "mcp"), Version: version, OnCall: g.mcpCall})
}

// setupGroups creates the working directory and .mcp.json of each folder
// this process has not set up yet, several at a time: with a thousand
// groups on a slow disk one after the other takes seconds.
func (g *Gateway) setupGroups(folders []string) {
	if g.setUp == nil {
		g.setUp = map[string]bool{}
	}
	var todo []string
	for _, f := range folders {
		if !g.setUp[f] {
			todo = append(todo, f)
		}
	}
	done := make([]bool, len(todo))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, f := range todo {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := g.layout.Setup(f, g.opt.Exe); err != nil {
				g.log.Error("set up group folder", "folder", f, "err", err)
				return
			}
			done[i] = true
		})
	}
	wg.Wait()
	for i, f := range todo {
		if done[i] {
			g.setUp[f] = true
		}
	}
}

// syncMCP gives the MCP server the current groups and their grant overrides:
// sockets come and go with the groups, and sessions whose tool set changed
// are told so.
func (g *Gateway) syncMCP(ctx context.Context, folders []string) {
	over, err := g.st.AllGrantOverrides(ctx)
	if err != nil {
		g.log.Error("load grant overrides for mcp", "err", err)
		return
	}
	gs := make([]ipc.Group, len(folders))
	for i, f := range folders {
		gs[i] = ipc.Group{Folder: f, Overrides: over[f]}
	}
	if err := g.mcp.Sync(gs); err != nil {
		g.log.Error("mcp socket unavailable: the agents of these groups have no tools until it is fixed", "err", err)
	}
}

// mcpSocket is the absolute path of folder's MCP socket.
func (g *Gateway) mcpSocket(folder string) string { return g.mcp.SocketPath(folder) }

// mcpKeyPrefix starts the outbox keys of what agents send through their
// tools.
const mcpKeyPrefix = "mcp-"

type mcpBackend struct{ g *Gateway }

var _ ipc.Backend = mcpBackend{}

func (b mcpBackend) Table() *routing.Table { return b.g.Table() }

func (b mcpBackend) Reload(ctx context.Context) error { return b.g.reload(ctx) }

func (b mcpBackend) Send(ctx context.Context, folder string, m ipc.Outgoing) (ipc.Sent, error) {
	// A platform no adapter serves is refused here, before anything is
	// queued: the outbox would only fail it later.
	if m.Kind == ipc.KindFile {
		if _, err := capability[adapters.FileSender](b, m.Chat, "send_file"); err != nil {
			return ipc.Sent{}, err
		}
	} else if _, err := capability[adapters.Adapter](b, m.Chat, "send"); err != nil {
		return ipc.Sent{}, err
	}
	it, err := b.g.send(ctx, control.SendRequest{Chat: m.Chat, Text: m.Text, Topic: m.Topic, ReplyTo: m.ReplyTo,
		Folder: folder, Key: control.NewID(mcpKeyPrefix), Kind: store.OutboxKind(m.Kind), File: m.File})
	if err != nil {
		return ipc.Sent{}, err
	}
	b.g.markReplied(folder, m.Chat)
	return b.awaitDelivery(ctx, it), nil
}

// awaitDelivery waits, for at most sendWait, until the platform accepted
// or refused the item: the outbox wakes it when the item settles.
func (b mcpBackend) awaitDelivery(ctx context.Context, it store.OutboxItem) ipc.Sent {
	deadline := time.NewTimer(sendWait)
	defer deadline.Stop()
	for {
		settled := b.g.outbox.await(it.Key) // before reading: no wake-up is missed
		if cur, err := b.g.st.OutboxByKey(ctx, it.Key); err == nil {
			it = cur
		}
		switch it.Status {
		case store.OutboxSent:
			return ipc.Sent{Key: it.Key, Status: ipc.SentOK, ID: it.PlatformID}
		case store.OutboxFailed:
			return ipc.Sent{Key: it.Key, Status: ipc.SentFailed, Error: it.Error}
		}
		select {
		case <-ctx.Done():
			return ipc.Sent{Key: it.Key, Status: ipc.SentPending}
		case <-deadline.C:
			return ipc.Sent{Key: it.Key, Status: ipc.SentPending}
		case <-settled:
		}
	}
}

func (b mcpBackend) RunningTurn(folder string) (ipc.Turn, bool) {
	id, t := b.g.runningTurn(folder)
	if t == nil {
		return ipc.Turn{}, false
	}
	turn := ipc.Turn{ID: id, Chat: t.batch.ChatJID, Topic: t.batch.Topic, LastMessageID: lastMessageID(t.batch)}
	if len(t.batch.Items) > 0 {
		turn.Trigger = string(t.batch.Items[0].Trigger)
	}
	return turn, true
}

// capability returns the adapter of chat's platform as capability C; verb
// names it in the error when the adapter lacks it.
func capability[C any](b mcpBackend, chat, verb string) (C, error) {
	var c C
	platform := adapters.JID(chat).Platform()
	ad, ok := b.g.adapters[platform]
	if !ok {
		return c, fmt.Errorf("%w: %s", ipc.ErrNoAdapter, platform)
	}
	c, ok = ad.(C)
	if !ok {
		return c, adapters.Unsupported(platform, verb)
	}
	return c, nil
}

// messageRef addresses message id of chat. Some platforms address a
// message in a thread through the thread, so its stored topic goes along.
func (b mcpBackend) messageRef(ctx context.Context, chat, id string) adapters.MessageRef {
	ref := adapters.MessageRef{Chat: adapters.JID(chat), ID: id}
	if m, err := b.g.st.MessageByID(ctx, chat, id); err == nil {
		ref.Topic = m.Topic
	}
	return ref
}

func (b mcpBackend) Edit(ctx context.Context, chat, id, text string) error {
	e, err := capability[adapters.Editor](b, chat, "edit")
	if err != nil {
		return err
	}
	if err := e.Edit(ctx, b.messageRef(ctx, chat, id), text); err != nil {
		return err
	}
	return b.recordEdit(ctx, chat, id, text)
}

func (b mcpBackend) Delete(ctx context.Context, chat, id string) error {
	d, err := capability[adapters.Deleter](b, chat, "delete")
	if err != nil {
		return err
	}
	if err := d.Delete(ctx, b.messageRef(ctx, chat, id)); err != nil {
		return err
	}
	_, err = b.g.st.DeleteMessage(ctx, chat, id)
	return err
}

func (b mcpBackend) React(ctx context.Context, chat, id, reaction string) error {
	r, err := capability[adapters.Reactor](b, chat, "react")
	if err != nil {
		return err
	}
	return r.React(ctx, b.messageRef(ctx, chat, id), reaction)
}

func (b mcpBackend) Pin(ctx context.Context, chat, id string) error {
	p, err := capability[adapters.Pinner](b, chat, "pin")
	if err != nil {
		return err
	}
	return p.Pin(ctx, b.messageRef(ctx, chat, id))
}

func (b mcpBackend) Unpin(ctx context.Context, chat, id string) error {
	p, err := capability[adapters.Pinner](b, chat, "unpin")
	if err != nil {
		return err
	}
	return p.Unpin(ctx, b.messageRef(ctx, chat, id))
}

// recordEdit brings the stored copy of an edited message up to date.
func (b mcpBackend) recordEdit(ctx context.Context, chat, id, text string) error {
	m, err := b.g.st.MessageByID(ctx, chat, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	m.Text = control.CapText(text)
	m.Edited = time.Time{}
	_, err = b.g.st.EditMessage(ctx, &m)
	return err
}

// ignoreNotFound drops a store "not found": the ipc.Backend methods that
// look something up by key report a missing key as found false, not as an
// error.
func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func toIPC(m store.Message) ipc.Message { return storedToIPC(toStored(m)) }

// storedToIPC is the one conversion to the MCP tools' message, for stored
// messages and (Seq 0) those fetched from the platform.
func storedToIPC(m adapters.Stored) ipc.Message {
	return ipc.Message{Seq: m.Seq, ChatJID: string(m.Chat), ID: m.ID, Sender: string(m.Sender), Name: m.SenderName, Text: m.Text,
		Time: m.Time.UTC(), Topic: m.Topic, ReplyTo: m.ReplyTo, Verb: m.Verb, FromBot: m.FromBot, Attachments: m.Attachments}
}

func toIPCAll(ms []store.Message) []ipc.Message {
	out := make([]ipc.Message, len(ms))
	for i, m := range ms {
		out[i] = toIPC(m)
	}
	return out
}

func (b mcpBackend) Messages(ctx context.Context, chat string, beforeSeq int64, limit int) ([]ipc.Message, error) {
	ms, err := b.g.st.MessagesBefore(ctx, chat, beforeSeq, limit)
	return toIPCAll(ms), err
}

func (b mcpBackend) Thread(ctx context.Context, chat, topic string, limit int) ([]ipc.Message, error) {
	ms, err := b.g.st.Thread(ctx, chat, topic, limit)
	return toIPCAll(ms), err
}

func (b mcpBackend) FetchHistory(ctx context.Context, chat, beforeID string, limit int) ([]ipc.Message, string, error) {
	jid := adapters.JID(chat)
	if f, ok := b.g.adapters[jid.Platform()].(adapters.HistoryFetcher); ok {
		in, err := f.FetchHistory(ctx, jid, adapters.HistoryQuery{Before: beforeID, Limit: limit})
		if err == nil {
			out := make([]ipc.Message, 0, len(in))
			for _, m := range in {
				// What the platform has fills gaps in the store; it never
				// starts a turn.
				seq, err := b.g.storeFetched(ctx, m)
				if err != nil {
					b.g.log.Warn("fetched message not stored", "jid", chat, "msg_id", m.ID, "err", err)
					continue
				}
				out = append(out, storedToIPC(adapters.Stored{Seq: seq, Inbound: m}))
			}
			return out, "platform", nil
		}
		if !errors.Is(err, adapters.ErrUnsupported) {
			return nil, "", fmt.Errorf("fetch history of %s from %s: %w", chat, jid.Platform(), err)
		}
	}
	var before int64
	if beforeID != "" {
		m, err := b.g.st.MessageByID(ctx, chat, beforeID)
		if err != nil {
			return nil, "", fmt.Errorf("before_id %s: %w", beforeID, err)
		}
		before = m.Seq
	}
	ms, err := b.g.st.MessagesBefore(ctx, chat, before, limit)
	return toIPCAll(ms), "store", err
}

func (b mcpBackend) Search(ctx context.Context, query string, o ipc.SearchOptions) ([]ipc.Hit, error) {
	so := store.SearchOptions{ChatJIDs: o.Chats, Sender: o.Sender, Since: o.Since, Limit: o.Limit}
	hits, err := b.g.st.Search(ctx, query, so)
	if err != nil {
		return nil, err
	}
	out := make([]ipc.Hit, len(hits))
	for i, h := range hits {
		out[i] = ipc.Hit{Message: toIPC(h.Message), Snippet: h.Snippet, Rank: h.Rank}
	}
	return out, nil
}

func (b mcpBackend) Chats(ctx context.Context) ([]string, error) {
	cs, err := b.g.st.Chats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.JID
	}
	return out, nil
}

func (b mcpBackend) MessageByID(ctx context.Context, chat, id string) (ipc.Message, bool, error) {
	m, err := b.g.st.MessageByID(ctx, chat, id)
	if err != nil {
		return ipc.Message{}, false, ignoreNotFound(err)
	}
	return toIPC(m), true, nil
}

func (b mcpBackend) AddRoute(ctx context.Context, r routing.Route) (routing.Route, error) {
	added, err := b.g.st.AddRoute(ctx, r)
	if err != nil {
		return added, err
	}
	return added, b.g.reload(ctx)
}

func (b mcpBackend) DeleteRoute(ctx context.Context, id int64) (routing.Route, bool, error) {
	r, err := b.g.st.DeleteRoute(ctx, id)
	if err != nil {
		return r, false, ignoreNotFound(err)
	}
	return r, true, b.g.reload(ctx)
}

func (b mcpBackend) SwapRoutes(ctx context.Context, remove []int64, add []routing.Route) ([]routing.Route, bool, error) {
	rs, err := b.g.st.SwapRoutes(ctx, remove, add)
	if err != nil {
		return nil, false, ignoreNotFound(err)
	}
	return rs, true, b.g.reload(ctx)
}

func (b mcpBackend) Groups(ctx context.Context) ([]string, error) { return b.g.st.Groups(ctx) }

func (b mcpBackend) CreateGroup(ctx context.Context, folder string) (bool, error) {
	if err := b.g.layout.Setup(folder, b.g.opt.Exe); err != nil {
		return false, err
	}
	if err := b.g.st.AddGroup(ctx, folder); err != nil {
		if errors.Is(err, store.ErrExists) {
			return false, nil
		}
		return false, err
	}
	return true, b.g.reload(ctx)
}

// Enqueue queues a delegate or escalate prompt one hop deeper in the chain
// than the caller's running turn (the chain guard stops it if too deep).
func (b mcpBackend) Enqueue(ctx context.Context, w ipc.Work) (int64, error) {
	id, err := b.g.st.Enqueue(ctx, store.WorkItem{Folder: w.Folder, ChatJID: w.Chat, Topic: w.Topic,
		Mode: string(routing.Trigger), Trigger: store.Trigger(w.Trigger), Prompt: w.Prompt, Origin: w.Origin, Chain: b.g.chainOf(w.Origin)})
	if err != nil {
		return 0, err
	}
	b.g.workers.kick(w.Folder)
	return id, nil
}

// Inject stores an agent's message one hop deeper in the chain than the
// caller's running turn: an agent injecting into its own chat every turn
// stops at limits.max_chain like a delegate ping-pong.
func (b mcpBackend) Inject(ctx context.Context, from, chat, text, sender string) (ipc.Message, string, error) {
	owner, _ := b.g.Table().Owner(chat, "")
	m, err := b.g.inject(ctx, control.InjectRequest{Chat: chat, Text: text, Sender: sender, Folder: owner, Origin: from, Chain: b.g.chainOf(from)})
	if err != nil {
		return ipc.Message{}, "", err
	}
	return toIPC(m), owner, nil
}

func (b mcpBackend) ResetSessions(ctx context.Context, folder string) (int64, error) {
	return b.g.st.ResetSessions(ctx, folder)
}

func (b mcpBackend) Engage(chat, topic, folder string) (time.Time, error) {
	if b.g.opt.EngageTTL <= 0 {
		return time.Time{}, errors.New("engagement is off: engage_ttl is 0 in the gateway's config")
	}
	b.g.engageChat(chat, topic, folder)
	return b.g.opt.Now().Add(b.g.opt.EngageTTL).UTC(), nil
}

func (b mcpBackend) Disengage(chat, topic string, allowed func(string) bool) (string, bool) {
	return b.g.engage.stopIf(chat, topic, allowed)
}

func (b mcpBackend) AgentSessions(ctx context.Context, folder string) ([]ipc.AgentSession, error) {
	rows, err := b.g.st.FolderSessions(ctx, folder)
	if err != nil {
		return nil, err
	}
	out := make([]ipc.AgentSession, len(rows))
	for i, r := range rows {
		out[i] = ipc.AgentSession{Chat: r.ChatJID, Topic: r.Topic, SessionID: r.SessionID, Updated: r.Updated.UTC()}
	}
	return out, nil
}

func (b mcpBackend) Turns(ctx context.Context, folder string, limit int) ([]ipc.TurnRecord, error) {
	ts, err := b.g.st.Turns(ctx, folder, limit)
	if err != nil {
		return nil, err
	}
	out := make([]ipc.TurnRecord, len(ts))
	for i, t := range ts {
		out[i] = ipc.TurnRecord{ID: t.ID, Chat: t.ChatJID, Topic: t.Topic, Trigger: string(t.Trigger), Attempt: t.Attempt,
			Started: t.Started.UTC(), DurationMS: t.Duration.Milliseconds(), Status: string(t.Status), Error: t.Error, SessionID: t.SessionID,
			CostUSD: t.Usage.CostUSD, InputTokens: t.Usage.InputTokens, OutputTokens: t.Usage.OutputTokens,
			CacheCreationTokens: t.Usage.CacheCreationTokens, CacheReadTokens: t.Usage.CacheReadTokens, NumTurns: t.Usage.NumTurns,
			APIMS: t.Usage.APIDuration.Milliseconds()}
	}
	return out, nil
}
