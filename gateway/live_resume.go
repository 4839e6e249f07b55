package gateway

import (
	"context"
	"fmt"
	"strings"

	"switchboard/adapters"
	"switchboard/store"
)

// The final of a reply whose live reply takes it is delivered in steps,
// each recorded before the next (outbox.deliver, liveTurn.finish):
//
//  1. queued: FinishBatch stored the reply row (pending); the live reply
//     is recorded (live_replies: the message showing it, state live, and
//     the parts it finished mid-turn, state part).
//  2. claimed: the outbox claimed the row (sending).
//  3. finished: the live reply's message shows the final's part (Finish,
//     an edit, or a Slack stream stopped and edited).
//  4. sent: the row is sent and the part stored as the bot's message
//     (OutboxSent, one transaction).
//  5. dropped: the live reply's records are dropped.
//
// A crash after step 1 leaves the row pending: the next start resumes it
// (resume) through the recorded message, which takes the final by an edit.
// After step 2 or 3 the row is sending, and nothing but the live reply's
// message was touched since its last recorded part: store.RecoverLive
// makes it pending again, and the resumed delivery edits the message to
// the same final again (harmless) and marks the row sent: the reply is
// delivered once, never a delivery-failed notice. After step 4 the row is
// sent and the message stored as the bot's: its records are dropped and
// the message left as it is (never cleaned up as a half reply).
//
// A long final: parts finished mid-turn are delivered already (their ids);
// the part the live message takes is step 3; each later part is sent as a
// new message and recorded (OutboxPartSent). A crash during one of those
// sends is the outbox's usual window: the row is not resent (at most
// once) and fails with a delivery-failed notice; the live message, stored
// as the bot's, stays.

// liveStep names the steps above, for tests that stop the gateway between
// two of them as a crash would (liveStarter.crashAt).
type liveStep string

const (
	liveStepQueued   liveStep = "queued"
	liveStepClaimed  liveStep = "claimed"
	liveStepFinished liveStep = "finished"
	liveStepSent     liveStep = "sent"
)

// step marks that the outbox passed step; crashAt (tests only) may stop
// there for good.
func (s *liveStarter) step(st liveStep) {
	if s != nil && s.crashAt != nil {
		s.crashAt(st)
	}
}

// resume rebuilds the live reply of a reply row that a crashed gateway was
// delivering through it (store.RecoverLive listed its turn): its recorded
// parts are the reply's first parts, its recorded message takes the next
// one. nil when there is none.
func (s *liveStarter) resume(ctx context.Context, a adapters.Adapter, it store.OutboxItem) (*liveTurn, error) {
	if s == nil || s.st == nil {
		return nil, nil
	}
	turn, ok := strings.CutSuffix(it.Key, "/reply")
	s.mu.Lock()
	ok = ok && s.resumable[turn]
	s.mu.Unlock()
	if !ok {
		return nil, nil
	}
	recs, err := s.st.LiveOf(ctx, turn)
	if err != nil {
		return nil, fmt.Errorf("resume live reply: %w", err)
	}
	s.mu.Lock()
	delete(s.resumable, turn)
	s.mu.Unlock()
	l := &liveTurn{a: a, out: adapters.Outbound{Chat: it.ChatJID, Topic: it.Topic, ReplyTo: it.ReplyTo, Key: it.Key}, turn: turn,
		st: s.st, log: s.log, crashAt: s.crashAt, lr: &resumedLive{a: a}, dead: true}
	l.handed.Store(true)
	for _, r := range recs {
		switch {
		case r.State == store.LivePart && r.Part == len(l.parts):
			l.parts = append(l.parts, livePart{text: r.Text, id: r.ID})
		case r.State == store.LiveShowing:
			l.lr = &resumedLive{a: a, ref: adapters.MessageRef{Chat: r.Chat, Topic: r.Topic, ID: r.ID}, mode: r.Mode}
			l.dead, l.recorded = false, "resumed"
		}
	}
	s.log.Info("reply interrupted by a crash resumed through its live reply", "jid", it.ChatJID, "turn", turn, "parts", len(l.parts), "showing", !l.dead)
	return l, nil
}

// resumedLive is a live reply's message after a restart: no stream goes
// on; Finish ends a stream and edits the message to the final (again, if
// it showed it already; without the buttons it carried), Abort cleans it
// up as a leftover.
type resumedLive struct {
	a    adapters.Adapter
	ref  adapters.MessageRef // ID "": none
	mode adapters.LiveMode
}

func (r *resumedLive) Update(ctx context.Context, text string) error {
	return fmt.Errorf("update resumed live reply: %w", adapters.ErrLiveEnded)
}

func (r *resumedLive) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	ed, ok := r.a.(adapters.Editor)
	if r.ref.ID == "" || !ok {
		return "", fmt.Errorf("finish resumed live reply: %w", adapters.ErrLiveEnded)
	}
	if e, ok := r.a.(adapters.LiveEnder); ok {
		if err := e.EndLive(ctx, r.ref, r.mode); err != nil {
			return "", err
		}
	}
	edit := ed.Edit
	if b, ok := r.a.(adapters.Buttons); ok && r.mode == adapters.LiveEditButtons {
		edit = func(ctx context.Context, ref adapters.MessageRef, text string) error {
			return b.EditButtons(ctx, ref, text, nil) // the final without the Stop button
		}
	}
	if err := edit(ctx, r.ref, text); err != nil {
		return "", err
	}
	return r.ref.ID, nil
}

func (r *resumedLive) Abort(ctx context.Context) error {
	if r.ref.ID == "" {
		return nil
	}
	return endLeftover(ctx, r.a, r.ref, r.mode)
}
