package gateway

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// MidTurn is what a message does that arrives for a folder while the
// folder's turn runs in the same chat and topic (agent.mid_turn,
// groups[].mid_turn; CONTRACT §15 "Messages during a turn").
type MidTurn string

const (
	// MidTurnQueue: it waits for the next turn (the default).
	MidTurnQueue MidTurn = "queue"
	// MidTurnSteer: it is written into the running agent, when the agent
	// takes input mid-turn (agent.input: stream-json), and is part of that
	// turn; otherwise it is queued.
	MidTurnSteer MidTurn = "steer"
	// MidTurnInterrupt: the running turn is stopped (as by /stop, by
	// someone limits.stop_by allows) and one new turn gets its batch and
	// everything pending.
	MidTurnInterrupt MidTurn = "interrupt"
)

// ParseMidTurn returns the MidTurn named s (ops.MidTurnModes).
func ParseMidTurn(s string) (MidTurn, error) {
	if err := ops.CheckMidTurn(s); err != nil {
		return "", err
	}
	return MidTurn(s), nil
}

// steeredMsg is a message written into a running turn: its work row
// (stored started under the turn) and the message, added to the turn's
// batch when it is recorded.
type steeredMsg struct {
	item store.WorkItem
	msg  store.Message
}

// midTurnStore is what the mid-turn modes need of the store.
type midTurnStore interface {
	GroupMidTurn(ctx context.Context, folder groups.Folder) (string, error)
	SteerMessage(ctx context.Context, m *store.Message, w store.WorkItem, turn string) (bool, int64, error)
	ResetStarted(ctx context.Context, b store.Batch) error
}

// midTurns applies the mid-turn modes to the messages intake routes.
type midTurns struct {
	st       midTurnStore
	running  *stoppable
	stops    *stopper // who may interrupt (limits.stop_by)
	def      MidTurn  // agent.mid_turn
	canSteer bool     // agent.input: stream-json
	kick     func(folder groups.Folder)
	stored   func(chat adapters.JID, seq int64) // adapterSet.notifyStored
	// guards are the checks a turn about to start goes through (the
	// turns' turnGuards): a steered message is checked by them as the
	// turn it would otherwise start, so floods and loops count it.
	guards    turnGuards
	now       func() time.Time
	log       *slog.Logger
	steerSeen func(turn string, at time.Time) // tests: when a message reached the agent's stdin
}

// mode is folder's mid-turn mode.
func (mt *midTurns) mode(ctx context.Context, folder groups.Folder) MidTurn {
	s, err := mt.st.GroupMidTurn(ctx, folder)
	if err != nil {
		mt.log.Error("read a group's mid_turn; queueing", "folder", folder, "err", err)
		return MidTurnQueue
	}
	if m, err := ParseMidTurn(s); err == nil {
		return m
	}
	return mt.def
}

// midTurnMsg is one message intake routed, as the mid-turn modes see it:
// its work item (when it is one trigger item: the only kind that meets a
// running turn) and its folder's mode, read from the store at most once
// per message (steer before the message is stored, interrupt after).
type midTurnMsg struct {
	mt       *midTurns
	w        store.WorkItem
	mode     MidTurn
	modeRead bool
	// joined is the turn whose reply thread the message came from, which
	// it joins (joinInterrupted): the one turn it may interrupt.
	joined string
}

// message is what the mid-turn modes look up for a message routed to
// work; its mt is nil when it cannot meet a running turn.
func (mt *midTurns) message(work []store.WorkItem) midTurnMsg {
	if mt == nil || len(work) != 1 || work[0].Mode != "trigger" {
		return midTurnMsg{}
	}
	return midTurnMsg{mt: mt, w: work[0]}
}

// running is the turn running now for the message's folder in its chat
// and topic, and the folder's mode; nil when none runs. A map read: the
// message's commit may race a turn's start or end, so steer (before it)
// and interrupt (after it) each look at the turn running then, as a
// message that came a moment later would.
func (c *midTurnMsg) running(ctx context.Context) (*stoppableTurn, MidTurn) {
	rt := c.mt.running.running(c.w.Folder, c.w.ChatJID, c.w.Topic)
	if rt == nil {
		return nil, ""
	}
	return rt, c.modeOf(ctx)
}

