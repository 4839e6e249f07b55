package telegram

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

var _ adapters.Streamer = (*Adapter)(nil)

// StartLive implements adapters.Streamer. In a private chat the live reply
// is a draft (sendMessageDraft, its draft_id derived from turn) and the
// final a new message; in a group, or once Telegram refused a draft, it is
// a message sent at the first update and edited at the next, the final its
// last edit, and that message carries m.Buttons while it runs (an inline
// keyboard; adapters.ButtonCarrier), a draft none. Every request goes through the adapter's pacing; an update
// the pacing would hold (a group's next request is up to 3 s away, or the
// bot's next slot is ahead: Options.Global) is
// refused with adapters.NotDue's RetryAfterError instead, and the caller's
// next one carries its newest text. It does not call Telegram; a chat
// that is not Telegram's wraps adapters.ErrPermanent.
func (a *Adapter) StartLive(_ context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	chat, err := a.chatID(m.Chat)
	if err != nil {
		return nil, err
	}
	if chat < 0 || a.noDrafts.Load() {
		return a.editLive(m, chat), nil
	}
	return &live{a: a, out: m, chat: chat, draft: draftID(turn)}, nil
}

// editLive is a live reply edited in place: a group's, or a private
// chat's once Telegram refused drafts. An edit that changes nothing is no
// error (Adapter.Edit).
func (a *Adapter) editLive(m adapters.Outbound, chat int64) *adapters.EditLive {
	return &adapters.EditLive{Out: m, Send: a.Send, Edit: a.Edit, Delete: a.Delete, Render: markdown.Partial,
		SendButtons: a.SendButtons, EditButtons: a.EditButtons,
		Due: func(bool) time.Duration { return a.pace.due(lane{chat: chat}) }}
}

// draftID derives a non-zero draft_id from the turn, so that the same turn
// animates the same draft (after a restart too).
func draftID(turn string) int {
	h := fnv.New32a()
	h.Write([]byte(turn))
	return int(h.Sum32()&0x7fffffff) | 1
}

// live is one turn's live reply in a private chat: a draft, and the final
// a new message. When Telegram refuses the draft it becomes an editLive.
type live struct {
	a     *Adapter
	out   adapters.Outbound
	chat  int64
	draft int // the draft_id

	mu       sync.Mutex
	edit     *adapters.EditLive // set once drafts were refused: it does the rest
	shown    string             // the HTML last shown: an update that renders the same sends nothing
	id       adapters.MessageID // the final's
	finished bool
	aborted  bool
}

// Update shows text, rendered with markdown.Partial, as the draft.
func (l *live) Update(ctx context.Context, text string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.edit != nil {
		return l.edit.Update(ctx, text)
	}
	if l.finished || l.aborted {
		return fmt.Errorf("telegram: update live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	}
	src := markdown.Partial(text)
	html := markdown.TelegramHTML(src)
	if strings.TrimSpace(html) == "" || html == l.shown {
		return nil
	}
	if err := adapters.NotDue(l.a.pace.due(lane{chat: l.chat, draft: true})); err != nil {
		return err
	}
	refused, err := l.a.sendDraft(ctx, l.out, l.draft, src, html)
	if !refused {
		if err == nil {
			l.shown = html
		}
		return err
	}
	l.a.log.Warn("telegram refused a message draft; live replies edit a message instead", "jid", l.out.Chat, "err", err)
	l.a.noDrafts.Store(true)
	l.edit = l.a.editLive(l.out, l.chat)
	return l.edit.Update(ctx, text)
}

// Finish sends text as a new message: the draft goes when it comes.
func (l *live) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.edit != nil:
		return l.edit.Finish(ctx, text)
	case l.aborted:
		return "", fmt.Errorf("telegram: finish live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	case l.finished:
		return l.id, nil
	}
	m := l.out
	m.Text = text
	id, err := l.a.Send(ctx, m)
	if err != nil {
		return "", err
	}
	l.id, l.finished = id, true
	return id, nil
}

// Abort leaves the draft: Telegram drops a draft that is not refreshed
// within 30 s, and the final sent another way follows.
func (l *live) Abort(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.edit != nil {
		return l.edit.Abort(ctx)
	}
	if !l.finished {
		l.aborted = true
	}
	return nil
}

// sendDraft shows src (Markdown, rendered as html) as draft id in a private chat, as plain
// text if Telegram cannot parse it. refused reports that Telegram refused
// drafts themselves (an unknown method, or a 400 about neither the chat
// nor the text): the caller edits a message instead.
func (a *Adapter) sendDraft(ctx context.Context, m adapters.Outbound, id int, src, html string) (refused bool, err error) {
	b, chat, err := a.target(m.Chat)
	if err != nil {
		return false, err
	}
	p := &bot.SendMessageDraftParams{ChatID: chat, MessageThreadID: threadID(m.Topic), DraftID: strconv.Itoa(id),
		Text: html, ParseMode: models.ParseModeHTML}
	err = a.callIn(ctx, m.Chat, lane{chat: chat, draft: true}, func() error {
		_, err := b.SendMessageDraft(ctx, p)
		if isParseError(err) {
			p.Text, p.ParseMode = markdown.Plain(src), ""
			_, err = b.SendMessageDraft(ctx, p)
		}
		refused = draftRefused(err)
		return err
	})
	return refused, err
}

func draftRefused(err error) bool {
	if errors.Is(err, bot.ErrorNotFound) {
		return true
	}
	if !errors.Is(err, bot.ErrorBadRequest) || isParseError(err) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return !strings.Contains(msg, "chat not found") && !strings.Contains(msg, "too long")
}

// CarriesButtons implements adapters.ButtonCarrier: a draft carries no
// buttons; the message edited in place once drafts were refused does.
func (l *live) CarriesButtons() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.edit != nil && l.edit.CarriesButtons()
}

// Shown implements adapters.LiveShown: a draft (it vanishes by itself),
// or the message edited in place once drafts were refused.
func (l *live) Shown() (adapters.MessageRef, adapters.LiveMode, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.edit != nil {
		return l.edit.Shown()
	}
	return adapters.MessageRef{Chat: l.out.Chat, Topic: l.out.Topic, ID: adapters.MessageID(strconv.Itoa(l.draft))},
		adapters.LiveDraft, l.shown != "" && !l.finished && !l.aborted
}
