package gateway

import (
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

// liveMarkers end a live reply whose turn did not answer, instead of
// leaving a half sentence on the platform.
const (
	liveMarkerFailed   = " … (failed)"
	liveMarkerTimedOut = " … (timed out)"
	liveMarkerStopped  = " … (stopped)"
	liveStopTimeout    = 10 * time.Second
	// liveTextCap bounds the text a live reply keeps (and renders at each
	// update): more than any platform shows in one message, and the reply
	// itself is capped at 64 KiB (store.CapText).
	liveTextCap = 64 << 10
)

// liveStarter starts the live replies of turns and hands the ones whose
// final reply was queued to the outbox (take), by the reply's outbox key.
type liveStarter struct {
	adapters adapterSet
	streams  map[string]Stream // by platform; missing: off
	progress bool              // agent.progress: a line while a tool runs
	log      *slog.Logger

	mu   sync.Mutex
	kept map[string]*liveTurn // outbox key -> a live reply awaiting its final
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
	var lr adapters.LiveReply
	if st, native := a.(adapters.Streamer); native && cfg.Mode == StreamNative {
		r, err := st.StartLive(ctx, out, turn)
		if err != nil && !errors.Is(err, adapters.ErrUnsupported) {
			s.log.Warn("live reply not started", "jid", out.Chat, "turn", turn, "err", err)
			return nil
		}
		lr = r
	}
	if lr == nil {
		lr = newEditLive(a, out)
		if lr == nil {
			return nil
		}
	}
	var lim adapters.Limits
	if l, ok := a.(adapters.Limiter); ok {
		lim = l.Limits()
	}
	l := &liveTurn{lr: lr, a: a, out: out, lim: lim, interval: cfg.Interval, progress: s.progress, log: s.log,
		kick: make(chan struct{}, 1), stopC: make(chan struct{}), done: make(chan struct{})}
	if l.interval <= 0 {
		l.interval = time.Second
	}
	go l.run(ctx) // shutdown cancels an update in flight
	return l
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
	lr       adapters.LiveReply
	a        adapters.Adapter
	out      adapters.Outbound
	lim      adapters.Limits
	interval time.Duration
	progress bool
	log      *slog.Logger
	kick     chan struct{}
	stopC    chan struct{}
	done     chan struct{}
	handed   atomic.Bool // keep: the outbox finishes it

	mu      sync.Mutex
	text    []byte // the reply so far, up to liveTextCap
	tool    string // the progress line of the running tool
	toolID  string
	shown   bool // an update showed something
	stopped bool
	dead    bool // the live reply ended (refused, permanent error): nothing more to show
}

// onEvent takes one agent event (agent.Input.OnEvent).
func (l *liveTurn) onEvent(e agent.Event) {
	l.mu.Lock()
	switch e.Kind {
	case agent.EventText:
		l.text = append(l.text, e.Text[:min(len(e.Text), max(liveTextCap-len(l.text), 0))]...)
	case agent.EventReplace:
		l.text = append(l.text[:0], e.Text[:min(len(e.Text), liveTextCap)]...)
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

// render is what an update shows: the text so far (its first part, when
// it outgrew the platform's limit) and the progress line.
func (l *liveTurn) render() string {
	l.mu.Lock()
	text, tool := strings.TrimSpace(strings.ToValidUTF8(string(l.text), "")), l.tool
	l.mu.Unlock()
	if tool != "" {
		if text != "" {
			text += "\n\n"
		}
		text += "_" + tool + "_"
	}
	return l.firstPart(text)
}

func (l *liveTurn) firstPart(text string) string {
	if l.lim.MaxText <= 0 || text == "" {
		return text
	}
	return adapters.SplitRendered(text, l.lim.MaxText, l.lim.Measure)[0]
}

// run shows the newest text after each change, at most once per interval;
// a rate limit pauses it for its wait (the newest text follows).
func (l *liveTurn) run(ctx context.Context) {
	defer close(l.done)
	last := ""
	for {
		select {
		case <-l.stopC:
			return
		case <-l.kick:
		}
		text := l.render()
		wait := l.interval
		if text != "" && text != last {
			err := l.lr.Update(ctx, text)
			var ra *adapters.RetryAfterError
			switch {
			case err == nil:
				last = text
				l.mu.Lock()
				l.shown = true
				l.mu.Unlock()
			case errors.As(err, &ra):
				wait = max(ra.Wait, wait)
				l.again()
			case errors.Is(err, adapters.ErrUnsupported) && !l.isShown():
				if !l.fallBack(ctx) {
					return
				}
				l.again()
			case errors.Is(err, adapters.ErrPermanent) || errors.Is(err, adapters.ErrLiveEnded) || errors.Is(err, adapters.ErrUnsupported):
				l.log.Warn("live reply ended; the final will be sent as a new message (if this repeats, set adapters.<platform>.stream: edit or off)",
					"jid", l.out.Chat, "err", err)
				l.mu.Lock()
				l.dead = true
				l.mu.Unlock()
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
	e := newEditLive(l.a, l.out)
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
// when the turn said nothing here (no reply, or one through MCP, or
// shutdown), else finished with marker after what it showed.
func (l *liveTurn) settle(ctx context.Context, marker string) {
	if l == nil || l.handed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveStopTimeout)
	defer cancel()
	l.mu.Lock()
	shown, dead, text := l.shown, l.dead, strings.TrimSpace(strings.ToValidUTF8(string(l.text), ""))
	l.mu.Unlock()
	if dead {
		return
	}
	if marker == "" || !shown || text == "" {
		if err := l.lr.Abort(ctx); err != nil {
			l.log.Warn("live reply left as it was after its turn ended without a reply", "jid", l.out.Chat, "err", err)
		}
		return
	}
	// Not stored: the turn's outcome is (its notice, a retry's reply).
	if _, err := l.lr.Finish(ctx, l.firstPart(text+marker)); err != nil {
		l.log.Warn("live reply left without its failure marker (the chat gets the failure notice)", "jid", l.out.Chat, "err", err)
	}
}

// finish shows the final (the first part of the reply) as the live reply's
// last state and returns its id (outbox.sendText). ok is false when the
// live reply is gone and the final must be sent.
func (l *liveTurn) finish(ctx context.Context, text string) (adapters.MessageID, bool, error) {
	l.mu.Lock()
	dead := l.dead
	lr := l.lr
	l.mu.Unlock()
	if dead {
		return "", false, nil
	}
	id, err := lr.Finish(ctx, text)
	switch {
	case errors.Is(err, adapters.ErrLiveEnded) || errors.Is(err, adapters.ErrUnsupported):
		return "", false, nil
	case errors.Is(err, adapters.ErrPermanent):
		// The live message is gone (deleted in the chat, say): the final
		// still reaches the chat, as a message of its own.
		l.log.Warn("live reply could not take its final; the reply is sent as a new message", "jid", l.out.Chat, "err", err)
		return "", false, nil
	}
	return id, err == nil, err
}

// abort ends a live reply whose final will not come through it: the
// gateway stops, or its reply failed for good. What it showed is removed
// where the platform can (a draft ends, an edited message is deleted).
func (l *liveTurn) abort(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveStopTimeout)
	defer cancel()
	if err := l.lr.Abort(ctx); err != nil {
		l.log.Warn("live reply left as it was: its final will be a new message", "jid", l.out.Chat, "err", err)
	}
}

// discard aborts the live reply awaiting the final of key, if any (its
// reply failed for good).
func (s *liveStarter) discard(ctx context.Context, key string) {
	if l := s.take(key); l != nil {
		l.abort(ctx)
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
// has one) Delete; nil when the adapter cannot edit. Its message has a key
// of its own, apart from the reply row's.
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
	return e
}
