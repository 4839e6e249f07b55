package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/store"
)

// The approvals part (CONTRACT §15, "Approvals"): a call whose grant rule
// asks (or one of Claude Code's tools that approvals.agent_tools names,
// through approve_tool) waits here until one of its group's approvers
// decides, in the chat (buttons, /approve and /deny) or through the CLI.
// The store holds every request and decides each once (the first decision
// wins); a waiting call learns of a decision at once when it was made in
// this process, and within a second when the CLI made it.

// ApprovalOptions are the approvals settings (approvals: and
// groups[].approvals in the config).
type ApprovalOptions struct {
	// Timeout: a request nobody decides by then is denied (default 10m).
	Timeout time.Duration
	// AgentTools are globs (path.Match) over Claude Code's tool names:
	// approve_tool asks about those and allows the others at once.
	AgentTools []string
	// Groups are the groups' approvers and request chat, by folder; a
	// group without approvers inherits its parent's, and so on up.
	Groups map[groups.Folder]GroupApprovals
}

// GroupApprovals are one group's approvals settings.
type GroupApprovals struct {
	Approvers []adapters.JID // JIDs of people
	Chat      adapters.JID   // where requests are posted ("": the turn's chat)
}

// CLIDecider is the decider the operator's CLI decides as: always allowed.
const CLIDecider = "cli"

// approvalPoll is how often a waiting call looks for a decision made by
// another process (the CLI).
const approvalPoll = time.Second

// approvalStore is what approvals need of the store.
type approvalStore interface {
	AddApproval(ctx context.Context, a store.Approval) (store.Approval, error)
	SetApprovalMessage(ctx context.Context, id string, chat adapters.JID, topic string, msg adapters.MessageID, buttons bool) error
	Approval(ctx context.Context, id string) (store.Approval, error)
	DecideApproval(ctx context.Context, id string, status store.ApprovalStatus, decider, reason string) (store.Approval, bool, error)
	SessionAllows(ctx context.Context, folder groups.Folder, tool, turn, session string) (bool, error)
	PendingApprovals(ctx context.Context) ([]store.Approval, error)
	ApproversOf(ctx context.Context, folder groups.Folder) ([]string, bool, error)
	// The request message, as the bot's, in the chat's history.
	InsertMessage(ctx context.Context, m *store.Message) (bool, error)
	EditMessage(ctx context.Context, m *store.Message) (bool, error)
}

// approvalSendWait bounds the tries to post a request with buttons (a rate
// limit, a platform failing for a moment) before it is posted as text
// through the outbox.
const approvalSendWait = 30 * time.Second

// approvals is the part; it implements ipc.Approvals.
type approvals struct {
	st       approvalStore
	adapters adapterSet
	active   *activeTurns
	send     func(ctx context.Context, req ops.SendRequest) (store.OutboxItem, error) // outbox.send
	opt      ApprovalOptions
	total    *prometheus.CounterVec // switchboard_approvals_total{decision}
	latency  prometheus.Histogram   // switchboard_approval_decision_seconds
	log      *slog.Logger

	mu       sync.Mutex
	waiting  map[string]chan struct{} // by request id: woken by a decision made here
	stopping chan struct{}            // closed when the gateway stops
	stopOnce sync.Once
}

var _ ipc.Approvals = (*approvals)(nil)

func newApprovals(st approvalStore, as adapterSet, active *activeTurns, send func(context.Context, ops.SendRequest) (store.OutboxItem, error),
	opt ApprovalOptions, reg prometheus.Registerer, log *slog.Logger) *approvals {
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Minute
	}
	p := &approvals{st: st, adapters: as, active: active, send: send, opt: opt, log: log,
		waiting: map[string]chan struct{}{}, stopping: make(chan struct{}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_approvals_total",
			Help: "Approval requests by how they ended (allowed, session, denied, timeout, expired)."}, []string{"decision"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "switchboard_approval_decision_seconds",
			Help:    "Time from an approval request to its decision by a person.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800}}),
	}
	reg.MustRegister(p.total, p.latency)
	// Every outcome is a series from the start, at 0: a scrape before the
	// first decision shows the counter, and rate() sees the first one.
	for _, s := range []store.ApprovalStatus{store.ApprovalAllowed, store.ApprovalSession, store.ApprovalDenied, store.ApprovalTimeout, store.ApprovalExpired} {
		p.total.WithLabelValues(string(s))
	}
	return p
}

