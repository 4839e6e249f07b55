package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// StopBy says who may stop a chat's running turn (limits.stop_by).
type StopBy string

const (
	// StopByAnyone: anyone who can post in the chat (the default).
	StopByAnyone StopBy = "anyone"
	// StopByApprovers: the approvers of the turn's group (Options.Approvals).
	StopByApprovers StopBy = "approvers"
)

// What a person who stops a turn is told.
const (
	stopNothingRunning = "Nothing is running."
	stopNotYours       = "Not yours to stop: only this group's approvers may stop its turns."
	stopSomeNotYours   = "Stopping yours; the other turns running here are not yours to stop: only their groups' approvers may stop them."
	stopStopping       = "Stopping."
	stopStopped        = "Stopped."
	stopGone           = "That turn has already ended."
	// stopPressPrefix starts the Data of a turn's Stop button: "stop:<turn id>".
	stopPressPrefix = "stop:"
)

// stoppable is the registry of the turns that run here, by id and by
// chat: what /stop, the Stop button and every message intake routes to a
// running turn (midturn.go) find it in, and how they stop it (the cancel
// of the ctx its runner got, with agent.ErrStopped as the cause). Each
// lookup is a map read, however many turns run.
type stoppable struct {
	mu sync.Mutex
	m  map[string]*stoppableTurn
	// inChats indexes m by chat and topic, then folder (one turn at a
	// time per folder).
	inChats map[chatTopic]map[groups.Folder]*stoppableTurn
}

// chatTopic is a chat and a topic in it.
type chatTopic struct {
	chat  adapters.JID
	topic string
}

// stoppableTurn is one running turn.
type stoppableTurn struct {
	id     string
	folder groups.Folder
	chat   adapters.JID
	topic  string
	// replyTo is the message its reply answers (lastMessageID): on Slack
	// a channel turn's reply is in that message's thread.
	replyTo adapters.MessageID
	// lastSeq is the newest message of its batch (0: none, as a task's):
	// a message up to it never interrupts the turn (claimedSince).
	lastSeq int64
	cancel  context.CancelCauseFunc
	by      adapters.JID // who stopped it; "" while nobody did
	// requeue: stopped by a message in interrupt mode (midturn.go): its
	// batch runs again with what came meanwhile.
	requeue bool
	// steer takes messages into the running agent (nil: it takes none,
	// as while the turn is prepared); smu guards it and orders a steering
	// (midturn.go) before the turn's end, which sets ended and collects
	// what was steered in.
	steer   *agent.Steering
	smu     sync.Mutex
	ended   bool
	steered []steeredMsg
	// queueing: a message for it was queued instead of steered (one with
	// attachments, midturn.go): those after it queue too, in order.
	queueing bool
}

// ended is how a registered turn ended, for the lifecycle.
type turnEnd struct {
	by      adapters.JID // who stopped it ("": nobody)
	requeue bool         // stopped to run its batch again (interrupt)
	steered []steeredMsg // messages written into it (steer)
}

// stopHandle is a registered turn, for the turn lifecycle: ctx is what its
// runner runs under, end unregisters it and says who stopped it, if anyone.
type stopHandle struct {
	ctx context.Context
	r   *stoppable
	rt  *stoppableTurn
}