// modeOf is the message's folder's mode, read once.
func (c *midTurnMsg) modeOf(ctx context.Context) MidTurn {
	if !c.modeRead {
		c.mode, c.modeRead = c.mt.mode(ctx, c.w.Folder), true
	}
	return c.mode
}

// steering is the turn a message is steered into: the one running for its
// folder in its chat and topic, or, with none there, the one running in
// the chat outside topics whose reply is in the thread the message is in
// (a Slack channel's reply is in the thread under the message it answers,
// where people follow the live reply and write on), as stoppable.toStop
// finds one to stop. nil when none runs.
func (c *midTurnMsg) steering(ctx context.Context) (*stoppableTurn, MidTurn) {
	if rt, mode := c.running(ctx); rt != nil || c.w.Topic == "" {
		return rt, mode
	}
	rt := c.mt.running.running(c.w.Folder, c.w.ChatJID, "")
	if rt == nil || !rt.repliesIn(c.w.Topic) {
		return nil, ""
	}
	return rt, c.modeOf(ctx)
}

// steer writes m, routed to c's work item, into the running turn of its
// folder in its chat and topic when that folder steers and the agent
// takes input: stored as part of that turn first (a crash then leaves it
// with the turn's batch), noted by arrived (what Deliver notes of every
// new message), checked by the turn guards as the turn it would otherwise
// start, then written. A message the guards hold is not written: it waits
// for the next turn, as the guard decided. handled is false when the
// message is to be stored and queued as usual.
func (c *midTurnMsg) steer(ctx context.Context, m *store.Message, arrived func(store.Message)) (handled bool, err error) {
	if c.mt == nil || !c.mt.canSteer {
		return false, nil
	}
	mt, w := c.mt, c.w
	rt, mode := c.steering(ctx)
	if rt == nil || mode != MidTurnSteer {
		return false, nil
	}
	rt.smu.Lock()
	defer rt.smu.Unlock()
	// A turn stopped already is ending, its agent being killed: what is
	// written into it now would be settled with it, never answered.
	if rt.ended || rt.steer == nil || mt.running.stoppedBy(rt) != "" {
		return false, nil
	}
	// A message's attachments are fetched into the folder before the turn
	// that prompts it (fetcher), never while it is delivered: one with
	// attachments goes to the next turn, which gets its files, and so do
	// the messages after it, in order ("what do you think of it?").
	if len(m.Attachments) > 0 {
		rt.queueing = true
	}
	if rt.queueing {
		return false, nil
	}
	inserted, id, err := mt.st.SteerMessage(ctx, m, w, rt.id)
	if err != nil || !inserted {
		return true, err
	}
	mt.stored(m.ChatJID, m.Seq)
	arrived(*m)
	w.ID, w.Seq = id, m.Seq
	if mt.withheld(ctx, rt, w, *m) {
		mt.requeue(ctx, rt, w, "held by a turn guard")
		return true, nil
	}
	var sb strings.Builder
	sb.WriteString("<messages>\n")
	writeMessage(&sb, *m, nil)
	sb.WriteString("</messages>\n")
	if !rt.steer.Send(m.Seq, sb.String()) {
		mt.requeue(ctx, rt, w, "the agent takes no more input")
		return true, nil
	}
	if mt.steerSeen != nil {
		mt.steerSeen(rt.id, time.Now())
	}
	rt.steered = append(rt.steered, steeredMsg{item: w, msg: *m})
	mt.log.Info("message steered into the running turn", "folder", w.Folder, "jid", w.ChatJID, "turn", rt.id, "seq", m.Seq)
	return true, nil
}

// withheld reports whether the turn guards hold the message m (its work
// item w, stored under rt): checked as the message turn it would start,
// so that the flood limits and the web-room loop guard count it like any
// message that starts a turn, and a held one waits as they decided.
func (mt *midTurns) withheld(ctx context.Context, rt *stoppableTurn, w store.WorkItem, m store.Message) bool {
	if len(mt.guards.list) == 0 {
		return false
	}
	b := store.Batch{Folder: w.Folder, ChatJID: w.ChatJID, Topic: w.Topic, Items: []store.WorkItem{w}, Messages: []store.Message{m}}
	turn := store.Turn{ID: rt.id, Folder: w.Folder, ChatJID: w.ChatJID, Topic: w.Topic, Trigger: w.Trigger, Attempt: 1, Started: mt.now()}
	return mt.guards.withheld(ctx, turnCandidate{batch: b, turn: turn})
}