// shutdown ends every wait as a denial: the gateway is stopping.
func (p *approvals) shutdown() { p.stopOnce.Do(func() { close(p.stopping) }) }

// AgentToolAsks reports whether approvals.agent_tools names Claude Code's
// tool name.
func (p *approvals) AgentToolAsks(name string) bool {
	for _, g := range p.opt.AgentTools {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Approve asks the group's approvers about a call and waits (ipc.Approvals).
func (p *approvals) Approve(ctx context.Context, req ipc.ApprovalRequest) ipc.ApprovalResult {
	run, _ := p.active.runOf(req.Folder)
	if ok, err := p.st.SessionAllows(ctx, req.Folder, req.Tool, run.id, run.session); err != nil {
		p.log.Warn("read session approvals; asking instead", "folder", req.Folder, "tool", req.Tool, "err", err)
	} else if ok {
		return ipc.ApprovalResult{Allowed: true, Reason: "allowed for this session"}
	}
	a := store.Approval{ID: store.NewApprovalID(), Folder: req.Folder, TurnID: run.id, SessionID: run.session,
		Tool: req.Tool, Args: renderArgs(req.Args)}
	settings := p.settingsOf(ctx, req.Folder)
	if len(settings.Approvers) == 0 {
		a.Status, a.Reason, a.Decided = store.ApprovalDenied, "no approvers", time.Now()
		if _, err := p.st.AddApproval(ctx, a); err != nil {
			p.log.Error("store approval request", "folder", req.Folder, "tool", req.Tool, "err", err)
		}
		p.total.WithLabelValues(string(store.ApprovalDenied)).Inc()
		return ipc.ApprovalResult{ID: a.ID, Reason: fmt.Sprintf("denied at once: group %s has no approvers "+
			"(the operator sets groups[].approvals.approvers, or switchboard approvals approvers %s JID...)", req.Folder, req.Folder)}
	}
	wake := make(chan struct{}, 1)
	p.mu.Lock()
	p.waiting[a.ID] = wake
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.waiting, a.ID)
		p.mu.Unlock()
	}()
	a, err := p.st.AddApproval(ctx, a)
	if err != nil {
		p.log.Error("store approval request", "folder", req.Folder, "tool", req.Tool, "err", err)
		return ipc.ApprovalResult{Reason: "denied: the approval request could not be stored"}
	}
	if done, ok := p.grantedMeanwhile(ctx, a); ok {
		p.finished(done)
		return ipc.ApprovalResult{Allowed: done.Status.Allows(), ID: done.ID, Reason: outcome(done, p.opt.Timeout)}
	}
	a = p.post(ctx, a, settings.Chat, run)
	p.log.Info("approval requested", "approval", a.ID, "folder", a.Folder, "tool", a.Tool, "jid", a.Chat)
	done := p.wait(ctx, a, run, wake)
	p.finished(done)
	return ipc.ApprovalResult{Allowed: done.Status.Allows(), ID: done.ID, Reason: outcome(done, p.opt.Timeout)}
}

// grantedMeanwhile decides a, just stored, as allowed for the session when
// a session grant of its tool came since Approve looked for one: that
// grant's decision found no pending request of this call to cover
// (coveredBySession), and the approver is not to be asked again for what
// they just allowed. Stored first, looked at after: the decision and the
// call each see the other's write, whichever came first. ok is false when
// a is to be posted and waited for.
func (p *approvals) grantedMeanwhile(ctx context.Context, a store.Approval) (store.Approval, bool) {
	if ok, err := p.st.SessionAllows(ctx, a.Folder, a.Tool, a.TurnID, a.SessionID); err != nil || !ok {
		return a, false
	}
	cur, _, err := p.st.DecideApproval(context.WithoutCancel(ctx), a.ID, store.ApprovalSession, "", "")
	if err != nil {
		p.log.Error("record approval decision", "approval", a.ID, "err", err)
		return a, false
	}
	return cur, cur.Status != store.ApprovalPending
}