// begin registers the turn id answering b, from the moment its batch is
// claimed: a stop while it is prepared (attachments downloading) ends it
// before its agent runs. The turn is prepared and its runner runs under the
// handle's ctx. A nil registry registers nothing (the turn cannot be
// stopped).
func (r *stoppable) begin(ctx context.Context, id string, b store.Batch) stopHandle {
	ctx, cancel := context.WithCancelCause(ctx)
	rt := &stoppableTurn{id: id, folder: b.Folder, chat: b.ChatJID, topic: b.Topic, replyTo: lastMessageID(b), lastSeq: batchLastSeq(b), cancel: cancel}
	if r == nil {
		return stopHandle{ctx: ctx, rt: rt}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.register(rt)
	return stopHandle{ctx: ctx, r: r, rt: rt}
}

// register adds rt (r.mu held).
func (r *stoppable) register(rt *stoppableTurn) {
	if r.m == nil {
		r.m, r.inChats = map[string]*stoppableTurn{}, map[chatTopic]map[groups.Folder]*stoppableTurn{}
	}
	r.m[rt.id] = rt
	k := chatTopic{rt.chat, rt.topic}
	if r.inChats[k] == nil {
		r.inChats[k] = map[groups.Folder]*stoppableTurn{}
	}
	r.inChats[k][rt.folder] = rt
}

// answering completes the registration of a turn registered before its
// batch was read (awaitTurn: begin with only its folder, chat and topic),
// now that b is: the handle to use from then on. A stop that came
// meanwhile stays: the turn is stopped, by whom it was.
func (h stopHandle) answering(b store.Batch) stopHandle {
	rt := &stoppableTurn{id: h.rt.id, folder: b.Folder, chat: b.ChatJID, topic: b.Topic, replyTo: lastMessageID(b), lastSeq: batchLastSeq(b),
		cancel: h.rt.cancel}
	if h.r == nil {
		return stopHandle{ctx: h.ctx, rt: rt}
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	rt.by, rt.requeue = h.rt.by, h.rt.requeue
	h.r.unregister(h.rt)
	h.r.register(rt)
	return stopHandle{ctx: h.ctx, r: h.r, rt: rt}
}

// under moves h, a turn registered before its folder's worker took it
// (recoverStarted, or an earlier try of awaitTurn), to that worker: the
// handle to use from then on, its ctx derived from ctx. A stop that came
// before stays and ends the new ctx at once, by whom it was.
func (h stopHandle) under(ctx context.Context) stopHandle {
	ctx, cancel := context.WithCancelCause(ctx)
	if h.r != nil {
		h.r.mu.Lock()
		defer h.r.mu.Unlock()
	}
	if agent.StopRequested(h.ctx) {
		cancel(agent.ErrStopped)
	}
	h.rt.cancel(nil) // the earlier ctx, used no more
	h.rt.cancel = cancel
	return stopHandle{ctx: ctx, r: h.r, rt: h.rt}
}

// batchLastSeq is the newest message seq of b's work items (0: none).
func batchLastSeq(b store.Batch) int64 {
	var last int64
	for _, it := range b.Items {
		last = max(last, it.Seq)
	}
	return last
}

// claimedSince reports whether the turn's batch was claimed after message
// seq was stored: it has that message (the turn answers it) or a later
// one. Such a turn did not run when the message came.
func (rt *stoppableTurn) claimedSince(seq int64) bool {
	return seq > 0 && rt.lastSeq >= seq
}

// unregister removes rt (r.mu held).
func (r *stoppable) unregister(rt *stoppableTurn) {
	delete(r.m, rt.id)
	k := chatTopic{rt.chat, rt.topic}
	if in := r.inChats[k]; in[rt.folder] == rt { // not a later turn of its folder registered meanwhile
		delete(in, rt.folder)
		if len(in) == 0 {
			delete(r.inChats, k)
		}
	}
}

// steerWith makes steer (nil: none) take the messages steered into the
// turn, once its agent is about to run.
func (h stopHandle) steerWith(steer *agent.Steering) {
	h.rt.smu.Lock()
	defer h.rt.smu.Unlock()
	h.rt.steer = steer
}

// stopped reports whether someone stopped the turn (its ctx ended with
// agent.ErrStopped).
func (h stopHandle) stopped() bool { return agent.StopRequested(h.ctx) }

// end unregisters the turn (after a steering in flight) and says how it
// ended.
func (h stopHandle) end() turnEnd {
	h.rt.smu.Lock()
	h.rt.ended = true
	steered := h.rt.steered
	h.rt.smu.Unlock()
	h.rt.cancel(nil)
	if h.r == nil {
		return turnEnd{steered: steered}
	}
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	h.r.unregister(h.rt)
	return turnEnd{by: h.rt.by, requeue: h.rt.requeue, steered: steered}
}

// running is folder's registered turn in chat and topic, if any.
func (r *stoppable) running(folder groups.Folder, chat adapters.JID, topic string) *stoppableTurn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inChats[chatTopic{chat, topic}][folder]
}

// inChat lists the turns running in chat and topic (one per folder).
// Their id, folder, chat and topic never change.
func (r *stoppable) inChat(chat adapters.JID, topic string) []*stoppableTurn {
	r.mu.Lock()
	defer r.mu.Unlock()
	in := r.inChats[chatTopic{chat, topic}]
	out := make([]*stoppableTurn, 0, len(in))
	for _, rt := range in {
		out = append(out, rt)
	}
	return out
}

// repliesIn reports whether rt, a turn outside topics, replies in the
// thread topic: on Slack a channel turn's reply is in the thread under the
// message it answers (replyTo), where people follow it and write on.
func (rt *stoppableTurn) repliesIn(topic string) bool {
	return rt.replyTo != "" && string(rt.replyTo) == topic
}

// toStop lists the turns a stop request in chat and topic stops: those
// running in that topic; or, with none there, those running in the chat
// outside topics whose reply is in the thread topic (a Slack channel's
// reply is in the thread of the message it answers, where people see the
// live reply and write their stop).
func (r *stoppable) toStop(chat adapters.JID, topic string) []*stoppableTurn {
	if in := r.inChat(chat, topic); len(in) > 0 || topic == "" {
		return in
	}
	var out []*stoppableTurn
	for _, rt := range r.inChat(chat, "") {
		if rt.repliesIn(topic) {
			out = append(out, rt)
		}
	}
	return out
}

// byID is the running turn id.
func (r *stoppable) byID(id string) (*stoppableTurn, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.m[id]
	return rt, ok
}

// stop stops the running turn id on behalf of by; false when it is no
// longer running. A second stop changes nothing.
func (r *stoppable) stop(id string, by adapters.JID) bool { return r.stopAs(id, by, false) }

// stopAs is stop; requeue marks the turn's batch to run again
// (interrupt), unless someone stopped it before.
func (r *stoppable) stopAs(id string, by adapters.JID, requeue bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.m[id]
	if !ok {
		return false
	}
	if rt.by == "" {
		rt.by, rt.requeue = by, requeue
		rt.cancel(agent.ErrStopped)
	}
	return true
}

// stoppedBy is who stopped rt ("": nobody, so far).
func (r *stoppable) stoppedBy(rt *stoppableTurn) adapters.JID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return rt.by
}

