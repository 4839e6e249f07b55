package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// stopButtonDelay is how long a turn runs before its Stop button shows:
// a quick answer never posts (and removes) one.
const stopButtonDelay = 3 * time.Second

// stopButtonInterrupted is what a Stop button message left by a crash says
// once the next start took its button away (where it cannot be deleted).
const stopButtonInterrupted = "Interrupted by a restart."

// stopButtons shows a running turn's Stop button ("stop:<turn id>",
// stopper.press) in a chat whose adapter has Buttons and streams
// (adapters.<name>.stream not off). The live reply carries it where it is
// a message the bot edits or a web draft (adapters.ButtonCarrier: a
// Telegram group's, a Discord one, Slack's edited message, the web chat's
// draft, the edit fallback): it costs no request of its own, and the
// final's edit takes it away; one that showed nothing by stopButtonDelay
// shows a placeholder to carry it. Where the live reply cannot carry it (a
// Telegram private chat's draft, a Slack stream) it is a message of its
// own, posted once the turn has run stopButtonDelay and removed when the
// turn ends (deleted where the adapter can, else its button taken away).
type stopButtons struct {
	adapters adapterSet
	st       liveStore         // records the message while it shows, so a crash's leftover is cleaned up at the next start
	streams  map[string]Stream // by platform; missing: off
	delay    time.Duration
	log      *slog.Logger
}

// forLive is the Stop button of turn for its live reply in chat to carry
// (adapters.Outbound.Buttons); nil where none shows.
func (s *stopButtons) forLive(chat adapters.JID, turn string) []adapters.Button {
	if s == nil || !s.shows(chat.Platform()) {
		return nil
	}
	return []adapters.Button{{Label: "Stop", Data: stopPressPrefix + turn, Style: adapters.StyleDanger}}
}

// shows reports whether platform's chats get Stop buttons: its adapter has
// Buttons and it streams.
func (s *stopButtons) shows(platform string) bool {
	_, ok := s.adapters[platform].(adapters.Buttons)
	cfg := s.streams[platform]
	return ok && cfg.Mode != StreamOff && cfg.Mode != ""
}

// show posts turn's Stop button as a message of its own into out's chat
// (and topic: the one its reply to out.ReplyTo lands in) after the delay, unless by then carried reports that the turn's live
// reply carries it (and will show it: liveTurn.holdButtons), or the returned remove was called first; remove takes
// it away again (it waits for a post in flight). It never blocks the
// turn. A nil stopButtons shows none.
func (s *stopButtons) show(ctx context.Context, out adapters.Outbound, turn string, carried func() bool) (remove func()) {
	if s == nil || !s.shows(out.Chat.Platform()) {
		return func() {}
	}
	platform := out.Chat.Platform()
	b := s.adapters[platform].(adapters.Buttons)
	out.Topic = replyTopic(s.adapters[platform], out) // where the turn's reply goes
	out.ReplyTo = ""                                  // the button's message is no reply
	out.Key, out.Text = turn+"/stop-button", "Working on it. Press Stop to stop."
	buttons := s.forLive(out.Chat, turn)
	done := make(chan struct{})
	var wg sync.WaitGroup
	var id adapters.MessageID
	wg.Go(func() {
		t := time.NewTimer(s.delay)
		defer t.Stop()
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if carried() {
			return // on the live reply
		}
		var err error
		if id, err = b.SendButtons(ctx, out, buttons); err != nil {
			s.log.Warn("stop button not shown", "jid", out.Chat, "turn", turn, "err", err)
			return
		}
		if s.st != nil {
			rec := store.LiveShown{TurnID: out.Key, Chat: out.Chat, Topic: out.Topic, ID: id, Mode: adapters.LiveButtons}
			if err := s.st.SaveLiveShown(ctx, rec); err != nil {
				s.log.Warn("stop button not recorded; a crash would leave it", "jid", out.Chat, "turn", turn, "err", err)
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if id == "" {
			return
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), liveStopTimeout)
		defer cancel()
		ref := adapters.MessageRef{Chat: out.Chat, Topic: out.Topic, ID: id}
		if d, ok := s.adapters[platform].(adapters.Deleter); !ok || d.Delete(rctx, ref) != nil {
			if err := b.EditButtons(rctx, ref, "Finished.", nil); err != nil {
				s.log.Warn("stop button left after its turn ended", "jid", out.Chat, "turn", turn, "err", err)
				return // recorded: the next start tries again
			}
		}
		if s.st != nil {
			if err := s.st.DropLiveShown(rctx, out.Key); err != nil {
				s.log.Warn("removed stop button still recorded", "jid", out.Chat, "turn", turn, "err", err)
			}
		}
	}
}

// buttonPlace decides once where a turn's Stop button shows: on its live
// reply, or as a message of its own (show). A turn whose live reply starts
// after the button's delay (its attachments were downloading) has the
// button's own message by then, and its live reply carries none.
type buttonPlace struct {
	mu   sync.Mutex
	live *liveTurn // nil until it starts
	own  bool      // the button has a message of its own
}

// carried is show's question at the delay: whether the live reply carries
// the button (liveTurn.holdButtons); if not, the button's own message is
// decided.
func (p *buttonPlace) carried() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live.holdButtons() {
		return true
	}
	p.own = true
	return false
}

// startLive starts the turn's live reply with start, giving it buttons
// (stopButtons.forLive) unless the button has a message of its own.
func (p *buttonPlace) startLive(buttons []adapters.Button, start func([]adapters.Button) *liveTurn) *liveTurn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.own {
		buttons = nil
	}
	p.live = start(buttons)
	return p.live
}
