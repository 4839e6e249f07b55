package gateway

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
	"switchboard/agent"
	"switchboard/store"
)

// StreamMode is how a platform shows a turn's reply while it runs
// (adapters.<name>.stream).
type StreamMode string

const (
	// StreamOff: no live reply; the final is sent when the turn ends.
	StreamOff StreamMode = "off"
	// StreamNative: the adapter's own live reply (adapters.Streamer), or
	// the edit fallback for an adapter without one.
	StreamNative StreamMode = "native"
	// StreamEdit: one message sent at the first update and edited after
	// (adapters.Editor), the final being its last edit.
	StreamEdit StreamMode = "edit"
)

// Stream is the live-reply setting of one platform.
type Stream struct {
	Mode StreamMode
	// Interval is the shortest time between two updates. Default 1s.
	Interval time.Duration
}

// liveEnd is why a live reply ends without the turn's final: its marker
// ends the live reply instead of a half sentence on the platform.
type liveEnd string

const (
	// liveEndQuiet: the turn said nothing here (no reply, a reply through
	// MCP, shutdown): the live reply is removed, not marked.
	liveEndQuiet    liveEnd = ""
	liveEndFailed   liveEnd = "failed"
	liveEndTimedOut liveEnd = "timed out"
	// liveEndStopped: the turn was stopped (/stop, the Stop button).
	liveEndStopped liveEnd = "stopped"
)

// marker is what follows the text the live reply showed: " … (stopped)".
func (r liveEnd) marker() string {
	if r == liveEndQuiet {
		return ""
	}
	return " … (" + string(r) + ")"
}

const (
	liveStopTimeout = 10 * time.Second
	// liveTextCap bounds the text a live reply keeps (and renders at each
	// update): more than any platform shows in one message, and the reply
	// itself is capped at 64 KiB (store.CapText).
	liveTextCap = 64 << 10
	// liveRetryMin bounds below the wait after an update or part the
	// platform refused for a while (a RetryAfterError): the wait it said,
	// not a whole interval, so that the newest text shows as soon as the
	// chat is due; a wait of nothing would spin.
	liveRetryMin = 20 * time.Millisecond
)

// liveStarter starts the live replies of turns and hands the ones whose
// final reply was queued to the outbox (take), by the reply's outbox key.
type liveStarter struct {
	adapters adapterSet
	st       liveStore         // where live replies show, for the cleanup after a crash (nil: not recorded)
	streams  map[string]Stream // by platform; missing: off
	progress bool              // agent.progress: a line while a tool runs
	// storePart stores a part of a reply finished mid-turn as the bot's
	// message (outbox.storeLivePart).
	storePart func(ctx context.Context, out adapters.Outbound, id adapters.MessageID, text string) error
	log       *slog.Logger

	// crashAt, set by tests only, is called at each step of a final's
	// delivery (live_resume.go) and may stop there for good, as a crash.
	crashAt func(liveStep)

	mu   sync.Mutex
	kept map[string]*liveTurn // outbox key -> a live reply awaiting its final
	// resumable: turns whose reply a crashed gateway was delivering
	// through their live reply (resume); orphans: parts delivered by turns
	// a crash cut short, for the turn answering the same message again
	// (adopt). Both are set at start (leftovers).
	resumable map[string]bool
	orphans   []store.LiveShown
}

