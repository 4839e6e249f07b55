package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"switchboard/adapters"
	"switchboard/store"
)

// A live reply longer than one message (CONTRACT §15: it continues in a
// new message): once the text so far settles a part the final would cut
// (adapters.LiveParts), that part is finished as a message of its own and
// stored as the bot's, and the reply goes on in a new live reply. The
// outbox, delivering the final, takes those messages as its first parts
// (deliverPart) and sends nothing for them again.

// livePart is a part of the reply finished mid-turn: its text and the
// platform id it was stored under.
type livePart struct {
	text string
	id   adapters.MessageID
}

// partOut is where part n (from 0) of a reply goes: the first replies to
// the message answered; the next ones carry the keys the outbox gives its
// parts (outbox.sendText).
func partOut(out adapters.Outbound, n int) adapters.Outbound {
	if n == 0 {
		return out
	}
	out.Key = fmt.Sprintf("%s/%d", out.Key, n+1)
	out.ReplyTo = ""
	return out
}

// opener returns what starts the live reply of part n in out's chat: the
// adapter's own (Streamer, stream: native, or edit where the adapter has no
// Editor), else the edit fallback; nil when neither can start.
func (s *liveStarter) opener(a adapters.Adapter, cfg Stream, out adapters.Outbound, turn string) func(ctx context.Context, n int) adapters.LiveReply {
	return func(ctx context.Context, n int) adapters.LiveReply {
		o, id := partOut(out, n), turn
		if n > 0 {
			id = fmt.Sprintf("%s/%d", turn, n+1) // a draft of its own
		}
		// stream: edit on an adapter that cannot edit (the web chat) takes
		// its own live reply: the edit fallback has nothing to edit with,
		// and the chat showed nothing until the turn ended.
		_, canEdit := a.(adapters.Editor)
		if st, native := a.(adapters.Streamer); native && (cfg.Mode == StreamNative || cfg.Mode == StreamEdit && !canEdit) {
			r, err := st.StartLive(ctx, o, id)
			if err != nil && !errors.Is(err, adapters.ErrUnsupported) {
				s.log.Warn("live reply not started", "jid", out.Chat, "turn", turn, "err", err)
				return nil
			}
			if r != nil {
				return r
			}
		}
		if e := newEditLive(a, o); e != nil {
			return e
		}
		return nil
	}
}

// liveText is the text so far as the final will be: trimmed, valid UTF-8.
func liveText(b []byte) string { return strings.TrimSpace(strings.ToValidUTF8(string(b), "")) }

// view is what the live reply shows next: settle, the next part the text
// settled and not yet finished ("" none), and show, the current part with
// the progress line, within one message.
func (l *liveTurn) view() (settle, show string) {
	l.mu.Lock()
	text, tool := liveText(l.text), l.tool
	l.mu.Unlock()
	parts, settled := adapters.LiveParts(text, l.lim)
	if l.matchPrior(parts, settled) {
		return "", "" // shown already, by the crashed run
	}
	l.mu.Lock()
	done := len(l.parts)
	l.mu.Unlock()
	if done < settled {
		settle = parts[done]
	}
	if done < len(parts) {
		show = parts[done]
	}
	if tool == "" && show == "" && l.holding() {
		return settle, livePlaceholder // the Stop button needs a message to show on
	}
	if tool == "" {
		return settle, show // a part of the split: it fits
	}
	if show != "" {
		show += "\n\n"
	}
	show += "_" + tool + "_"
	return settle, l.firstPart(show)
}

// currentText is the text of the current part, without the progress line.
func (l *liveTurn) currentText() string {
	l.mu.Lock()
	text, done := liveText(l.text), len(l.parts)
	l.mu.Unlock()
	parts, _ := adapters.LiveParts(text, l.lim)
	if done < len(parts) {
		return parts[done]
	}
	return ""
}