// wait waits for a's decision, or for what ends the wait first, and
// returns a as decided.
func (p *approvals) wait(ctx context.Context, a store.Approval, run turnRun, wake <-chan struct{}) store.Approval {
	timeout := time.NewTimer(p.opt.Timeout)
	defer timeout.Stop()
	tick := time.NewTicker(approvalPoll)
	defer tick.Stop()
	var deadline <-chan time.Time
	if !run.deadline.IsZero() {
		t := time.NewTimer(time.Until(run.deadline))
		defer t.Stop()
		deadline = t.C
	}
	for {
		status, reason := store.ApprovalExpired, ""
		select {
		case <-wake:
		case <-tick.C:
		case <-timeout.C:
			status, reason = store.ApprovalTimeout, fmt.Sprintf("no decision within %s", p.opt.Timeout)
		case <-deadline:
			reason = "the turn reached its deadline (agent.timeout) before a decision"
		case <-run.done:
			reason = "the turn ended before a decision"
		case <-ctx.Done():
			reason = "the call ended before a decision (the turn was stopped or its agent went away)"
		case <-p.stopping:
			reason = "the gateway is shutting down"
		}
		if reason == "" {
			cur, err := p.st.Approval(context.WithoutCancel(ctx), a.ID)
			if err == nil && cur.Status != store.ApprovalPending {
				return cur
			}
			continue
		}
		// The first decision wins: one made meanwhile is the outcome.
		cur, _, err := p.st.DecideApproval(context.WithoutCancel(ctx), a.ID, status, "", reason)
		if err != nil {
			p.log.Error("record approval outcome", "approval", a.ID, "err", err)
			a.Status, a.Reason = status, reason
			return a
		}
		return cur
	}
}

// finished counts a's outcome and shows it on the request message.
func (p *approvals) finished(a store.Approval) {
	p.total.WithLabelValues(string(a.Status)).Inc()
	if a.Decider != "" && !a.Decided.IsZero() {
		p.latency.Observe(a.Decided.Sub(a.Created).Seconds())
	}
	p.log.Info("approval decided", "approval", a.ID, "folder", a.Folder, "tool", a.Tool, "decision", a.Status, "decider", a.Decider)
	p.editRequest(context.Background(), a)
}

// editRequest replaces a request message's buttons with its outcome.
func (p *approvals) editRequest(ctx context.Context, a store.Approval) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.edit(ctx, a); err != nil {
		p.log.Warn("show approval outcome on its request message", "approval", a.ID, "jid", a.Chat, "err", err)
	}
}

// edit shows a's outcome on its request message, without buttons.
func (p *approvals) edit(ctx context.Context, a store.Approval) error {
	if !a.Buttons || a.MessageID == "" {
		return nil
	}
	b, ok := p.adapters[a.Chat.Platform()].(adapters.Buttons)
	if !ok {
		return nil
	}
	text := requestText(a) + "\n\n**" + markdownSafe(outcomeLine(a)) + "**"
	if err := b.EditButtons(ctx, adapters.MessageRef{Chat: a.Chat, Topic: a.Topic, ID: a.MessageID}, text, nil); err != nil {
		return err
	}
	p.storeShown(ctx, a, text, true)
	return nil
}

// storeShown stores the request message as the bot's (edited: its new
// text), as the outbox stores what it sends, so that the chat's history
// shows it. Stored by (chat, id): the web chat, which hands its own
// messages to the gateway, stores the same row, never a second one.
func (p *approvals) storeShown(ctx context.Context, a store.Approval, text string, edited bool) {
	m := &store.Message{ChatJID: a.Chat, ID: a.MessageID, Sender: p.adapters.botJID(a.Chat.Platform()), SenderName: "switchboard",
		Text: text, Topic: a.Topic, Verb: adapters.VerbMessage, FromBot: true, Time: time.Now()}
	ctx = context.WithoutCancel(ctx)
	var err error
	if edited {
		_, err = p.st.EditMessage(ctx, m)
	} else {
		var inserted bool
		if inserted, err = p.st.InsertMessage(ctx, m); err == nil && inserted {
			p.adapters.notifyStored(a.Chat, m.Seq)
		}
	}
	if err != nil {
		p.log.Warn("store approval request message in the chat's history", "approval", a.ID, "jid", a.Chat, "err", err)
	}
}