// stopper takes the requests to stop a chat's running turn (/stop, a
// mention of the bot then "stop", the Stop button), checks who may
// (limits.stop_by) and stops it.
type stopper struct {
	running *stoppable
	by      StopBy
	// isApprover says whether who may decide for folder: the approvals
	// part's one answer (groups[].approvals.approvers, inherited, or the
	// CLI's); nil: nobody is.
	isApprover func(ctx context.Context, folder groups.Folder, who adapters.JID) bool
	table      func() *routing.Table
	send       func(context.Context, ops.SendRequest) (store.OutboxItem, error) // outbox.send
	log        *slog.Logger
}

// botMention tells whether a message's first word is a mention of the bot,
// for the stop and approval commands that follow one ("@bot stop"): the
// adapter's own bot where it can tell (adapters.Mentioner), else, as on
// the web chat or before the adapter connected, any mention ("@name",
// Slack's "<@U123>"). A trailing "," or ":" is not part of the mention.
type botMention struct{ m adapters.Mentioner }

func (b botMention) is(word string) bool {
	word = strings.TrimRight(word, ",:")
	if b.m != nil {
		if self, known := b.m.MentionsSelf(word); known {
			return self
		}
	}
	return strings.HasPrefix(word, "@") || strings.HasPrefix(word, "<@")
}

// isStopCommand reports whether text is a request to stop: "/stop" as the
// whole message ("/stop@bot" too when it addresses the bot), or, in a
// message that mentions the bot, the bot's mention followed by "stop" (or
// "/stop": Slack's clients take a message starting with "/" for a slash
// command). After anyone else's mention it is a message like any.
func isStopCommand(text string, verb adapters.Verb, bot botMention) bool {
	f := strings.Fields(text)
	switch {
	case len(f) == 1 && f[0] == "/stop":
		return true
	case verb != adapters.VerbMention:
		return false
	case len(f) == 1:
		return strings.HasPrefix(f[0], "/stop@")
	case len(f) == 2:
		word := strings.TrimRight(f[1], ".!")
		return bot.is(f[0]) && (strings.EqualFold(word, "stop") || word == "/stop")
	}
	return false
}

// owns reports whether a /stop in chat and topic is the gateway's to
// answer: some folder owns the chat. Elsewhere it is a message like any.
func (s *stopper) owns(chat adapters.JID, topic string) bool {
	_, ok := s.table().Owner(chat, topic)
	return ok
}

// command handles a stored stop request m: it stops the turns running in
// its chat and topic that m's sender may stop, and answers once when there
// is nothing to stop or some turn is not the sender's to stop (saying
// whether others were). The stopped turn's live reply (or a notice) says
// it stopped. A turn that started after m was stored (a message after it
// in its batch: "/stop", then a new question) is not the one m meant.
func (s *stopper) command(ctx context.Context, m store.Message) {
	running := slices.DeleteFunc(s.running.toStop(m.ChatJID, m.Topic), func(rt *stoppableTurn) bool { return rt.claimedSince(m.Seq) })
	answer := ""
	if len(running) == 0 {
		answer = stopNothingRunning
	}
	stopped, refused := 0, 0
	for _, rt := range running {
		if !s.allowed(ctx, rt.folder, m.Sender) {
			refused++
			continue
		}
		if s.running.stop(rt.id, m.Sender) {
			stopped++
			s.log.Info("turn stop requested", "folder", rt.folder, "jid", rt.chat, "turn", rt.id, "by", m.Sender)
		}
	}
	switch {
	case refused > 0 && stopped > 0:
		answer = stopSomeNotYours
	case refused > 0:
		answer = stopNotYours
	}
	if answer == "" {
		return
	}
	req := ops.SendRequest{Chat: m.ChatJID, Topic: m.Topic, ReplyTo: m.ID, Text: answer, Kind: store.OutboxNotice,
		Key: "stop/" + m.ChatJID.String() + "/" + m.ID.String()}
	if _, err := s.send(ctx, req); err != nil {
		s.log.Error("answer a stop request", "jid", m.ChatJID, "err", err)
	}
}