// finishPart finishes the current part's live reply with text, stores it
// as the bot's message, and starts the next part's live reply.
func (l *liveTurn) finishPart(ctx context.Context, text string) error {
	id, err := l.lr.Finish(ctx, text)
	if err != nil {
		return err
	}
	l.mu.Lock()
	n := len(l.parts)
	l.parts = append(l.parts, livePart{text: text, id: id})
	l.shown = false
	l.recorded = "" // the next part's message is recorded anew
	l.mu.Unlock()
	l.savePart(ctx, n, id, text) // a message now: no leftover, a part delivered
	if l.storePart != nil {
		if err := l.storePart(context.WithoutCancel(ctx), partOut(l.out, n), id, text); err != nil {
			l.log.Warn("live reply part not stored; it is stored when the reply is delivered", "jid", l.out.Chat, "err", err)
		}
	}
	next := l.open(ctx, n+1)
	if next == nil {
		return fmt.Errorf("continue live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	}
	l.mu.Lock()
	l.lr = next
	l.mu.Unlock()
	return nil
}

// savePart records part n, finished as message id, in place of the record
// of the message that showed it: a crash from here on leaves it as it is,
// and the reply (resumed, or its turn run again) does not send it again.
func (l *liveTurn) savePart(ctx context.Context, n int, id adapters.MessageID, text string) {
	if l.st == nil {
		return
	}
	err := l.st.SaveLiveShown(context.WithoutCancel(ctx), store.LiveShown{TurnID: l.turn, Part: n, State: store.LivePart,
		Chat: l.out.Chat, Topic: l.out.Topic, ID: id, Mode: adapters.LiveEdit, ReplyTo: l.out.ReplyTo, Text: text})
	if err != nil {
		l.log.Warn("live reply part not recorded; a crash before its reply is delivered may send it again", "jid", l.out.Chat, "err", err)
	}
}

// deliverPart delivers part n (from 0) of the final reply through the live
// reply: a part it finished mid-turn is already delivered (its id); the
// part after them finishes the current live reply. ok is false when the
// part must be sent as a message.
func (l *liveTurn) deliverPart(ctx context.Context, n int, text string) (adapters.MessageID, bool, error) {
	l.mu.Lock()
	parts := l.parts
	l.mu.Unlock()
	switch {
	case n < len(parts):
		return parts[n].id, true, nil
	case n == len(parts):
		return l.finish(ctx, text)
	}
	return "", false, nil
}

// reconcile checks the parts finished mid-turn against the final's parts:
// when the final does not begin with them (the agent's result is not the
// text it streamed), they are removed where the platform can, and the
// final is delivered whole, from its first part. Parts a crashed run
// delivered (prior) are the final's first parts as far as they are its
// own; from the first that differs they stay as they are, and the final
// goes on after them.
func (l *liveTurn) reconcile(ctx context.Context, final []string) {
	l.mu.Lock()
	for n := len(l.parts); n == l.adopted && n < len(l.prior) && n < len(final) && final[n] == l.prior[n].text; n++ {
		l.parts = append(l.parts, l.prior[n])
		l.adopted++
	}
	stale := len(l.prior) > l.adopted
	l.prior = l.prior[:l.adopted]
	parts, adopted := l.parts, l.adopted
	l.mu.Unlock()
	m := 0
	for m < len(parts) && m < len(final) && parts[m].text == final[m] {
		m++
	}
	if m == len(parts) {
		if stale {
			l.dropParts(ctx, len(parts))
		}
		return
	}
	keep := min(m, adopted)
	l.log.Info("the final reply differs from the parts the live reply showed; they are replaced by the final", "jid", l.out.Chat, "parts", len(parts)-adopted, "kept", adopted)
	if d, ok := l.a.(adapters.Deleter); ok {
		for i, p := range parts[adopted:] {
			if err := d.Delete(ctx, adapters.MessageRef{Chat: l.out.Chat, Topic: l.out.Topic, ID: p.id}); err != nil {
				l.log.Warn("live reply part left in the chat", "jid", l.out.Chat, "part", adopted+i+1, "err", err)
			}
		}
	}
	l.mu.Lock()
	l.parts = parts[:keep]
	l.adopted = keep
	l.prior = l.prior[:keep]
	l.mu.Unlock()
	l.dropParts(ctx, keep)
}

// dropParts forgets the recorded parts from part from on: they no longer
// begin the reply.
func (l *liveTurn) dropParts(ctx context.Context, from int) {
	if l.st == nil {
		return
	}
	if err := l.st.DropLiveParts(context.WithoutCancel(ctx), l.turn, from); err != nil {
		l.log.Warn("replaced live reply parts still recorded", "jid", l.out.Chat, "err", err)
	}
}

// matchPrior takes the parts a crashed run of the turn delivered (prior)
// as this run's first parts while the text so far settles the same parts,
// and reports whether the text is still on its way through one of them
// (quiet: the chat shows it already). At the first part that differs the
// match ends: the prior parts from there on stay in the chat as they are,
// and the reply goes on after them.
func (l *liveTurn) matchPrior(parts []string, settled int) (quiet bool) {
	l.mu.Lock()
	from := -1
	for n := len(l.parts); n == l.adopted && n < len(l.prior); n = len(l.parts) {
		p := l.prior[n]
		if n < settled && parts[n] == p.text {
			l.parts = append(l.parts, p)
			l.adopted++
			continue
		}
		if n >= settled && (n >= len(parts) || strings.HasPrefix(p.text, parts[n])) {
			quiet = true
			break
		}
		from, l.prior = n, l.prior[:n]
	}
	l.mu.Unlock()
	if from >= 0 {
		l.log.Info("a run again after a crash differs from the parts the crashed run delivered; they stay and the reply follows them", "jid", l.out.Chat, "kept", from)
		l.dropParts(context.Background(), from)
	}
	return quiet
}

// adopt takes the parts a crashed run delivered in reply to the message
// out answers (leftovers' orphans) as turn's prior parts, recorded as its
// own from now on.
func (s *liveStarter) adopt(ctx context.Context, out adapters.Outbound, turn string) []livePart {
	if s.st == nil || out.ReplyTo == "" {
		return nil
	}
	s.mu.Lock()
	var from string
	var found []store.LiveShown
	rest := s.orphans[:0:0]
	for _, o := range s.orphans {
		if o.Chat == out.Chat && o.Topic == out.Topic && o.ReplyTo == out.ReplyTo && (from == "" || o.TurnID == from) {
			from, found = o.TurnID, append(found, o)
			continue
		}
		rest = append(rest, o)
	}
	s.orphans = rest
	s.mu.Unlock()
	if from == "" {
		return nil
	}
	if err := s.st.AdoptLiveParts(context.WithoutCancel(ctx), from, turn); err != nil {
		s.log.Warn("parts a crashed turn delivered not taken up; the turn run again repeats them", "jid", out.Chat, "err", err)
		return nil
	}
	slices.SortFunc(found, func(a, b store.LiveShown) int { return a.Part - b.Part })
	var prior []livePart
	for _, o := range found {
		if o.Part != len(prior) {
			break
		}
		prior = append(prior, livePart{text: o.Text, id: o.ID})
	}
	return prior
}