// requeue puts w, stored under rt but not written into it, back to wait
// for the next turn (what a guard's hold set on it stays).
func (mt *midTurns) requeue(ctx context.Context, rt *stoppableTurn, w store.WorkItem, why string) {
	if err := mt.st.ResetStarted(context.WithoutCancel(ctx), store.Batch{Items: []store.WorkItem{w}}); err != nil {
		mt.log.Error("queue a message not written into the running turn", "folder", w.Folder, "turn", rt.id, "err", err)
	}
	mt.log.Info("message for the running turn queued for the next one", "folder", w.Folder, "jid", w.ChatJID, "turn", rt.id,
		"seq", w.Seq, "reason", why)
	mt.kick(w.Folder)
}

// joinInterrupted readies a message from sender, routed to work (c's
// item, work[0]), to interrupt the turn it meets from that turn's reply
// thread: the turn running in the chat outside topics whose reply is in
// the message's thread (steering, as /stop and steer find it), when its
// folder interrupts and sender may stop it. The message's work item is
// addressed to that turn's chat and topic, so that the one new turn gets
// the interrupted batch and the message (CONTRACT §15), as a steered
// message joins the turn it is written into; interrupt, after the commit,
// then finds the turn there. The message keeps its own topic. Call it
// before the message is committed.
func (c *midTurnMsg) joinInterrupted(ctx context.Context, sender adapters.JID, work []store.WorkItem) {
	if c.mt == nil || c.w.Topic == "" {
		return
	}
	rt, mode := c.steering(ctx)
	if rt == nil || rt.topic == c.w.Topic || mode != MidTurnInterrupt || !c.mt.stops.allowed(ctx, c.w.Folder, sender) {
		return
	}
	c.w.Topic, work[0].Topic, c.joined = rt.topic, rt.topic, rt.id
}

// interrupt stops the running turn of c's folder in its chat and topic
// when that folder interrupts and m's sender may stop it: its batch runs
// again, with m, as one new turn. m is stored and queued as usual (in the
// turn's topic when it came from its reply thread: joinInterrupted, and
// then only the turn it joined). A turn that started between m's commit
// and now, with m or a later message in its batch (m's own turn, or one
// after it), did not run when m came and runs on.
func (c *midTurnMsg) interrupt(ctx context.Context, m store.Message) {
	if c.mt == nil {
		return
	}
	mt, w := c.mt, c.w
	rt, mode := c.running(ctx)
	if rt == nil || rt.claimedSince(m.Seq) || (c.joined != "" && rt.id != c.joined) || mode != MidTurnInterrupt ||
		!mt.stops.allowed(ctx, w.Folder, m.Sender) {
		return
	}
	if mt.running.stopAs(rt.id, m.Sender, true) {
		mt.log.Info("turn interrupted by a new message", "folder", w.Folder, "jid", w.ChatJID, "turn", rt.id, "by", m.Sender)
	}
}

// settleSteered splits the messages steered into p's turn by whether its
// agent took them (steer.Took: written into its stdin here; on a worker,
// listed in the turn's outcome, whatever answers were lost): those join
// the turn's batch, which its record consumes (or retries) with the rest;
// the others are put back to run in the next turn. Each is prompted once.
func (t *turns) settleSteered(ctx context.Context, b store.Batch, steered []steeredMsg, steer *agent.Steering) store.Batch {
	var took []steeredMsg
	var left []store.WorkItem
	for _, s := range steered {
		if steer.Took(s.msg.Seq) {
			took = append(took, s)
		} else {
			left = append(left, s.item)
		}
	}
	t.requeueUntaken(ctx, b, left)
	return withSteered(b, took)
}