// start returns the live reply of a turn answering in chat, or nil when the
// chat's platform streams nothing or the agent's output has no events.
func (s *liveStarter) start(ctx context.Context, output agent.Output, out adapters.Outbound, turn string) *liveTurn {
	if s == nil || !slices.Contains([]agent.Output{agent.OutputClaudeStream, agent.OutputCodexJSON, agent.OutputText, ""}, output) {
		return nil // claude-json's one line of JSON is no reply text
	}
	platform := out.Chat.Platform()
	cfg, ok := s.streams[platform]
	a, found := s.adapters[platform]
	if !ok || !found || cfg.Mode == StreamOff || cfg.Mode == "" {
		return nil
	}
	// Every part streams, and is stored, where the outbox sends the reply,
	// not only the first, which replies.
	out.Topic = replyTopic(a, out)
	open := s.opener(a, cfg, out, turn)
	lr := open(ctx, 0)
	if lr == nil {
		return nil
	}
	var lim adapters.Limits
	if l, ok := a.(adapters.Limiter); ok {
		lim = memoLimits(l.Limits())
	}
	l := &liveTurn{lr: lr, open: open, storePart: s.storePart, a: a, out: out, turn: turn, st: s.st, lim: lim, interval: cfg.Interval, progress: s.progress, log: s.log, crashAt: s.crashAt,
		kick: make(chan struct{}, 1), stopC: make(chan struct{}), done: make(chan struct{})}
	if l.interval <= 0 {
		l.interval = time.Second
	}
	l.prior = s.adopt(ctx, out, turn)
	go l.run(ctx) // shutdown cancels an update in flight
	return l
}

// liveMemoSize bounds the parts a live reply keeps the measure of.
const liveMemoSize = 256

// memoLimits is lim whose Measure remembers what it measured: a live
// reply splits its whole text so far at every update (LiveParts), and
// without it the parts settled long ago would be rendered again each
// time, so the cost of an update would grow with the answer (a measure
// renders the part, twice for Telegram). Safe for concurrent use.
func memoLimits(lim adapters.Limits) adapters.Limits {
	measure := lim.Measure
	if measure == nil {
		return lim
	}
	var mu sync.Mutex
	seen := map[string]int{}
	lim.Measure = func(s string) int {
		mu.Lock()
		n, ok := seen[s]
		mu.Unlock()
		if ok {
			return n
		}
		n = measure(s)
		mu.Lock()
		if len(seen) >= liveMemoSize {
			clear(seen)
		}
		seen[strings.Clone(s)] = n // not the whole text s is cut from
		mu.Unlock()
		return n
	}
	return lim
}

// keep hands l to the outbox: the turn queued its final reply under key.
func (s *liveStarter) keep(key string, l *liveTurn) {
	if s == nil || l == nil {
		return
	}
	l.handed.Store(true)
	s.put(key, l)
}

func (s *liveStarter) put(key string, l *liveTurn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept == nil {
		s.kept = map[string]*liveTurn{}
	}
	s.kept[key] = l
}

// take removes and returns the live reply awaiting the final of key.
func (s *liveStarter) take(key string) *liveTurn {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.kept[key]
	delete(s.kept, key)
	return l
}

// putBack returns l to the outbox after a failed Finish, for the retry.
func (s *liveStarter) putBack(key string, l *liveTurn) { s.put(key, l) }

// liveTurn is one turn's live reply: the agent's events (onEvent, which
// never blocks) build the text so far; its own goroutine (run) shows it at
// most once per interval.
type liveTurn struct {
	lr   adapters.LiveReply                                  // the current part's
	open func(ctx context.Context, n int) adapters.LiveReply // starts part n's live reply (nil: cannot)
	// storePart stores a part finished mid-turn as the bot's message.
	storePart func(ctx context.Context, out adapters.Outbound, id adapters.MessageID, text string) error
	a         adapters.Adapter
	out       adapters.Outbound
	turn      string
	st        liveStore
	lim       adapters.Limits
	interval  time.Duration
	progress  bool
	log       *slog.Logger
	crashAt   func(liveStep) // liveStarter.crashAt
	kick      chan struct{}
	stopC     chan struct{}
	done      chan struct{}
	handed    atomic.Bool // keep: the outbox finishes it

	mu    sync.Mutex
	text  []byte     // the reply so far, up to liveTextCap
	parts []livePart // the parts finished as messages of their own, in order
	// prior are the parts a crashed run of the turn delivered (adopt);
	// the first adopted of them are parts' first.
	prior   []livePart
	adopted int
	// answered is how much of text the agent's answers before the current
	// one hold (up to its last result event): a replace keeps it.
	answered int
	tool     string // the progress line of the running tool
	toolID   string
	shown    bool // an update showed something
	// recorded is the mode and id last recorded (liveStore) of where the
	// live reply shows; "" while nothing is.
	recorded string
	stopped  bool
	dead     bool // the live reply ended (refused, permanent error): nothing more to show
	// placeholder: the live reply shows livePlaceholder while it has
	// nothing else to show (holdButtons).
	placeholder bool
}

