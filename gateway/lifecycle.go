package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/store"
)

const (
	maxBatch    = 100 // messages in one turn
	maxAttempts = 3   // a batch runs at most three times (two retries)
)

// turnStore is what the turn lifecycle needs of the store.
type turnStore interface {
	finishStore
	Session(ctx context.Context, folder groups.Folder, chat adapters.JID, topic string) (string, error)
	MarkStarted(ctx context.Context, b store.Batch, turn string) error
	ResetStarted(ctx context.Context, b store.Batch) error
	DropSession(ctx context.Context, folder groups.Folder, chat adapters.JID, topic, id string) (bool, error)
	SessionCost(ctx context.Context, folder groups.Folder, session string) (float64, error)
	SessionTokens(ctx context.Context, folder groups.Folder, session string) (store.Usage, error)
	// reattach.go
	InterruptedTurns(ctx context.Context) ([]store.Interrupted, error)
	RecoverStarted(ctx context.Context, keep ...string) (int64, error)
	StartedBatch(ctx context.Context, turn string) (store.Batch, bool, error)
	RecoverTurn(ctx context.Context, turn string) (int64, error)
	GiveUpTurn(ctx context.Context, turn string, notice *store.OutboxItem) (int64, error)
	OutboxChatsSince(ctx context.Context, folder groups.Folder, keyPrefix string, since time.Time) ([]adapters.JID, error)
	GroupExists(ctx context.Context, folder groups.Folder) (bool, error)
}

// turnTokens are the MCP HTTP tokens of turns (mcpEndpoint).
type turnTokens interface {
	turnTokenEnv(ctx context.Context, folder groups.Folder, turn string) []string
	endTurnToken(turn string)
}

// turns is the turn lifecycle of a batch a worker picked: the guards,
// the turn prepared and run, its outcome recorded (a failure retried or
// given up), and the turns a stopped gateway left running awaited
// (reattach.go).
type turns struct {
	st          turnStore
	runner      agent.Runner
	agent       agent.Spec
	price       agent.Price     // Options.Price
	retryDelays []time.Duration // Options.RetryDelays
	operator    groups.Folder   // the tier-0 folder
	layout      groups.Layout
	socket      func(folder groups.Folder) string // the folder's MCP socket
	tokens      turnTokens
	guards      turnGuards
	files       *fetcher
	adapters    adapterSet // typing indicators
	active      *activeTurns
	notices     *noticeLimiter
	interrupted interrupted
	metrics     *metrics
	spend       *spend
	live        *liveStarter // live replies (nil: none)
	running     *stoppable
	buttons     *stopButtons
	wakeOutbox  func()
	kickAfter   func(folder groups.Folder, d time.Duration) // workers.kickAfter
	hooks       *testHooks
	log         *slog.Logger
}

// tierOf is the tier of folder (groups.Tier with the configured operator).
func (t *turns) tierOf(folder groups.Folder) int { return groups.Tier(folder, t.operator) }

