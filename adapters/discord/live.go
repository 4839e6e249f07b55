package discord

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

var _ adapters.Streamer = (*Adapter)(nil)

// StartLive implements adapters.Streamer. Discord has no drafts: the live
// reply is one message, sent at the first update where Send puts it (the
// thread of the topic, as a reply to m.ReplyTo) and edited at the next
// ones, its mentions restricted as Send's; the final is its last edit. It
// does not call Discord; a chat that is not Discord's wraps
// adapters.ErrPermanent.
func (a *Adapter) StartLive(_ context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	if _, err := channelOf(m.Chat, m.Topic); err != nil {
		return nil, err
	}
	return &live{a: a, out: m}, nil
}

// live is one turn's live reply in a Discord channel or thread.
type live struct {
	a   *Adapter
	out adapters.Outbound

	mu       sync.Mutex
	id       adapters.MessageID // the message edited in place, then the final
	shown    string             // the content last shown: an update that renders the same sends nothing
	finished bool
	aborted  bool
}

// Update shows text, with markdown.Partial closing what the cut left open
// (a code fence, a code span, emphasis): by sending the live message, or
// by editing it.
func (l *live) Update(ctx context.Context, text string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.aborted {
		return fmt.Errorf("discord: update live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	}
	src := markdown.Partial(text)
	if utf8.RuneCountInString(src) > maxText {
		src = text // the closers would not fit: show the text as it is
	}
	if strings.TrimSpace(src) == "" {
		return nil
	}
	return l.show(ctx, src)
}

// Finish makes text the live message's last edit, or sends it when
// nothing was shown.
func (l *live) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.aborted:
		return "", fmt.Errorf("discord: finish live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	case l.finished:
		return l.id, nil
	}
	if err := l.show(ctx, text); err != nil {
		return "", err
	}
	l.finished = true
	return l.id, nil
}

// Abort deletes the live message.
func (l *live) Abort(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.aborted {
		return nil
	}
	if l.id != "" {
		if err := l.a.Delete(ctx, l.ref()); err != nil {
			return err
		}
	}
	l.aborted = true
	return nil
}

// show sends content as the live message, or edits the live message to
// it unless it shows content already.
func (l *live) show(ctx context.Context, content string) error {
	switch {
	case l.id == "":
		m := l.out
		m.Text = content
		id, err := l.a.Send(ctx, m)
		if err != nil {
			return err
		}
		l.id = id
	case content == l.shown:
		return nil
	default:
		if err := l.a.Edit(ctx, l.ref(), content); err != nil {
			return err
		}
	}
	l.shown = content
	return nil
}

func (l *live) ref() adapters.MessageRef {
	return adapters.MessageRef{Chat: l.out.Chat, Topic: l.out.Topic, ID: l.id}
}