// post shows the request to the approvers, in their chat (settingsOf;
// "": the turn's): with buttons where the chat's platform has them, else
// as text naming /approve and /deny. It returns a with where it was
// posted.
func (p *approvals) post(ctx context.Context, a store.Approval, approversChat adapters.JID, run turnRun) store.Approval {
	chat, topic := run.chat, run.topic
	if approversChat != "" {
		chat, topic = approversChat, ""
	}
	if chat == "" {
		p.log.Warn("approval request has no chat to be posted in; only the CLI can decide it", "approval", a.ID, "folder", a.Folder,
			"hint", "set groups[].approvals.chat, or decide with switchboard approvals allow|deny "+a.ID)
		return a
	}
	a.Chat, a.Topic = chat, topic
	out := adapters.Outbound{Chat: chat, Topic: topic, Text: requestText(a), Key: "appr-" + a.ID}
	if b, ok := p.adapters[chat.Platform()].(adapters.Buttons); ok {
		// Sent here, not through the outbox (whose rows carry no
		// buttons), retried as the outbox would; a request that still
		// fails goes out as text through the outbox.
		sendCtx, cancel := context.WithTimeout(ctx, approvalSendWait)
		var id adapters.MessageID
		err := untilDone(sendCtx, func(ctx context.Context) (err error) {
			id, err = b.SendButtons(ctx, out, requestButtons(a.ID))
			return err
		})
		cancel()
		if err == nil {
			a.MessageID, a.Buttons = id, true
			if err := p.st.SetApprovalMessage(ctx, a.ID, chat, topic, id, true); err != nil {
				p.log.Warn("record approval request message", "approval", a.ID, "err", err)
			}
			p.storeShown(ctx, a, out.Text, false)
			return a
		}
		p.log.Warn("post approval request with buttons; posting it as text", "approval", a.ID, "jid", chat, "err", err)
	}
	text := out.Text + fmt.Sprintf("\n\nAn approver answers `/approve %s` (once), `/approve %s session` (this tool for the rest of the session) or `/deny %s`.",
		a.ID, a.ID, a.ID)
	if _, err := p.send(ctx, ops.SendRequest{Chat: chat, Topic: topic, Text: text, Key: "appr-" + a.ID}); err != nil {
		p.log.Warn("post approval request", "approval", a.ID, "jid", chat, "err", err)
		return a
	}
	if err := p.st.SetApprovalMessage(ctx, a.ID, chat, topic, "", false); err != nil {
		p.log.Warn("record approval request message", "approval", a.ID, "err", err)
	}
	return a
}

// requestButtons are a request's three buttons.
func requestButtons(id string) []adapters.Button {
	return []adapters.Button{
		{Label: "Allow once", Data: "appr:" + id + ":allow", Style: adapters.StylePrimary},
		{Label: "Allow for this session", Data: "appr:" + id + ":session"},
		{Label: "Deny", Data: "appr:" + id + ":deny", Style: adapters.StyleDanger},
	}
}

// decisions maps what a person chose (button data, /approve) to a status.
var decisions = map[string]store.ApprovalStatus{
	"allow": store.ApprovalAllowed, "session": store.ApprovalSession, "deny": store.ApprovalDenied,
}