// press handles a press of a Stop button ("stop:<turn id>"): it stops that
// turn if the presser may, and returns what the presser is told.
func (s *stopper) press(ctx context.Context, p adapters.Press) (string, error) {
	id := strings.TrimPrefix(p.Data, stopPressPrefix)
	rt, ok := s.running.byID(id)
	if !ok {
		return stopGone, nil
	}
	if p.Chat != "" && p.Chat != rt.chat {
		// A button is pressed under the message that carries it, in the
		// turn's chat; a press naming another chat is forged or stale.
		return stopGone, nil
	}
	if !s.allowed(ctx, rt.folder, p.Sender) {
		return stopNotYours, nil
	}
	if !s.running.stop(id, p.Sender) {
		return stopGone, nil
	}
	s.log.Info("turn stop requested", "folder", rt.folder, "jid", rt.chat, "turn", rt.id, "by", p.Sender, "via", "button")
	return stopStopping, nil
}

// allowed reports whether sender may stop a turn of folder.
func (s *stopper) allowed(ctx context.Context, folder groups.Folder, sender adapters.JID) bool {
	if s.by != StopByApprovers {
		return true
	}
	return s.isApprover != nil && s.isApprover(ctx, folder, sender)
}

// recordStopped records a turn a person stopped (runTurn): status stopped,
// not retried and without a failure notice; its usage as far as the agent
// reported it; the batch settled like a succeeded turn's, its session (the
// one it resumed, or the one the agent named) kept for the next turn. The
// chat is told "Stopped." unless the live reply shows it. It returns the
// folder's backoff, as runTurn.
func (t *turns) recordStopped(ctx context.Context, p preparedTurn, res agent.Result, runErr error, by adapters.JID, live *liveTurn) time.Duration {
	b, turn := p.b, p.turn
	t.recordUsage(ctx, &turn, p.session, res)
	_, turn.SessionReset = t.active.finished(turn.ID)
	defer t.tokens.endTurnToken(turn.ID) // FinishBatch revokes it; not when it fails
	turn.Duration, turn.ExitCode = res.Duration, res.ExitCode
	turn.Status = store.TurnStopped
	turn.Error = "stopped by " + by.String()
	switch {
	case by == "": // who stopped it is not known (recordAwaited)
		turn.Error = runErr.Error()
	case !errors.Is(runErr, agent.ErrStopped):
		turn.Error += fmt.Sprintf(" (%v)", runErr)
	}
	// As a succeeded turn's (recordTurn): the next turn resumes it; one
	// stopped before its agent ran made none.
	if res.NotStarted {
		turn.SessionID = p.session
	} else {
		turn.SessionID = t.keptSession(b, turn.ID, p.session, turn.SessionID)
	}
	t.metrics.turns.WithLabelValues(string(turn.Trigger), "user_stopped").Inc()
	t.metrics.turnSeconds.WithLabelValues(string(turn.Trigger)).Observe(res.Duration.Seconds())
	var out []store.OutboxItem
	if !live.showsText() {
		out = append(out, store.OutboxItem{Key: turn.ID + "/stopped", Kind: store.OutboxNotice, Folder: b.Folder, ChatJID: b.ChatJID,
			Topic: b.Topic, ReplyTo: lastMessageID(b), Text: stopStopped})
	}
	if err := t.finish(ctx, "record stopped turn", b, turn, out, time.Time{}); err != nil {
		return time.Second
	}
	t.log.Info("turn stopped", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID, "by", by, "ms", turn.Duration.Milliseconds())
	if len(out) > 0 {
		t.wakeOutbox()
	}
	return 0
}

// showsText reports whether the live reply shows some of the reply (and
// thus can end with a marker), or the placeholder that carried the Stop
// button (and thus can end saying stopStopped).
func (l *liveTurn) showsText() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shown && !l.dead && (strings.TrimSpace(string(l.text)) != "" || l.placeholder)
}
