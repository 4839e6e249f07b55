package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// The gateway side of the MCP tools: mcpBackend implements ipc.Backend over
// the store, the queue, the outbox and the adapters. The tool bodies live in
// ipc; here is only what they act through.

// sendWait bounds how long send and reply wait for the platform to accept a
// message before answering "pending".
const sendWait = 3 * time.Second

// mcpKeyPrefix starts the outbox keys of what agents send through their
// tools.
const mcpKeyPrefix = "mcp-"

// mcpDeps is what the MCP backend acts through. The tools read and
// change much of the store, so it is the store itself.
type mcpDeps struct {
	st            *store.Store
	adapters      adapterSet
	table         func() *routing.Table
	reload        func(context.Context) error // re-read groups, routes and budgets now
	outbox        mcpOutbox
	active        *activeTurns
	intake        mcpIntake
	engage        *engagements
	engageTTL     time.Duration
	kick          func(folder groups.Folder) // wake a folder (workers.kick)
	wakeScheduler func()
	layout        groups.Layout
	exe           string           // Options.Exe, for a new group's .mcp.json
	timezone      string           // Options.Timezone: tasks' default zone
	zone          *time.Location   // budget days and months
	now           func() time.Time // Options.Now
	log           *slog.Logger
}

// mcpOutbox is the outbox as the tools use it.
type mcpOutbox interface {
	send(ctx context.Context, req ops.SendRequest) (store.OutboxItem, error)
	await(key string) (settled <-chan struct{}, forget func())
}

// mcpIntake is intake as the tools use it.
type mcpIntake interface {
	storeFetched(ctx context.Context, in adapters.Inbound) (int64, error)
	inject(ctx context.Context, req ops.InjectRequest) (store.Message, error)
}

// mcpBackend implements ipc.Backend: one part per group of its
// interfaces, all over the same mcpDeps.
type mcpBackend struct {
	mcpMessenger // ipc.Messenger
	mcpHistory   // ipc.History
	mcpAdmin     // ipc.State, RouteStore and GroupStore
	mcpSessions  // ipc.Sessions
	mcpTasks     // ipc.TaskStore (mcp_tasks.go)
	mcpSpend     // ipc.Spend
	*approvals   // ipc.Approvals (approvals.go)
}

var _ ipc.Backend = mcpBackend{}

func newMCPBackend(d *mcpDeps, ap *approvals) mcpBackend {
	return mcpBackend{mcpMessenger{d}, mcpHistory{d}, mcpAdmin{d}, mcpSessions{d}, mcpTasks{d}, mcpSpend{d}, ap}
}

type (
	mcpMessenger struct{ *mcpDeps }
	mcpHistory   struct{ *mcpDeps }
	mcpAdmin     struct{ *mcpDeps }
	mcpSessions  struct{ *mcpDeps }
	mcpSpend     struct{ *mcpDeps }
)

func (b mcpAdmin) Table() *routing.Table { return b.table() }

func (b mcpAdmin) Reload(ctx context.Context) error { return b.reload(ctx) }

func (b mcpMessenger) Send(ctx context.Context, folder groups.Folder, m ipc.Outgoing) (ipc.Sent, error) {
	// A platform no adapter serves is refused here, before anything is
	// queued: the outbox would only fail it later.
	if m.Kind == store.OutboxFile {
		if _, err := capability[adapters.FileSender](b.adapters, m.Chat, "send_file"); err != nil {
			return ipc.Sent{}, err
		}
	} else if _, err := capability[adapters.Adapter](b.adapters, m.Chat, "send"); err != nil {
		return ipc.Sent{}, err
	}
	it, err := b.outbox.send(ctx, ops.SendRequest{Chat: m.Chat, Text: m.Text, Topic: m.Topic, ReplyTo: m.ReplyTo,
		Folder: folder, Key: store.NewID(mcpKeyPrefix), Kind: m.Kind, File: m.File})
	if err != nil {
		return ipc.Sent{}, err
	}
	b.active.markReplied(folder, m.Chat)
	return b.awaitDelivery(ctx, it), nil
}

