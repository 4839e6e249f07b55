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

// stopButtons shows a running turn's Stop button: a message of its own
// with the button ("stop:<turn id>", stopper.press), posted once the turn
// has run stopButtonDelay in a chat whose adapter has Buttons and streams
// (adapters.<name>.stream not off), and removed when the turn ends
// (deleted where the adapter can, else its button taken away). A message
// of its own rather than a button on the live reply: native live replies
// (drafts, Slack streams) carry no buttons, and this works the same on
// every platform.
type stopButtons struct {
	adapters adapterSet
	st       liveStore         // records the message while it shows, so a crash's leftover is cleaned up at the next start
	streams  map[string]Stream // by platform; missing: off
	delay    time.Duration
	log      *slog.Logger
}

// show posts turn's Stop button into out's chat after the delay, unless
// the returned remove is called first; remove takes it away again (it
// waits for a post in flight). It never blocks the turn. A nil
// stopButtons shows none.
func (s *stopButtons) show(ctx context.Context, out adapters.Outbound, turn string) (remove func()) {
	if s == nil {
		return func() {}
	}
	platform := out.Chat.Platform()
	b, ok := s.adapters[platform].(adapters.Buttons)
	if cfg := s.streams[platform]; !ok || cfg.Mode == StreamOff || cfg.Mode == "" {
		return func() {}
	}
	out.Key, out.Text = turn+"/stop-button", "Working on it. Press Stop to stop."
	buttons := []adapters.Button{{Label: "Stop", Data: stopPressPrefix + turn, Style: adapters.StyleDanger}}
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