// decide is a person's (or the CLI's) decision on request id; the answer
// is what they are told. A non-approver changes nothing, nor does a
// decision on a request already decided. There being no request id is
// said in the answer and the error (wrapping adapters.ErrUnknownRequest).
func (p *approvals) decide(ctx context.Context, id, choice string, who adapters.JID) (string, error) {
	status, ok := decisions[choice]
	if !ok {
		return fmt.Sprintf("Unknown decision %q: want allow, session or deny.", choice), nil
	}
	a, err := p.st.Approval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Sprintf("There is no approval request %s.", id), fmt.Errorf("approval %s: %w", id, adapters.ErrUnknownRequest)
	}
	if err != nil {
		p.log.Error("read approval request", "approval", id, "err", err)
		return "The request could not be read; try again.", nil
	}
	if a.Status != store.ApprovalPending {
		if a.Status == store.ApprovalExpired {
			p.editRequest(ctx, a) // after a restart, its buttons still show
		}
		return outcomeLine(a) + ".", nil
	}
	if string(who) != CLIDecider && !p.isApprover(ctx, a.Folder, who) {
		p.log.Info("approval press by a non-approver ignored", "approval", id, "folder", a.Folder, "sender", who)
		return "Not yours to approve: only the approvers of group " + string(a.Folder) + " decide this request.", nil
	}
	a, decided, err := p.st.DecideApproval(ctx, id, status, string(who), "")
	if err != nil {
		p.log.Error("record approval decision", "approval", id, "err", err)
		return "The decision could not be recorded; try again.", nil
	}
	if !decided {
		return outcomeLine(a) + ".", nil
	}
	p.wake(id)
	if status == store.ApprovalSession {
		p.coveredBySession(ctx, a)
	}
	return outcomeLine(a) + ".", nil
}