// runTurn runs one batch through the agent and records the outcome,
// calling release (the turn slot) as soon as the agent has exited. It
// returns how long the folder should wait before its next batch: 0, unless
// the outcome could not be recorded.
func (t *turns) runTurn(ctx context.Context, b store.Batch, release func()) time.Duration {
	// Stoppable from the moment it is claimed (/stop, the Stop button,
	// an interrupt): a stop while it is prepared ends it unrun.
	run := t.running.begin(ctx, store.NewID("t-"), b)
	var place buttonPlace // the live reply carries the Stop button where it can
	unbutton := t.buttons.show(ctx, adapters.Outbound{Chat: b.ChatJID, Topic: b.Topic, ReplyTo: lastMessageID(b)}, run.rt.id, place.carried)
	// Attachments are downloaded before the agent starts, which for a large
	// file takes a while: the chat sees the bot at work from the start.
	var stopTyping func()
	if hasAttachments(b) {
		stopTyping = typing(ctx, t.adapters, t.log, b.ChatJID, b.Topic)
	}
	p, backoff, ok := t.prepareTurn(ctx, run, b)
	if !ok || run.stopped() {
		if stopTyping != nil {
			stopTyping()
		}
		unbutton()
		if ok {
			return t.recordUnrun(ctx, p, run)
		}
		run.end()
		return backoff
	}
	if stopTyping == nil {
		stopTyping = typing(ctx, t.adapters, t.log, b.ChatJID, b.Topic)
	}
	live := place.startLive(t.buttons.forLive(b.ChatJID, run.rt.id), func(buttons []adapters.Button) *liveTurn {
		return t.live.start(ctx, t.agent.Output, adapters.Outbound{Chat: b.ChatJID, Topic: b.Topic, ReplyTo: lastMessageID(b),
			ReplyToSender: lastSender(b), Key: p.turn.ID + "/reply", Buttons: buttons}, p.turn.ID)
	})
	if live != nil {
		p.in.OnEvent = live.onEvent
	}
	if t.agent.Input == agent.InputStreamJSON {
		p.in.Steer = agent.NewSteering() // agent.mid_turn: steer (midturn.go)
		run.steerWith(p.in.Steer)
	}
	res, err := t.runner.Run(run.ctx, t.agent, p.in)
	release()
	unbutton()
	stopTyping()
	live.stop() // nothing more is shown before the turn is recorded
	end := run.end()
	if !t.awaitedLater(ctx, res, err) {
		// (A turn left to the next start's await keeps what was steered
		// into it: that start settles it by the turn's outcome.)
		p.b = t.settleSteered(ctx, p.b, end.steered, p.in.Steer)
	}
	if end.by != "" && err != nil && ctx.Err() == nil {
		if end.requeue {
			backoff = t.recordInterrupted(ctx, p, res, end.by)
		} else {
			backoff = t.recordStopped(ctx, p, res, err, end.by, live)
		}
		live.settle(ctx, liveEndStopped)
		return backoff
	}
	backoff = t.recordTurn(ctx, p.b, p.turn, p.session, res, err, live)
	live.settle(ctx, liveEndOf(ctx, res, err))
	return backoff
}

// hasAttachments reports whether a message of b carries files to fetch.
func hasAttachments(b store.Batch) bool {
	for _, m := range b.Messages {
		if len(m.Attachments) > 0 {
			return true
		}
	}
	return false
}

// recordUnrun records a prepared turn stopped before its agent ran: as
// stopped (or, interrupted, its batch put back to run with what came),
// without a run.
func (t *turns) recordUnrun(ctx context.Context, p preparedTurn, run stopHandle) time.Duration {
	end := run.end()
	res := agent.Result{NotStarted: true, ExitCode: -1, SessionID: p.session}
	t.log.Info("turn stopped before its agent ran", "folder", p.b.Folder, "jid", p.b.ChatJID, "turn", p.turn.ID, "by", end.by)
	if end.requeue {
		return t.recordInterrupted(ctx, p, res, end.by)
	}
	return t.recordStopped(ctx, p, res, agent.Ended(run.ctx), end.by, nil)
}

// liveEndOf is why a live reply the outbox does not finish ends: quiet
// (aborted) unless the turn failed or timed out.
func liveEndOf(ctx context.Context, res agent.Result, err error) liveEnd {
	switch {
	case err == nil || ctx.Err() != nil:
		return liveEndQuiet
	case res.TimedOut:
		return liveEndTimedOut
	}
	return liveEndFailed
}

// preparedTurn is a turn ready to run: its record so far, the session it
// resumes and the agent's input.
type preparedTurn struct {
	b       store.Batch
	turn    store.Turn
	session string
	in      agent.Input
}