// awaitDelivery waits, for at most sendWait, until the platform accepted
// or refused the item: the outbox wakes it when the item settles.
func (b mcpMessenger) awaitDelivery(ctx context.Context, it store.OutboxItem) ipc.Sent {
	deadline := time.NewTimer(sendWait)
	defer deadline.Stop()
	forget := func() {}
	defer func() { forget() }() // the last wait; the ones before it were settled
	for {
		var settled <-chan struct{}
		settled, forget = b.outbox.await(it.Key) // before reading: no wake-up is missed
		if cur, err := b.st.OutboxByKey(ctx, it.Key); err == nil {
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

func (b mcpMessenger) RunningTurn(folder groups.Folder) (ipc.Turn, bool) {
	id, t := b.active.running(folder)
	if t == nil {
		return ipc.Turn{}, false
	}
	turn := ipc.Turn{ID: id, Chat: t.batch.ChatJID, Topic: t.batch.Topic, LastMessageID: lastMessageID(t.batch)}
	if len(t.batch.Items) > 0 {
		turn.Trigger = t.batch.Items[0].Trigger
	}
	return turn, true
}

// capability returns the adapter of chat's platform as capability C; verb
// names it in the error when the adapter lacks it.
func capability[C any](as adapterSet, chat adapters.JID, verb string) (C, error) {
	var c C
	platform := chat.Platform()
	ad, ok := as[platform]
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
func (b mcpMessenger) messageRef(ctx context.Context, chat adapters.JID, id adapters.MessageID) adapters.MessageRef {
	ref := adapters.MessageRef{Chat: chat, ID: id}
	if m, err := b.st.MessageByID(ctx, chat, id); err == nil {
		ref.Topic = m.Topic
	}
	return ref
}

func (b mcpMessenger) Edit(ctx context.Context, chat adapters.JID, id adapters.MessageID, text string) error {
	e, err := capability[adapters.Editor](b.adapters, chat, "edit")
	if err != nil {
		return err
	}
	if err := e.Edit(ctx, b.messageRef(ctx, chat, id), text); err != nil {
		return err
	}
	return b.recordEdit(ctx, chat, id, text)
}

func (b mcpMessenger) Delete(ctx context.Context, chat adapters.JID, id adapters.MessageID) error {
	d, err := capability[adapters.Deleter](b.adapters, chat, "delete")
	if err != nil {
		return err
	}
	if err := d.Delete(ctx, b.messageRef(ctx, chat, id)); err != nil {
		return err
	}
	_, err = b.st.DeleteMessage(ctx, chat, id)
	return err
}

func (b mcpMessenger) React(ctx context.Context, chat adapters.JID, id adapters.MessageID, reaction string) error {
	r, err := capability[adapters.Reactor](b.adapters, chat, "react")
	if err != nil {
		return err
	}
	return r.React(ctx, b.messageRef(ctx, chat, id), reaction)
}

func (b mcpMessenger) Pin(ctx context.Context, chat adapters.JID, id adapters.MessageID) error {
	p, err := capability[adapters.Pinner](b.adapters, chat, "pin")
	if err != nil {
		return err
	}
	return p.Pin(ctx, b.messageRef(ctx, chat, id))
}

func (b mcpMessenger) Unpin(ctx context.Context, chat adapters.JID, id adapters.MessageID) error {
	p, err := capability[adapters.Pinner](b.adapters, chat, "unpin")
	if err != nil {
		return err
	}
	return p.Unpin(ctx, b.messageRef(ctx, chat, id))
}

// recordEdit brings the stored copy of an edited message up to date.
func (b mcpMessenger) recordEdit(ctx context.Context, chat adapters.JID, id adapters.MessageID, text string) error {
	m, err := b.st.MessageByID(ctx, chat, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	m.Text = store.CapText(text)
	m.Edited = time.Time{}
	_, err = b.st.EditMessage(ctx, &m)
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

func (b mcpHistory) Messages(ctx context.Context, chat adapters.JID, beforeSeq int64, limit int) ([]store.Message, error) {
	return b.st.MessagesBefore(ctx, chat, beforeSeq, limit)
}

func (b mcpHistory) Thread(ctx context.Context, chat adapters.JID, topic string, limit int) ([]store.Message, error) {
	return b.st.Thread(ctx, chat, topic, limit)
}

func (b mcpHistory) FetchHistory(ctx context.Context, chat adapters.JID, beforeID adapters.MessageID, limit int) ([]store.Message, string, error) {
	if f, ok := b.adapters[chat.Platform()].(adapters.HistoryFetcher); ok {
		in, err := f.FetchHistory(ctx, chat, adapters.HistoryQuery{Before: beforeID, Limit: limit})
		if err == nil {
			out := make([]store.Message, 0, len(in))
			for _, m := range in {
				// What the platform has fills gaps in the store; it never
				// starts a turn.
				seq, err := b.intake.storeFetched(ctx, m)
				if err != nil {
					b.log.Warn("fetched message not stored", "jid", chat, "msg_id", m.ID, "err", err)
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
		m, err := b.st.MessageByID(ctx, chat, beforeID)
		if err != nil {
			return nil, "", fmt.Errorf("before_id %s: %w", beforeID, err)
		}
		before = m.Seq
	}
	ms, err := b.st.MessagesBefore(ctx, chat, before, limit)
	return ms, "store", err
}

func (b mcpHistory) Search(ctx context.Context, query string, o store.SearchOptions) ([]store.Hit, error) {
	return b.st.Search(ctx, query, o)
}

func (b mcpHistory) Chats(ctx context.Context) ([]adapters.JID, error) {
	cs, err := b.st.Chats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]adapters.JID, len(cs))
	for i, c := range cs {
		out[i] = c.JID
	}
	return out, nil
}

func (b mcpHistory) MessageByID(ctx context.Context, chat adapters.JID, id adapters.MessageID) (store.Message, bool, error) {
	m, err := b.st.MessageByID(ctx, chat, id)
	if err != nil {
		return store.Message{}, false, ignoreNotFound(err)
	}
	return m, true, nil
}

func (b mcpAdmin) AddRoute(ctx context.Context, r routing.Route) (routing.Route, error) {
	added, err := ops.AddRoute(ctx, b.st, r)
	if err != nil {
		return added, err
	}
	return added, b.reload(ctx)
}

func (b mcpAdmin) DeleteRoute(ctx context.Context, id int64) (routing.Route, bool, error) {
	r, err := ops.DeleteRoute(ctx, b.st, id)
	if err != nil {
		return r, false, ignoreNotFound(err)
	}
	return r, true, b.reload(ctx)
}

func (b mcpAdmin) SwapRoutes(ctx context.Context, remove []int64, add []routing.Route) ([]routing.Route, bool, error) {
	rs, err := b.st.SwapRoutes(ctx, remove, add)
	if err != nil {
		return nil, false, ignoreNotFound(err)
	}
	return rs, true, b.reload(ctx)
}

func (b mcpAdmin) Groups(ctx context.Context) ([]groups.Folder, error) { return b.st.Groups(ctx) }

func (b mcpAdmin) CreateGroup(ctx context.Context, caller groups.Folder, tier int, folder groups.Folder, pin adapters.JID) (*routing.Route, error) {
	r, err := ops.AddGroup(ctx, b.st, b.layout, ops.Actor{Folder: caller, Tier: tier}, ops.NewGroup{Folder: folder, Pin: pin, Exe: b.exe})
	if err == nil {
		return r, b.reload(ctx)
	}
	if ok, _ := b.st.GroupExists(ctx, folder); ok {
		// The group was stored but its route was not: it still gets its socket.
		_ = b.reload(ctx) // err says what failed; a failed reload is retried by the next poll
	}
	return nil, err
}

// SetMidTurn implements ipc.GroupStore: ops.SetMidTurn (read at each
// message, so it applies at once).
func (b mcpAdmin) SetMidTurn(ctx context.Context, caller groups.Folder, tier int, folder groups.Folder, mode string) error {
	return ops.SetMidTurn(ctx, b.st, ops.Actor{Folder: caller, Tier: tier}, folder, mode)
}

// Enqueue queues a delegate or escalate prompt one hop deeper in the chain
// than the caller's running turn (the chain guard stops it if too deep).
func (b mcpAdmin) Enqueue(ctx context.Context, w store.WorkItem) (int64, error) {
	w.Mode, w.Chain = string(routing.Trigger), b.active.chainOf(w.Origin)
	id, err := b.st.Enqueue(ctx, w)
	if err != nil {
		return 0, err
	}
	b.kick(w.Folder)
	return id, nil
}

// Inject stores an agent's message one hop deeper in the chain than the
// caller's running turn: an agent injecting into its own chat every turn
// stops at limits.max_chain like a delegate ping-pong.
func (b mcpSessions) Inject(ctx context.Context, from groups.Folder, chat adapters.JID, text string, sender adapters.JID) (store.Message, groups.Folder, error) {
	owner, _ := b.table().Owner(chat, "")
	m, err := b.intake.inject(ctx, ops.InjectRequest{Chat: chat, Text: text, Sender: sender, Folder: owner, Origin: from, Chain: b.active.chainOf(from)})
	if err != nil {
		return store.Message{}, "", err
	}
	return m, owner, nil
}

// ResetSessions forgets folder's sessions, including the one its running
// turn (usually the caller) ran in and would store at its end.
func (b mcpSessions) ResetSessions(ctx context.Context, folder groups.Folder) (int64, error) {
	b.active.resetSessions(folder)
	return b.st.ResetSessions(ctx, folder)
}

func (b mcpSessions) Engage(chat adapters.JID, topic string, folder groups.Folder) (time.Time, error) {
	if b.engageTTL <= 0 {
		return time.Time{}, errors.New("engagement is off: engage_ttl is 0 in the gateway's config")
	}
	b.engage.start(chat, topic, folder, b.engageTTL)
	return b.now().Add(b.engageTTL).UTC(), nil
}

func (b mcpSessions) Disengage(chat adapters.JID, topic string, allowed func(groups.Folder) bool) (groups.Folder, bool) {
	return b.engage.stopIf(chat, topic, allowed)
}

func (b mcpSessions) AgentSessions(ctx context.Context, folder groups.Folder) ([]store.SessionRow, error) {
	return b.st.FolderSessions(ctx, folder)
}

func (b mcpSessions) Turns(ctx context.Context, folder groups.Folder, limit int) ([]store.Turn, error) {
	return b.st.Turns(ctx, folder, limit)
}

// ReportUsage implements ipc.Spend: report_usage adds to folder's running
// turn what agent.Usage.Checked (the one check of every usage) lets
// through, and returns its refusal otherwise.
func (b mcpSpend) ReportUsage(folder groups.Folder, r ipc.UsageReport) error {
	u := agent.Report{CostUSD: r.CostUSD, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheCreationInputTokens: r.CacheCreationTokens, CacheReadInputTokens: r.CacheReadTokens, NumTurns: r.NumTurns,
		DurationAPIMS: r.APIMS}.Usage()
	if u.Refused != "" {
		return fmt.Errorf("%s: report what this turn's model calls cost, in US dollars (not cents) and tokens", u.Refused)
	}
	if !b.active.report(folder, u) {
		return ipc.ErrNoTurn
	}
	return nil
}

// Budgets implements ipc.Spend.
func (b mcpSpend) Budgets(ctx context.Context, folder groups.Folder) ([]ipc.BudgetInfo, error) {
	all, err := b.st.Groups(ctx)
	if err != nil {
		return nil, err
	}
	var folders []groups.Folder
	for _, f := range all {
		if folder == "" || folder.Contains(f) {
			folders = append(folders, f)
		}
	}
	rep, err := ops.SpendReport(ctx, b.st, folders, b.now().In(b.zone))
	if err != nil {
		return nil, err
	}
	out := make([]ipc.BudgetInfo, len(rep))
	for i, r := range rep {
		out[i] = ipc.BudgetInfo{Folder: r.Folder, TodayUSD: r.TodayUSD, MonthUSD: r.MonthUSD, DailyUSD: r.DailyUSD,
			MonthlyUSD: r.MonthlyUSD, UsedUp: r.Over()}
	}
	return out, nil
}

// SetBudget implements ipc.Spend; it reloads so that the change applies now.
func (b mcpSpend) SetBudget(ctx context.Context, folder groups.Folder, daily, monthly float64) error {
	if err := ops.SetBudget(ctx, b.st, folder, daily, monthly); err != nil {
		if errors.Is(err, ops.ErrNoGroup) {
			return fmt.Errorf("folder %s: no such group", folder)
		}
		return err
	}
	return b.reload(ctx)
}