// wake tells request id's waiting call that it was decided.
func (p *approvals) wake(id string) {
	p.mu.Lock()
	wake := p.waiting[id]
	p.mu.Unlock()
	if wake != nil {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// coveredBySession decides, as allowed for the session by the same person,
// the other pending requests for a's tool that a's session grant now
// covers (calls of the same turn or session that asked meanwhile): they
// would have been allowed at once had they come after it.
func (p *approvals) coveredBySession(ctx context.Context, a store.Approval) {
	pending, err := p.st.PendingApprovals(ctx)
	if err != nil {
		p.log.Warn("read pending approvals after a session decision", "approval", a.ID, "err", err)
		return
	}
	for _, o := range pending {
		if o.Folder != a.Folder || o.Tool != a.Tool {
			continue
		}
		if ok, err := p.st.SessionAllows(ctx, o.Folder, o.Tool, o.TurnID, o.SessionID); err != nil || !ok {
			continue
		}
		if _, decided, err := p.st.DecideApproval(ctx, o.ID, store.ApprovalSession, a.Decider, ""); err != nil {
			p.log.Warn("record approval decision", "approval", o.ID, "err", err)
		} else if decided {
			p.wake(o.ID)
		}
	}
}

// command answers an /approve or /deny message in its chat.
func (p *approvals) command(ctx context.Context, m store.Message, c approvalCommand) {
	answer, _ := p.decide(ctx, c.id, c.choice, m.Sender) // an unknown id: the answer says so
	if _, err := p.send(ctx, ops.SendRequest{Chat: m.ChatJID, Topic: m.Topic, ReplyTo: m.ID, Text: answer}); err != nil {
		p.log.Warn("answer approval command", "approval", c.id, "jid", m.ChatJID, "err", err)
	}
}

// expireLeftovers expires the requests a stopped gateway left pending:
// their calls are gone. A press on one later is answered "expired". It
// returns those whose message shows buttons, for showExpired once the
// adapters run.
func (p *approvals) expireLeftovers(ctx context.Context) ([]store.Approval, error) {
	pending, err := p.st.PendingApprovals(ctx)
	if err != nil {
		return nil, err
	}
	var shown []store.Approval
	for _, a := range pending {
		a, _, err := p.st.DecideApproval(ctx, a.ID, store.ApprovalExpired, "", "the gateway restarted before a decision")
		if err != nil {
			return nil, err
		}
		p.total.WithLabelValues(string(store.ApprovalExpired)).Inc()
		if a.Buttons && a.MessageID != "" {
			shown = append(shown, a)
		}
	}
	if len(pending) > 0 {
		p.log.Info("approval requests left pending by a stopped gateway expired", "count", len(pending))
	}
	return shown, nil
}

// showExpired edits the messages of the requests expireLeftovers expired
// to say so, their buttons removed; each is tried again (an adapter still
// connecting, a rate limit) until liveRecoverWait. One left showing its
// buttons is edited when somebody presses one.
func (p *approvals) showExpired(ctx context.Context, left []store.Approval) {
	if len(left) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, liveRecoverWait)
	defer cancel()
	for _, a := range left {
		if err := untilDone(ctx, func(ctx context.Context) error { return p.edit(ctx, a) }); err != nil {
			p.log.Warn("expired approval request still shows its buttons", "approval", a.ID, "jid", a.Chat, "err", err)
		}
	}
}

// untilDone calls f until it succeeds, fails for good (ErrPermanent,
// ErrUnsupported, ErrFormat) or ctx ends, waiting between tries as a rate
// limit says or with a doubling backoff up to 2 s; it returns f's last error.
func untilDone(ctx context.Context, f func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for {
		err := f(ctx)
		var ra *adapters.RetryAfterError
		switch {
		case err == nil || errors.Is(err, adapters.ErrPermanent) || errors.Is(err, adapters.ErrUnsupported) || errors.Is(err, adapters.ErrFormat):
			return err
		case errors.As(err, &ra):
			wait = max(wait, ra.Wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// settingsOf is who decides folder's requests and where they are posted,
// in one walk up from folder (CONTRACT §15): the nearest folder (it or an
// ancestor) with approvers, stored by the CLI (which replace the
// configured ones) or configured, decides who; the request goes to the
// nearest approvals.chat configured on the way there (that folder's, or a
// subgroup's below it), else ("") to the turn's chat. A subgroup whose
// approvers come from the CLI alone thus never posts in its parent's
// chat, and one with a chat of its own but no approvers keeps its
// parent's approvers.
func (p *approvals) settingsOf(ctx context.Context, folder groups.Folder) GroupApprovals {
	var chat adapters.JID
	for f := folder; f != ""; f = f.Parent() {
		conf := p.opt.Groups[f]
		if chat == "" {
			chat = conf.Chat
		}
		stored, set, err := p.st.ApproversOf(ctx, f)
		if err != nil {
			p.log.Warn("read approvers", "folder", f, "err", err)
		}
		if set {
			out := make([]adapters.JID, len(stored))
			for i, j := range stored {
				out[i] = adapters.JID(j)
			}
			return GroupApprovals{Approvers: out, Chat: chat}
		}
		if len(conf.Approvers) > 0 {
			return GroupApprovals{Approvers: conf.Approvers, Chat: chat}
		}
	}
	return GroupApprovals{Chat: chat}
}

// approversOf is who may decide folder's requests (settingsOf).
func (p *approvals) approversOf(ctx context.Context, folder groups.Folder) []adapters.JID {
	return p.settingsOf(ctx, folder).Approvers
}

func (p *approvals) isApprover(ctx context.Context, folder groups.Folder, who adapters.JID) bool {
	for _, j := range p.approversOf(ctx, folder) {
		if j == who {
			return true
		}
	}
	return false
}

// outcome is the reason a call's result gives.
func outcome(a store.Approval, timeout time.Duration) string {
	switch a.Status {
	case store.ApprovalAllowed:
		return "allowed once by " + deciderName(a.Decider)
	case store.ApprovalSession:
		if a.Decider == "" { // a grant made while it asked (grantedMeanwhile)
			return "allowed for this session"
		}
		return "allowed for this session by " + deciderName(a.Decider)
	case store.ApprovalDenied:
		if a.Decider == "" {
			return "denied: " + a.Reason
		}
		return "denied by " + deciderName(a.Decider)
	case store.ApprovalTimeout:
		return fmt.Sprintf("timed out: nobody decided within %s (approvals.timeout)", timeout)
	}
	return "expired: " + a.Reason
}

// outcomeLine is what a request message and a late press say.
func outcomeLine(a store.Approval) string {
	switch a.Status {
	case store.ApprovalPending:
		return "Request " + a.ID + " is waiting for a decision"
	case store.ApprovalAllowed:
		return "Allowed once by " + deciderName(a.Decider)
	case store.ApprovalSession:
		if a.Decider == "" {
			return "Allowed for this session"
		}
		return "Allowed for this session by " + deciderName(a.Decider)
	case store.ApprovalDenied:
		if a.Decider == "" {
			return "Denied: " + a.Reason
		}
		return "Denied by " + deciderName(a.Decider)
	case store.ApprovalTimeout:
		return "Timed out: nobody decided in time"
	}
	return "Expired: " + a.Reason
}

func deciderName(d string) string {
	if d == CLIDecider {
		return "the operator (CLI)"
	}
	return d
}