// prepareTurn decides whether the batch runs now and builds its turn (its
// id is run's): the session, the prompt, the environment with the turn's
// MCP token, and the batch marked started under the turn's id. ok is false when the turn does
// not run; backoff is then how long the folder waits.
func (t *turns) prepareTurn(ctx context.Context, run stopHandle, b store.Batch) (p preparedTurn, backoff time.Duration, ok bool) {
	first := b.Items[0]
	turn := store.Turn{
		ID: run.rt.id, Folder: b.Folder, ChatJID: b.ChatJID, Topic: b.Topic, Trigger: first.Trigger,
		TaskID: first.TaskID, RunID: first.RunID, Attempt: first.Attempts + first.Crashes + 1, Started: time.Now(),
	}
	if first.Attempts > 0 && first.Attempts+first.Crashes >= maxAttempts {
		// The agent failed, and crashes of the gateway under its other
		// attempts used up the rest: a batch runs at most three times
		// unless only the gateway (never the agent) is to blame.
		turn.Attempt = first.Attempts + first.Crashes
		return p, t.turnFailed(ctx, b, turn, agent.Result{ExitCode: -1}, fmt.Errorf("%w: it failed, and the gateway stopped during %d more attempts", agent.ErrFailed, first.Crashes), false), false
	}
	if t.guards.withheld(ctx, turnCandidate{batch: b, turn: turn}) {
		return p, 0, false
	}
	session := ""
	if !isolatedTurn(b) {
		s, err := t.st.Session(ctx, b.Folder, b.ChatJID, b.Topic)
		if err != nil {
			// Running without it would start a fresh session and then
			// replace the chat's session with it.
			if ctx.Err() == nil {
				t.log.Error("load session", "folder", b.Folder, "err", err)
			}
			return p, time.Second, false
		}
		session = t.attemptSession(b, turn, s)
	}
	tier := t.tierOf(b.Folder)
	files := t.files.fetch(run.ctx, b) // a stop ends the downloads
	prompt := buildPrompt(turnHeader{Folder: b.Folder, Tier: tier, Chat: b.ChatJID, Topic: b.Topic, Trigger: first.Trigger, Now: time.Now(), Files: files}, b)
	env := []string{
		"SWITCHBOARD_FOLDER=" + string(b.Folder),
		"SWITCHBOARD_TIER=" + strconv.Itoa(tier),
		"SWITCHBOARD_CHAT_JID=" + b.ChatJID.String(),
		"SWITCHBOARD_TOPIC=" + b.Topic,
		"SWITCHBOARD_SESSION_ID=" + session,
		"SWITCHBOARD_MCP_SOCKET=" + t.socket(b.Folder),
		"SWITCHBOARD_TRIGGER=" + string(first.Trigger),
		"SWITCHBOARD_TASK_ID=" + taskID(first.TaskID),
	}
	env = append(env, t.tokens.turnTokenEnv(ctx, b.Folder, turn.ID)...)
	t.log.Debug("turn starting", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID, "messages", len(b.Messages), "trigger", first.Trigger)
	if err := t.st.MarkStarted(ctx, b, turn.ID); err != nil {
		backoff := time.Second
		switch {
		case errors.Is(err, store.ErrBatchGone):
			// Dropped while it was prepared (its task cancelled or
			// paused, its group removed): it does not run; the folder
			// loads what is left.
			t.log.Info("turn not started: its work was dropped", "folder", b.Folder, "turn", turn.ID, "task", first.TaskID)
			backoff = 0
		case ctx.Err() == nil:
			t.log.Error("record turn start", "folder", b.Folder, "err", err)
		}
		t.tokens.endTurnToken(turn.ID)
		return p, backoff, false
	}
	t.active.started(turn.ID, b)
	t.active.setRun(turn.ID, session, turnDeadline(turn.Started, t.agent.Timeout))
	return preparedTurn{b: b, turn: turn, session: session, in: agent.Input{TurnID: agent.TurnID(turn.ID), Dir: t.layout.Dir(b.Folder), Env: env, SessionID: session,
		Prompt: prompt, Socket: t.socket(b.Folder)}}, 0, true
}

// turnDeadline is when a turn started at start is killed (zero: never).
func turnDeadline(start time.Time, timeout time.Duration) time.Time {
	if timeout <= 0 {
		return time.Time{}
	}
	return start.Add(timeout)
}

// isolatedTurn reports whether the batch is a task run in a session of its own.
func isolatedTurn(b store.Batch) bool {
	return b.Items[0].Trigger == store.TriggerTask && b.Items[0].Isolated
}

// awaitedLater reports whether a turn that ended with res and err is left
// to the next start to await: shutdown interrupted it, and it runs on a
// worker (the runner reattaches) that had started it.
func (t *turns) awaitedLater(ctx context.Context, res agent.Result, err error) bool {
	_, reattaches := t.runner.(agent.Reattacher)
	return err != nil && ctx.Err() != nil && reattaches && !res.NotStarted
}

