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
	"switchboard/mcpserver"
	"switchboard/routing"
	"switchboard/store"
)

// The gateway side of the MCP tools: mcpBackend implements mcpserver.Backend over
// the store, the queue, the outbox and the adapters. The tool bodies live in
// mcpserver; here is only what they act through.

// sendWait bounds how long send and reply wait for the platform to accept a
// message before answering "pending".
const sendWait = 3 * time.Second

// newMCP builds the MCP server; its sockets appear at the first reload.
func newMCP(g *Gateway) (*mcpserver.Server, error) {
	version := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	return mcpserver.New(mcpserver.Options{Layout: g.layout, Operator: g.opt.Operator, Backend: mcpBackend{g},
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
	gs := make([]mcpserver.Group, len(folders))
	for i, f := range folders {
		gs[i] = mcpserver.Group{Folder: f, Overrides: over[f]}
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

var _ mcpserver.Backend = mcpBackend{}

func (b mcpBackend) Table() *routing.Table { return b.g.Table() }

func (b mcpBackend) Reload(ctx context.Context) error { return b.g.reload(ctx) }

func (b mcpBackend) Send(ctx context.Context, folder string, m mcpserver.Outgoing) (mcpserver.Sent, error) {
	// A platform no adapter serves is refused here, before anything is
	// queued: the outbox would only fail it later.
	if m.Kind == store.OutboxFile {
		if _, err := capability[adapters.FileSender](b, m.Chat, "send_file"); err != nil {
			return mcpserver.Sent{}, err
		}
	} else if _, err := capability[adapters.Adapter](b, m.Chat, "send"); err != nil {
		return mcpserver.Sent{}, err
	}
	it, err := b.g.send(ctx, control.SendRequest{Chat: m.Chat, Text: m.Text, Topic: m.Topic, ReplyTo: m.ReplyTo,
		Folder: folder, Key: store.NewID(mcpKeyPrefix), Kind: m.Kind, File: m.File})
	if err != nil {
		return mcpserver.Sent{}, err
	}
	b.g.markReplied(folder, m.Chat)
	return b.awaitDelivery(ctx, it), nil
}

// awaitDelivery waits, for at most sendWait, until the platform accepted
// or refused the item: the outbox wakes it when the item settles.
func (b mcpBackend) awaitDelivery(ctx context.Context, it store.OutboxItem) mcpserver.Sent {
	deadline := time.NewTimer(sendWait)
	defer deadline.Stop()
	for {
		settled := b.g.outbox.await(it.Key) // before reading: no wake-up is missed
		if cur, err := b.g.st.OutboxByKey(ctx, it.Key); err == nil {
			it = cur
		}
		switch it.Status {
		case store.OutboxSent:
			return mcpserver.Sent{Key: it.Key, Status: mcpserver.SentOK, ID: it.PlatformID}
		case store.OutboxFailed:
			return mcpserver.Sent{Key: it.Key, Status: mcpserver.SentFailed, Error: it.Error}
		}
		select {
		case <-ctx.Done():
			return mcpserver.Sent{Key: it.Key, Status: mcpserver.SentPending}
		case <-deadline.C:
			return mcpserver.Sent{Key: it.Key, Status: mcpserver.SentPending}
		case <-settled:
		}
	}
}

func (b mcpBackend) RunningTurn(folder string) (mcpserver.Turn, bool) {
	id, t := b.g.runningTurn(folder)
	if t == nil {
		return mcpserver.Turn{}, false
	}
	turn := mcpserver.Turn{ID: id, Chat: t.batch.ChatJID, Topic: t.batch.Topic, LastMessageID: lastMessageID(t.batch)}
	if len(t.batch.Items) > 0 {
		turn.Trigger = t.batch.Items[0].Trigger
	}
	return turn, true
}

// capability returns the adapter of chat's platform as capability C; verb
// names it in the error when the adapter lacks it.
func capability[C any](b mcpBackend, chat adapters.JID, verb string) (C, error) {
	var c C
	platform := chat.Platform()
	ad, ok := b.g.adapters[platform]
	if !ok {
		return c, fmt.Errorf("%w: %s", adapters.ErrNoAdapter, platform)
	}
	c, ok = ad.(C)
	if !ok {
		return c, adapters.Unsupported(platform, verb)
	}
	return c, nil
}

// messageRef addresses message id of chat. Some platforms address a
// message in a thread through the thread, so its stored topic goes along.
func (b mcpBackend) messageRef(ctx context.Context, chat adapters.JID, id adapters.MessageID) adapters.MessageRef {
	ref := adapters.MessageRef{Chat: chat, ID: id}
	if m, err := b.g.st.MessageByID(ctx, chat, id); err == nil {
		ref.Topic = m.Topic
	}
	return ref
}

func (b mcpBackend) Edit(ctx context.Context, chat adapters.JID, id adapters.MessageID, text string) error {
	e, err := capability[adapters.Editor](b, chat, "edit")
	if err != nil {
		return err
	}
	if err := e.Edit(ctx, b.messageRef(ctx, chat, id), text); err != nil {
		return err
	}
	return b.recordEdit(ctx, chat, id, text)
}

func (b mcpBackend) Delete(ctx context.Context, chat adapters.JID, id adapters.MessageID) error {
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

func (b mcpBackend) React(ctx context.Context, chat adapters.JID, id adapters.MessageID, reaction string) error {
	r, err := capability[adapters.Reactor](b, chat, "react")
	if err != nil {
		return err
	}
	return r.React(ctx, b.messageRef(ctx, chat, id), reaction)
}

func (b mcpBackend) Pin(ctx context.Context, chat adapters.JID, id adapters.MessageID) error {
	p, err := capability[adapters.Pinner](b, chat, "pin")
	if err != nil {
		return err
	}
	return p.Pin(ctx, b.messageRef(ctx, chat, id))
}

func (b mcpBackend) Unpin(ctx context.Context, chat adapters.JID, id adapters.MessageID) error {
	p, err := capability[adapters.Pinner](b, chat, "unpin")
	if err != nil {
		return err
	}
	return p.Unpin(ctx, b.messageRef(ctx, chat, id))
}

// recordEdit brings the stored copy of an edited message up to date.
func (b mcpBackend) recordEdit(ctx context.Context, chat adapters.JID, id adapters.MessageID, text string) error {
	m, err := b.g.st.MessageByID(ctx, chat, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	m.Text = store.CapText(text)
	m.Edited = time.Time{}
	_, err = b.g.st.EditMessage(ctx, &m)
	return err
}

// ignoreNotFound drops a store "not found": the mcpserver.Backend methods that
// look something up by key report a missing key as found false, not as an
// error.
func ignoreNotFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

func (b mcpBackend) Messages(ctx context.Context, chat adapters.JID, beforeSeq int64, limit int) ([]store.Message, error) {
	return b.g.st.MessagesBefore(ctx, chat, beforeSeq, limit)
}

func (b mcpBackend) Thread(ctx context.Context, chat adapters.JID, topic string, limit int) ([]store.Message, error) {
	return b.g.st.Thread(ctx, chat, topic, limit)
}

func (b mcpBackend) FetchHistory(ctx context.Context, chat adapters.JID, beforeID adapters.MessageID, limit int) ([]store.Message, string, error) {
	if f, ok := b.g.adapters[chat.Platform()].(adapters.HistoryFetcher); ok {
		in, err := f.FetchHistory(ctx, chat, adapters.HistoryQuery{Before: beforeID, Limit: limit})
		if err == nil {
			out := make([]store.Message, 0, len(in))
			for _, m := range in {
				// What the platform has fills gaps in the store; it never
				// starts a turn.
				seq, err := b.g.storeFetched(ctx, m)
				if err != nil {
					b.g.log.Warn("fetched message not stored", "jid", chat, "msg_id", m.ID, "err", err)
					continue
				}
				// What the platform returned, not the stored copy: a
				// message stored earlier may have changed since.
				out = append(out, store.Message{Seq: seq, ChatJID: m.Chat, ID: m.ID, Sender: m.Sender,
					SenderName: m.SenderName, Text: m.Text, Time: m.Time, Topic: m.Topic, ReplyTo: m.ReplyTo, Verb: m.Verb,
					FromBot: m.FromBot, Attachments: m.Attachments})
			}
			return out, "platform", nil
		}
		if !errors.Is(err, adapters.ErrUnsupported) {
			return nil, "", fmt.Errorf("fetch history of %s from %s: %w", chat, chat.Platform(), err)
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
	return ms, "store", err
}

func (b mcpBackend) Search(ctx context.Context, query string, o store.SearchOptions) ([]store.Hit, error) {
	return b.g.st.Search(ctx, query, o)
}

func (b mcpBackend) Chats(ctx context.Context) ([]adapters.JID, error) {
	cs, err := b.g.st.Chats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]adapters.JID, len(cs))
	for i, c := range cs {
		out[i] = c.JID
	}
	return out, nil
}

func (b mcpBackend) MessageByID(ctx context.Context, chat adapters.JID, id adapters.MessageID) (store.Message, bool, error) {
	m, err := b.g.st.MessageByID(ctx, chat, id)
	if err != nil {
		return store.Message{}, false, ignoreNotFound(err)
	}
	return m, true, nil
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
func (b mcpBackend) Enqueue(ctx context.Context, w store.WorkItem) (int64, error) {
	w.Mode, w.Chain = string(routing.Trigger), b.g.chainOf(w.Origin)
	id, err := b.g.st.Enqueue(ctx, w)
	if err != nil {
		return 0, err
	}
	b.g.workers.kick(w.Folder)
	return id, nil
}

// Inject stores an agent's message one hop deeper in the chain than the
// caller's running turn: an agent injecting into its own chat every turn
// stops at limits.max_chain like a delegate ping-pong.
func (b mcpBackend) Inject(ctx context.Context, from string, chat adapters.JID, text string, sender adapters.JID) (store.Message, string, error) {
	owner, _ := b.g.Table().Owner(chat, "")
	m, err := b.g.inject(ctx, control.InjectRequest{Chat: chat, Text: text, Sender: sender, Folder: owner, Origin: from, Chain: b.g.chainOf(from)})
	if err != nil {
		return store.Message{}, "", err
	}
	return m, owner, nil
}

func (b mcpBackend) ResetSessions(ctx context.Context, folder string) (int64, error) {
	return b.g.st.ResetSessions(ctx, folder)
}

func (b mcpBackend) Engage(chat adapters.JID, topic, folder string) (time.Time, error) {
	if b.g.opt.EngageTTL <= 0 {
		return time.Time{}, errors.New("engagement is off: engage_ttl is 0 in the gateway's config")
	}
	b.g.engageChat(chat, topic, folder)
	return b.g.opt.Now().Add(b.g.opt.EngageTTL).UTC(), nil
}

func (b mcpBackend) Disengage(chat adapters.JID, topic string, allowed func(string) bool) (string, bool) {
	return b.g.engage.stopIf(chat, topic, allowed)
}

func (b mcpBackend) AgentSessions(ctx context.Context, folder string) ([]store.SessionRow, error) {
	return b.g.st.FolderSessions(ctx, folder)
}

func (b mcpBackend) Turns(ctx context.Context, folder string, limit int) ([]store.Turn, error) {
	return b.g.st.Turns(ctx, folder, limit)
}