// onEvent takes one agent event (agent.Input.OnEvent).
func (l *liveTurn) onEvent(e agent.Event) {
	l.mu.Lock()
	switch e.Kind {
	case agent.EventText:
		text := e.Text
		if l.answered > 0 && len(l.text) == l.answered && text != "" {
			text = "\n\n" + strings.TrimLeft(text, "\n") // the next answer begins
		}
		l.text = append(l.text, text[:min(len(text), max(liveTextCap-len(l.text), 0))]...)
	case agent.EventReplace:
		text := e.Text
		if l.answered > 0 && text != "" {
			text = "\n\n" + text
		}
		l.text = append(l.text[:l.answered], text[:min(len(text), max(liveTextCap-l.answered, 0))]...)
	case agent.EventResult:
		// A steered agent may answer again (a second result in the same
		// process): its text follows this answer's, which a replace
		// (the agent's text so far, from its new answer on) keeps.
		l.text = bytes.TrimRight(l.text, " \t\r\n")
		l.answered = len(l.text)
		l.mu.Unlock()
		return
	case agent.EventToolStart:
		if l.progress {
			l.tool, l.toolID = "running "+e.Tool, e.ToolID
			if e.Summary != "" {
				l.tool += ": " + e.Summary
			}
		}
	case agent.EventToolEnd:
		if l.tool != "" && (e.ToolID == l.toolID || e.ToolID == "") {
			l.tool, l.toolID = "", ""
		}
	default:
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *liveTurn) firstPart(text string) string {
	if l.lim.MaxText <= 0 || text == "" {
		return text
	}
	return adapters.SplitRendered(text, l.lim.MaxText, l.lim.Measure)[0]
}

// run shows the newest text after each change, at most once per interval;
// a refused update (a rate limit, or the adapter's pacing: a
// RetryAfterError) pauses it for the wait it said, and the newest text
// follows.
func (l *liveTurn) run(ctx context.Context) {
	defer close(l.done)
	last := ""
	for {
		select {
		case <-l.stopC:
			return
		case <-l.kick:
		}
		settle, text := l.view()
		wait := l.interval
		if settle != "" {
			// The text passed the platform's limit: this part becomes a
			// message of its own, and the reply goes on in a new one.
			err := l.finishPart(ctx, settle)
			var ra *adapters.RetryAfterError
			switch {
			case err == nil:
				last = ""
			case errors.As(err, &ra):
				wait = max(ra.Wait, liveRetryMin)
			case errors.Is(err, adapters.ErrPermanent) || errors.Is(err, adapters.ErrLiveEnded) || errors.Is(err, adapters.ErrUnsupported):
				l.end(err)
				return
			default:
				l.log.Debug("live part not finished", "jid", l.out.Chat, "err", err)
			}
			l.again()
			text = "" // one call per interval
		}
		if text != "" && text != last {
			err := l.lr.Update(ctx, text)
			var ra *adapters.RetryAfterError
			switch {
			case err == nil:
				last = text
				l.mu.Lock()
				l.shown = true
				l.mu.Unlock()
				l.record(ctx)
			case errors.As(err, &ra):
				wait = max(ra.Wait, liveRetryMin)
				l.again()
			case errors.Is(err, adapters.ErrUnsupported) && !l.isShown():
				if !l.fallBack(ctx) {
					return
				}
				l.again()
			case errors.Is(err, adapters.ErrPermanent) || errors.Is(err, adapters.ErrLiveEnded) || errors.Is(err, adapters.ErrUnsupported):
				l.end(err)
				return
			default:
				l.log.Debug("live update failed", "jid", l.out.Chat, "err", err)
				l.again()
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-l.stopC:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// end marks the live reply ended by the platform: nothing more shows.
func (l *liveTurn) end(err error) {
	l.log.Warn("live reply ended; the final will be sent as a new message (if this repeats, set adapters.<platform>.stream: edit or off)",
		"jid", l.out.Chat, "err", err)
	l.mu.Lock()
	l.dead = true
	l.mu.Unlock()
}

func (l *liveTurn) again() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *liveTurn) isShown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.shown
}

// fallBack replaces a native live reply the platform refused by the edit
// fallback; false when the adapter cannot edit either.
func (l *liveTurn) fallBack(ctx context.Context) bool {
	_ = l.lr.Abort(ctx)
	l.mu.Lock()
	n := len(l.parts)
	l.mu.Unlock()
	e := newEditLive(l.a, partOut(l.out, n))
	l.mu.Lock()
	defer l.mu.Unlock()
	if e == nil {
		l.dead = true
		return false
	}
	l.lr = e
	return true
}

// stop ends the updates and waits for the one in flight.
func (l *liveTurn) stop() {
	if l == nil {
		return
	}
	l.mu.Lock()
	already := l.stopped
	l.stopped = true
	l.mu.Unlock()
	if !already {
		close(l.stopC)
	}
	<-l.done
}

// settle ends a stopped live reply the outbox will not finish: aborted
// when the turn said nothing here (why is liveEndQuiet), else finished
// with why's marker after what it showed.
func (l *liveTurn) settle(ctx context.Context, why liveEnd) {
	if l == nil || l.handed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveStopTimeout)
	defer cancel()
	text := l.currentText()
	l.mu.Lock()
	shown, dead, placeholder := l.shown, l.dead, l.placeholder
	l.mu.Unlock()
	if dead {
		return
	}
	final := ""
	switch {
	case why == liveEndQuiet || !shown:
	case text != "":
		final = l.firstPart(text + why.marker())
	case why == liveEndStopped && placeholder:
		final = stopStopped // the placeholder that carried the Stop button says it (showsText)
	}
	if final == "" {
		if err := l.lr.Abort(ctx); err != nil {
			l.log.Warn("live reply left as it was after its turn ended without a reply (the next start removes it)", "jid", l.out.Chat, "err", err)
			return
		}
		l.drop(ctx)
		return
	}
	// A failed turn's is not stored: its outcome is (its notice, a
	// retry's reply).
	id, err := l.lr.Finish(ctx, final)
	if err != nil {
		l.log.Warn("live reply left without its marker (the chat gets the failure notice; the next start removes it)", "jid", l.out.Chat, "err", err)
		return
	}
	if why == liveEndStopped {
		l.storeStopped(ctx, id, final)
	}
	l.drop(ctx)
}

// storeStopped stores a stopped turn's live reply, finished as message id
// with final (the text it showed and "(stopped)"), as the bot's message,
// as the parts before it were (finishPart): it is the turn's last word in
// the chat's history, and the web chat, whose pages show what is stored,
// keeps showing it after a reload.
func (l *liveTurn) storeStopped(ctx context.Context, id adapters.MessageID, final string) {
	if id == "" || l.storePart == nil {
		return
	}
	l.mu.Lock()
	n := len(l.parts)
	l.mu.Unlock()
	if err := l.storePart(context.WithoutCancel(ctx), partOut(l.out, n), id, final); err != nil {
		l.log.Warn("stopped live reply not stored in the chat's history", "jid", l.out.Chat, "err", err)
	}
}

// finish shows the final's part as the live reply's last state and
// returns its id (outbox.sendText). ok is false when the live reply is
// gone and the part must be sent. Its record stays until the reply is
// delivered (liveStarter.delivered): a crash before then resumes the
// delivery through it (live_resume.go).
func (l *liveTurn) finish(ctx context.Context, text string) (adapters.MessageID, bool, error) {
	l.mu.Lock()
	dead := l.dead
	lr := l.lr
	l.mu.Unlock()
	if dead {
		l.ended(ctx) // before the part is sent as a message
		return "", false, nil
	}
	id, err := lr.Finish(ctx, text)
	switch {
	case err == nil:
		l.hook(liveStepFinished)
	case errors.Is(err, adapters.ErrLiveEnded) || errors.Is(err, adapters.ErrUnsupported):
		l.ended(ctx)
		return "", false, nil
	case errors.Is(err, adapters.ErrPermanent):
		// The live message is gone (deleted in the chat, say): the final
		// still reaches the chat, as a message of its own.
		l.log.Warn("live reply could not take its final; the reply is sent as a new message", "jid", l.out.Chat, "err", err)
		l.ended(ctx)
		return "", false, nil
	}
	return id, err == nil, err
}

// hook passes step to the starter's crashAt (tests).
func (l *liveTurn) hook(step liveStep) {
	if l.crashAt != nil {
		l.crashAt(step)
	}
}

// abort ends a live reply whose final will not come through it: the
// gateway stops, or its reply failed for good. What it showed is removed
// where the platform can (a draft ends, an edited message is deleted).
func (l *liveTurn) abort(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveStopTimeout)
	defer cancel()
	if err := l.lr.Abort(ctx); err != nil {
		l.log.Warn("live reply left as it was: its final will be a new message (the next start removes it)", "jid", l.out.Chat, "err", err)
		return
	}
	l.forget(ctx)
}

// discard aborts the live reply awaiting the final of key, if any (its
// reply failed for good).
func (s *liveStarter) discard(ctx context.Context, key string) {
	if l := s.take(key); l != nil {
		l.abort(ctx)
		l.drop(ctx)
	}
}

// delivered forgets the live reply of key, if any: the outbox recorded its
// reply delivered.
func (s *liveStarter) delivered(ctx context.Context, key string) {
	if l := s.take(key); l != nil {
		l.drop(ctx)
	}
}

// abortAll aborts every live reply still awaiting its final: the outbox
// stops, and those finals go out after the next start as new messages.
func (s *liveStarter) abortAll(ctx context.Context) {
	if s == nil {
		return
	}
	s.mu.Lock()
	kept := s.kept
	s.kept = nil
	s.mu.Unlock()
	for _, l := range kept {
		l.abort(ctx)
	}
}

// newEditLive is the live reply of an adapter without a native one (or
// with stream: edit): adapters.EditLive over its Send, Edit and (when it
// has them) Delete and Buttons, with which it carries out.Buttons; nil
// when the adapter cannot edit. Its message has a key of its own, apart
// from the reply row's.
func newEditLive(a adapters.Adapter, out adapters.Outbound) adapters.LiveReply {
	ed, ok := a.(adapters.Editor)
	if !ok {
		return nil
	}
	out.Key += "/live"
	e := &adapters.EditLive{Out: out, Send: a.Send, Edit: ed.Edit, Render: markdown.Partial}
	if d, ok := a.(adapters.Deleter); ok {
		e.Delete = d.Delete
	}
	if b, ok := a.(adapters.Buttons); ok {
		e.SendButtons, e.EditButtons = b.SendButtons, b.EditButtons
	}
	return e
}

// livePlaceholder is what a live reply that carries the Stop button shows
// while the agent has said nothing yet (holdButtons).
const livePlaceholder = "_Working on it…_"

// holdButtons makes the live reply show the buttons it was started with:
// false when it cannot carry them (adapters.ButtonCarrier), else it shows
// livePlaceholder until the agent's text or progress line replaces it, so
// that a turn silent so far shows them too. Nil-safe.
func (l *liveTurn) holdButtons() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	c, ok := l.lr.(adapters.ButtonCarrier)
	carries := ok && !l.dead && c.CarriesButtons()
	l.placeholder = l.placeholder || carries
	l.mu.Unlock()
	if carries {
		l.again()
	}
	return carries
}

func (l *liveTurn) holding() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.placeholder
}