// recordTurn records what the agent did in a started turn (activeTurns.started,
// store.MarkStarted), as Runner.Run or Reattacher.Await returned it: the
// turn record, the batch consumed or retried, the reply queued, the session
// saved, the usage counted, the turn's MCP token revoked. session is the
// one the turn resumed; live is its live reply (nil: none), handed to the
// outbox with the reply. It returns the folder's backoff, as runTurn.
func (t *turns) recordTurn(ctx context.Context, b store.Batch, turn store.Turn, session string, res agent.Result, err error, live *liveTurn) time.Duration {
	if res.Escaped > 0 || res.EscapedErr != nil {
		t.log.Info("agent processes outside its process group killed at turn end", "folder", b.Folder, "turn", turn.ID,
			"count", res.Escaped, "err", res.EscapedErr)
	}
	t.recordUsage(ctx, &turn, session, res)
	replied, sessionsReset := t.active.finished(turn.ID)
	turn.Duration = res.Duration
	turn.ExitCode = res.ExitCode
	if err != nil && ctx.Err() != nil {
		if t.awaitedLater(ctx, res, err) {
			// The turn goes on on its worker: the next start awaits its
			// outcome (its rows stay started under its id, its token valid).
			t.log.Warn("turn interrupted by shutdown; the next start awaits its outcome", "folder", b.Folder, "turn", turn.ID)
			return 0
		}
		// Shutdown interrupted the turn: leave the batch pending for the
		// next start, and do not count it as an attempt.
		t.log.Warn("turn interrupted by shutdown", "folder", b.Folder, "turn", turn.ID)
		t.tokens.endTurnToken(turn.ID)
		if err := t.st.ResetStarted(context.WithoutCancel(ctx), b); err != nil {
			t.log.Error("record turn interruption", "folder", b.Folder, "err", err)
		}
		return 0
	}
	defer t.tokens.endTurnToken(turn.ID) // FinishBatch revokes it; not when it fails
	if err != nil {
		t.dropLostSession(ctx, b, turn.ID, session, res, err)
		return t.turnFailed(ctx, b, turn, res, err, replied[b.ChatJID])
	}
	first := b.Items[0]
	turn.Status = store.TurnSucceeded
	t.metrics.turns.WithLabelValues(string(first.Trigger), string(store.TurnSucceeded)).Inc()
	t.metrics.turnSeconds.WithLabelValues(string(first.Trigger)).Observe(res.Duration.Seconds())
	turn.SessionID = t.keptSession(b, turn.ID, session, res.SessionID)
	turn.SessionReset = sessionsReset
	var out []store.OutboxItem
	if t.agent.Output != agent.OutputNone && !replied[b.ChatJID] {
		out = replyItems(b, turn.ID, res)
	}
	// The agent has run: record it even if shutdown began meanwhile, or the
	// batch would run (and answer) again at the next start. FinishBatch
	// also saves the session.
	if len(out) > 0 {
		t.live.keep(out[0].Key, live) // before the outbox can see the row
	}
	if err := t.finish(ctx, "record turn", b, turn, out, time.Time{}); err != nil {
		if len(out) > 0 && t.live.take(out[0].Key) != nil {
			live.handed.Store(false) // settle ends it
		}
		return time.Second
	}
	t.log.Info("turn done", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID, "ms", turn.Duration.Milliseconds(), "stdout_reply", len(out) > 0, "mcp_replies", len(replied))
	if len(out) > 0 {
		t.wakeOutbox()
	}
	return 0
}

// finish records a turn's outcome (FinishBatch), again and again while the
// store refuses it (a full disk, until the operator frees space): the
// batch's rows stay started until then, and a worker that moved on picked
// the batch again and ran its agent a second time for the same messages,
// every second the store kept refusing (its tool replies sent again, its
// cost spent again). It gives up, returning the last error, when ctx ends
// (the next start then counts the turn as interrupted) or when the store
// refuses the record for good (store.Permanent): the batch is then given
// up (giveUp), as no later try would record it either.
func (t *turns) finish(ctx context.Context, what string, b store.Batch, turn store.Turn, out []store.OutboxItem, retryAt time.Time) error {
	err := recordUntil(ctx, t.log, what, func(ctx context.Context) error {
		return t.st.FinishBatch(ctx, b, turn, out, retryAt)
	}, "folder", b.Folder, "turn", turn.ID)
	if err != nil && store.Permanent(err) {
		t.giveUp(ctx, b, turn)
	}
	return err
}

// unrecordedNotice tells a chat that its messages' turn was given up
// because the store refused its record.
const unrecordedNotice = "Sorry, I could not answer: the gateway could not record this turn (internal error). Please try again later."

