package gateway

import (
	"context"
	"errors"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// liveStore is what live replies keep in the store: where each shows while
// its turn runs (store/live.go).
type liveStore interface {
	SaveLiveShown(ctx context.Context, l store.LiveShown) error
	EndLiveShown(ctx context.Context, turn string) error
	DropLiveShown(ctx context.Context, turn string) error
	DropLiveShowing(ctx context.Context, turn string) error
	DropLiveParts(ctx context.Context, turn string, from int) error
	AdoptLiveParts(ctx context.Context, from, to string) error
	LiveOf(ctx context.Context, turn string) ([]store.LiveShown, error)
	RecoverLive(ctx context.Context, maxAge time.Duration) (store.LiveRecovery, error)
}

const (
	// liveInterrupted replaces a live reply a crashed gateway left on a
	// platform that cannot delete it: the turn runs again (or its outcome
	// is awaited) and its reply comes as a message of its own.
	liveInterrupted = "(interrupted — the reply follows)"
	// liveRecoverWait bounds the cleanup at start-up (an adapter may still
	// be connecting); what is left is tried again at the next start.
	liveRecoverWait = 30 * time.Second
	// liveOrphanAge is how long the parts a crashed turn delivered wait for
	// the turn that answers the same message again (live_parts.go).
	liveOrphanAge = 24 * time.Hour
)

// record stores where the live reply shows once it shows a message that
// outlives the process (an edited message, a stream; not a draft), and
// again when that changes (a stream became an edited message).
func (l *liveTurn) record(ctx context.Context) {
	ls, ok := l.lr.(adapters.LiveShown)
	if !ok || l.st == nil {
		return
	}
	ref, mode, shown := ls.Shown()
	if !shown || mode == adapters.LiveDraft {
		return
	}
	key := string(mode) + "/" + string(ref.ID)
	l.mu.Lock()
	same := key == l.recorded
	l.mu.Unlock()
	if same {
		return
	}
	l.mu.Lock()
	part := len(l.parts)
	l.mu.Unlock()
	err := l.st.SaveLiveShown(context.WithoutCancel(ctx), store.LiveShown{TurnID: l.turn, Part: part, Chat: ref.Chat, Topic: ref.Topic, ID: ref.ID,
		Mode: mode, ReplyTo: l.out.ReplyTo})
	if err != nil {
		l.log.Warn("live reply not recorded; if the gateway dies now it stays as it is", "jid", l.out.Chat, "err", err)
		return
	}
	l.mu.Lock()
	l.recorded = key
	l.mu.Unlock()
}

// forget drops what record stored of the message showing the live reply:
// it was removed. The parts it finished stay recorded until the reply is
// delivered (drop), for the next start to resume it.
func (l *liveTurn) forget(ctx context.Context) {
	l.mu.Lock()
	recorded := l.recorded
	l.recorded = ""
	l.mu.Unlock()
	if recorded == "" || l.st == nil {
		return
	}
	if err := l.st.DropLiveShowing(context.WithoutCancel(ctx), l.turn); err != nil {
		l.log.Warn("ended live reply still recorded; the next start removes it", "jid", l.out.Chat, "err", err)
	}
}

// drop forgets every record of the live reply: its reply was delivered,
// or it ended without one.
func (l *liveTurn) drop(ctx context.Context) {
	l.mu.Lock()
	l.recorded = ""
	l.mu.Unlock()
	if l.st == nil {
		return
	}
	if err := l.st.DropLiveShown(context.WithoutCancel(ctx), l.turn); err != nil {
		l.log.Warn("ended live reply still recorded; the next start sorts it out", "jid", l.out.Chat, "err", err)
	}
}

// ended records that the message showing the live reply no longer takes
// the final (the platform ended it): after a crash from here on, the reply
// row is not resumed through it.
func (l *liveTurn) ended(ctx context.Context) {
	l.mu.Lock()
	recorded := l.recorded
	l.mu.Unlock()
	if recorded == "" || l.st == nil {
		return
	}
	if err := l.st.EndLiveShown(context.WithoutCancel(ctx), l.turn); err != nil {
		l.log.Warn("ended live reply not recorded as ended", "jid", l.out.Chat, "err", err)
	}
}

// leftovers sorts out the live replies a crashed gateway left
// (store.RecoverLive) and returns those to clean up (recover). It runs
// before the adapters start, so that no live reply of this run is among
// them, and before RecoverOutbox, so that a reply whose delivery went on
// through its live reply resumes instead of failing.
func (s *liveStarter) leftovers(ctx context.Context) ([]store.LiveShown, error) {
	if s == nil || s.st == nil {
		return nil, nil
	}
	rec, err := s.st.RecoverLive(ctx, liveOrphanAge)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resumable = map[string]bool{}
	for _, turn := range rec.Resume {
		s.resumable[turn] = true
	}
	s.orphans = rec.Orphans
	return rec.Clean, nil
}

// recover cleans up left (leftovers) before the interrupted turns run
// again: a message is deleted where the adapter can, else edited to
// liveInterrupted; a Slack stream is stopped first; a draft vanishes by
// itself. A message the platform no longer has counts as cleaned up; one
// that could not be reached within liveRecoverWait stays recorded for the
// next start.
func (s *liveStarter) recover(ctx context.Context, left []store.LiveShown) {
	if len(left) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, liveRecoverWait)
	defer cancel()
	failed := map[string]bool{} // by turn
	for _, l := range left {
		if err := s.cleanLeftover(ctx, l); err != nil {
			s.log.Warn("live reply left by a crash not cleaned up; tried again at the next start", "jid", l.Chat, "turn", l.TurnID, "err", err)
			failed[l.TurnID] = true
		}
	}
	n := 0
	for _, l := range left {
		if failed[l.TurnID] {
			continue
		}
		if err := s.st.DropLiveShowing(context.WithoutCancel(ctx), l.TurnID); err != nil {
			s.log.Warn("cleaned-up live reply still recorded", "turn", l.TurnID, "err", err)
		}
		n++
	}
	s.log.Info("live replies left by a crash cleaned up", "count", n, "left", len(left)-n)
}