// requeueUntaken puts back left, the work items of messages steered into
// b's turn that its agent did not take, to run in the next turn.
func (t *turns) requeueUntaken(ctx context.Context, b store.Batch, left []store.WorkItem) {
	if len(left) == 0 {
		return
	}
	if err := t.st.ResetStarted(context.WithoutCancel(ctx), store.Batch{Items: left}); err != nil {
		t.log.Error("queue the messages the running agent did not take", "folder", b.Folder, "jid", b.ChatJID, "err", err)
		return
	}
	t.log.Info("messages sent to the running agent but not taken; queued for the next turn", "folder", b.Folder,
		"jid", b.ChatJID, "messages", len(left))
}

// withoutUntaken is b, the batch of a turn awaited after a restart, without
// the messages steered into the turn (store.WorkItem.Steered) that its
// agent did not take (took: the outcome's Result.Steered), which are put
// back for the next turn (requeueUntaken): the gateway that forwarded
// them is gone, and only the outcome says whether the worker wrote them
// in. A turn always has its own batch besides; should it have none, b is
// kept whole.
func (t *turns) withoutUntaken(ctx context.Context, b store.Batch, took []int64) store.Batch {
	var keep, left []store.WorkItem
	for _, it := range b.Items {
		if it.Steered && !slices.Contains(took, it.Seq) {
			left = append(left, it)
		} else {
			keep = append(keep, it)
		}
	}
	if len(left) == 0 || len(keep) == 0 {
		return b
	}
	msgs := make([]store.Message, 0, len(b.Messages))
	for _, m := range b.Messages {
		if !slices.ContainsFunc(left, func(it store.WorkItem) bool { return it.Seq == m.Seq }) {
			msgs = append(msgs, m)
		}
	}
	t.requeueUntaken(ctx, b, left)
	b.Items, b.Messages = keep, msgs
	return b
}

// withSteered is b with the messages steered into its turn: the turn's
// record consumes (or retries) them with the rest.
func withSteered(b store.Batch, steered []steeredMsg) store.Batch {
	if len(steered) == 0 {
		return b
	}
	b.Items = append(b.Items[:len(b.Items):len(b.Items)], make([]store.WorkItem, 0, len(steered))...)
	b.Messages = append(b.Messages[:len(b.Messages):len(b.Messages)], make([]store.Message, 0, len(steered))...)
	for _, s := range steered {
		b.Items = append(b.Items, s.item)
		b.Messages = append(b.Messages, s.msg)
	}
	return b
}

// recordInterrupted records a turn stopped to run again (interrupt): its
// batch is put back uncounted, to run with what came meanwhile as one new
// turn, and the turn is recorded stopped, its session kept for that turn.
func (t *turns) recordInterrupted(ctx context.Context, p preparedTurn, res agent.Result, by adapters.JID) time.Duration {
	rctx := context.WithoutCancel(ctx)
	if err := t.st.ResetStarted(rctx, p.b); err != nil {
		t.log.Error("put an interrupted turn's batch back", "folder", p.b.Folder, "turn", p.turn.ID, "err", err)
		return time.Second
	}
	turn := p.turn
	t.recordUsage(ctx, &turn, p.session, res)
	_, turn.SessionReset = t.active.finished(turn.ID)
	defer t.tokens.endTurnToken(turn.ID)
	turn.Duration, turn.ExitCode, turn.Status = res.Duration, res.ExitCode, store.TurnStopped
	turn.Error = "interrupted by a message from " + by.String()
	if res.NotStarted {
		turn.SessionID = p.session
	} else { // kept as a stopped turn's (recordStopped)
		turn.SessionID = t.keptSession(p.b, turn.ID, p.session, turn.SessionID)
	}
	t.metrics.turns.WithLabelValues(string(turn.Trigger), "user_stopped").Inc()
	t.metrics.turnSeconds.WithLabelValues(string(turn.Trigger)).Observe(res.Duration.Seconds())
	// Nothing of the batch is consumed: the next turn shows it again.
	// Recorded until the store takes it: the turn's cost is charged by it.
	_ = t.finish(ctx, "record interrupted turn", store.Batch{Folder: p.b.Folder, ChatJID: p.b.ChatJID, Topic: p.b.Topic}, turn, nil, time.Time{})
	t.log.Info("turn interrupted; its batch runs again with the new messages", "folder", p.b.Folder, "jid", p.b.ChatJID, "turn", turn.ID, "by", by)
	return 0
}