// giveUp drops the started work of a turn whose record the store refuses
// for good, and tells the chat: left started, the batch would be picked
// again and its agent run again for the same messages, each outcome
// refused alike.
func (t *turns) giveUp(ctx context.Context, b store.Batch, turn store.Turn) {
	notice := &store.OutboxItem{Key: turn.ID + "/unrecorded", Kind: store.OutboxNotice, Folder: b.Folder, ChatJID: b.ChatJID,
		Topic: b.Topic, ReplyTo: lastMessageID(b), Text: unrecordedNotice}
	n, err := t.st.GiveUpTurn(context.WithoutCancel(ctx), turn.ID, notice)
	if err != nil {
		t.log.Error("give up an unrecorded turn's batch", "folder", b.Folder, "turn", turn.ID, "err", err)
		return
	}
	if n > 0 {
		t.log.Error("turn not recorded; its batch is given up", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID, "work_rows", n)
		t.wakeOutbox()
	}
}

// turnFailed records a failed attempt, tells the chat (rate-limited), and
// either defers the batch for a retry (RetryDelays; the folder's other
// chats run meanwhile) or gives up on it. answered says the agent had
// already sent to the batch's chat through a tool: a run again would
// answer the same messages a second time (as settleAnswered decides after
// a crash), so the batch is not retried and the chat is told the agent
// failed after that message, not that it was not answered.
func (t *turns) turnFailed(ctx context.Context, b store.Batch, turn store.Turn, res agent.Result, err error, answered bool) time.Duration {
	turn.Status = store.TurnFailed
	turn.Error = err.Error()
	if answered {
		turn.Error += "; " + errAnsweredBeforeFailure
	}
	outcome, reason := "failed", "exit"
	switch {
	case res.TimedOut:
		outcome, reason = "timeout", "timeout"
	case res.NotStarted:
		reason = "start"
	}
	t.metrics.turns.WithLabelValues(string(turn.Trigger), outcome).Inc()
	t.metrics.agentFailures.WithLabelValues(reason).Inc()
	if res.Duration > 0 {
		t.metrics.turnSeconds.WithLabelValues(string(turn.Trigger)).Observe(res.Duration.Seconds())
	}
	// A group removed while its turn ran (group rm keeps a running turn's
	// work) is not run again: it has no socket and no chats any more.
	removed := false
	if ok, gerr := t.st.GroupExists(context.WithoutCancel(ctx), b.Folder); gerr == nil && !ok {
		removed = true
	}
	giveUp := turn.Attempt >= maxAttempts || res.Usage.MaxBudgetHit || removed || answered // a rerun would spend agent.max_turn_usd again
	t.log.Warn("turn failed", "folder", b.Folder, "jid", b.ChatJID, "turn", turn.ID, "attempt", turn.Attempt, "give_up", giveUp, "group_removed", removed,
		"replied", answered, "err", err)
	var out []store.OutboxItem
	text := ""
	switch {
	case removed: // no notice: the chat is no longer the group's
	case answered:
		// Rate-limited like the retry notice: an agent that always fails
		// after it answered (a wrapper's exit status) is not a notice per
		// message.
		if t.notices.allow(b.ChatJID) {
			text = fmt.Sprintf("Sorry, something went wrong after that reply (%s).", shortReason(res, err))
		}
	case giveUp:
		text = fmt.Sprintf("Sorry, I could not answer after %d attempts (%s). Please try again later.", turn.Attempt, shortReason(res, err))
	case t.notices.allow(b.ChatJID):
		text = fmt.Sprintf("Sorry, something went wrong (%s). Retrying.", shortReason(res, err))
	}
	if text != "" {
		// Where the turn's reply would have gone: on Slack, the thread
		// under the message it answers (the outbox asks the Threader).
		out = append(out, store.OutboxItem{Key: turn.ID + "/notice", Kind: store.OutboxNotice, Folder: b.Folder, ChatJID: b.ChatJID, Topic: b.Topic,
			ReplyTo: lastMessageID(b), Text: text})
	}
	var delay time.Duration
	var retryAt time.Time
	if !giveUp {
		delay = t.retryDelays[min(turn.Attempt-1, len(t.retryDelays)-1)]
		retryAt = time.Now().Add(delay)
	}
	if ferr := t.finish(ctx, "record failed turn", b, turn, out, retryAt); ferr != nil {
		return max(delay, time.Second)
	}
	if len(out) > 0 {
		t.wakeOutbox()
	}
	if !giveUp {
		t.kickAfter(b.Folder, delay)
	}
	return 0
}