// cleanLeftover ends one leftover message, retrying what may pass (an
// adapter still connecting, a rate limit) until ctx ends.
func (s *liveStarter) cleanLeftover(ctx context.Context, l store.LiveShown) error {
	a, ok := s.adapters[l.Chat.Platform()]
	if !ok || l.Mode == adapters.LiveDraft {
		return nil // no adapter to reach it with (none configured now), or nothing to do
	}
	ref := adapters.MessageRef{Chat: l.Chat, Topic: l.Topic, ID: l.ID}
	wait := 100 * time.Millisecond
	for {
		err := endLeftover(ctx, a, ref, l.Mode)
		var ra *adapters.RetryAfterError
		switch {
		case err == nil || errors.Is(err, adapters.ErrPermanent):
			return nil // done, or the message is gone
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

// endLeftover stops a stream (LiveEnder), then deletes the message
// (Deleter) or, failing that, edits it to liveInterrupted (Editor; one
// that carried buttons, without them).
func endLeftover(ctx context.Context, a adapters.Adapter, ref adapters.MessageRef, mode adapters.LiveMode) error {
	if e, ok := a.(adapters.LiveEnder); ok {
		if err := e.EndLive(ctx, ref, mode); err != nil {
			return err
		}
	}
	if d, ok := a.(adapters.Deleter); ok {
		err := d.Delete(ctx, ref)
		if !errors.Is(err, adapters.ErrUnsupported) {
			return err
		}
	}
	if b, ok := a.(adapters.Buttons); ok && mode == adapters.LiveButtons {
		return b.EditButtons(ctx, ref, stopButtonInterrupted, nil)
	}
	if b, ok := a.(adapters.Buttons); ok && mode == adapters.LiveEditButtons {
		return b.EditButtons(ctx, ref, liveInterrupted, nil) // an edit alone may keep them (Discord)
	}
	if e, ok := a.(adapters.Editor); ok {
		err := e.Edit(ctx, ref, liveInterrupted)
		if !errors.Is(err, adapters.ErrUnsupported) {
			return err
		}
	}
	return nil
}