// shortReason is what the chat is told about a failed turn, in a user's
// words; the log and the turn's recorded error keep the detail.
func shortReason(res agent.Result, err error) string {
	switch {
	case res.TimedOut:
		return "the agent timed out"
	case res.NotStarted:
		return "the agent could not start"
	case res.ExitCode > 0:
		return fmt.Sprintf("the agent failed with exit status %d", res.ExitCode)
	case res.ExitCode < 0 && errors.Is(err, agent.ErrFailed):
		return "the agent was stopped by a signal"
	case errors.Is(err, agent.ErrFailed):
		return "the agent failed"
	}
	return "internal error"
}

// replyItems are the turn's replies to queue: its reply, or with several
// results (a steered turn answered more than once) each, in order, the
// first under the key its live reply is kept by.
func replyItems(b store.Batch, turn string, res agent.Result) []store.OutboxItem {
	replies := res.Replies
	if len(replies) < 2 {
		replies = []string{res.Reply}
	}
	var out []store.OutboxItem
	for _, r := range replies {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		key := turn + "/reply"
		if len(out) > 0 {
			key += "-" + strconv.Itoa(len(out)+1)
		}
		out = append(out, store.OutboxItem{Key: key, Kind: store.OutboxReply, Folder: b.Folder, ChatJID: b.ChatJID,
			Topic: b.Topic, ReplyTo: lastMessageID(b), Text: store.CapText(r)})
	}
	return out
}

// lastMessageID is the message a turn's reply answers: the batch's last
// in the batch's own topic. A message that joined the batch from the
// reply thread of a channel turn (steered into it, or interrupting it:
// midturn.go) is in the thread under that turn's message, so the reply
// answers that message: it stays in the thread (a Slack reply to a reply
// would ask for a thread under a reply), and messages written there go on
// finding the turn (stoppableTurn.repliesIn).
func lastMessageID(b store.Batch) adapters.MessageID {
	if m, ok := lastAnswered(b); ok {
		return m.ID
	}
	return ""
}

// lastSender is who wrote the message a turn's reply answers
// (lastMessageID), from the store: known after a restart too.
func lastSender(b store.Batch) adapters.JID {
	if m, ok := lastAnswered(b); ok {
		return m.Sender
	}
	return ""
}

// lastAnswered is the message lastMessageID names: the batch's last in
// its topic, else its last.
func lastAnswered(b store.Batch) (store.Message, bool) {
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if b.Messages[i].Topic == b.Topic {
			return b.Messages[i], true
		}
	}
	if len(b.Messages) == 0 {
		return store.Message{}, false
	}
	return b.Messages[len(b.Messages)-1], true
}

func taskID(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

// noticeEvery is how often a chat is told that a turn failed and is retried
// (the final notice after the last attempt is always sent).
const noticeEvery = 5 * time.Minute

// noticeLimiter allows one failure notice per chat per interval.
type noticeLimiter struct {
	mu     sync.Mutex
	last   map[adapters.JID]time.Time
	every  time.Duration
	pruned time.Time
	now    func() time.Time
}

func (n *noticeLimiter) allow(chat adapters.JID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	if t, ok := n.last[chat]; ok && now.Sub(t) < n.every {
		return false
	}
	if now.Sub(n.pruned) > n.every { // forget chats whose window has passed
		n.pruned = now
		for c, t := range n.last {
			if now.Sub(t) >= n.every {
				delete(n.last, c)
			}
		}
	}
	n.last[chat] = now
	return true
}

// keptSession is the session the next turn resumes after turn id of b ran
// (succeeded, or was stopped): the one the agent named (reported), else
// the one it resumed (session). Agents that report no id continue under
// the first turn's id; not when resume_args would pass that id to an
// agent that never made it.
func (t *turns) keptSession(b store.Batch, id, session, reported string) string {
	switch {
	case reported != "":
		return reported
	case session == "" && !isolatedTurn(b) && !t.agent.ResumeNamesSession():
		return id
	}
	return session
}
