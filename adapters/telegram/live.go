package telegram

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

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
// last edit. Every request goes through the adapter's pacing. It does not
// call Telegram; a chat that is not Telegram's wraps adapters.ErrPermanent.
func (a *Adapter) StartLive(_ context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	chat, err := a.chatID(m.Chat)
	if err != nil {
		return nil, err
	}
	l := &live{a: a, out: m}
	if chat > 0 && !a.noDrafts.Load() {
		l.draft = draftID(turn)
	}
	return l, nil
}

// draftID derives a non-zero draft_id from the turn, so that the same turn
// animates the same draft (after a restart too).
func draftID(turn string) int {
	h := fnv.New32a()
	h.Write([]byte(turn))
	return int(h.Sum32()&0x7fffffff) | 1
}

// live is one turn's live reply in a Telegram chat.
type live struct {
	a   *Adapter
	out adapters.Outbound

	mu       sync.Mutex
	draft    int                // the draft_id while the reply is a draft; 0: a message edited in place
	id       adapters.MessageID // the message edited in place, then the final
	shown    string             // the HTML last shown: an update that renders the same sends nothing
	finished bool
	aborted  bool
}

// Update shows text, rendered with markdown.Partial: as the draft, or by
// sending or editing the live message.
func (l *live) Update(ctx context.Context, text string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.aborted {
		return fmt.Errorf("telegram: update live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	}
	src := markdown.Partial(text)
	html := markdown.TelegramHTML(src)
	if strings.TrimSpace(html) == "" || html == l.shown {
		return nil
	}
	if l.draft != 0 {
		refused, err := l.a.sendDraft(ctx, l.out, l.draft, src)
		if !refused {
			if err == nil {
				l.shown = html
			}
			return err
		}
		l.a.log.Warn("telegram refused a message draft; live replies edit a message instead", "jid", l.out.Chat, "err", err)
		l.a.noDrafts.Store(true)
		l.draft = 0
	}
	if l.id == "" {
		m := l.out
		m.Text = src
		id, err := l.a.Send(ctx, m)
		if err != nil {
			return err
		}
		l.id = id
	} else if err := l.a.Edit(ctx, l.ref(), src); err != nil && !notModified(err) {
		return err
	}
	l.shown = html
	return nil
}

// Finish sends text as a new message (after a draft, or when nothing was
// shown), or makes it the live message's last edit.
func (l *live) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.aborted:
		return "", fmt.Errorf("telegram: finish live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	case l.finished:
		return l.id, nil
	case l.id == "":
		m := l.out
		m.Text = text
		id, err := l.a.Send(ctx, m)
		if err != nil {
			return "", err
		}
		l.id = id
	case markdown.TelegramHTML(text) != l.shown:
		if err := l.a.Edit(ctx, l.ref(), text); err != nil && !notModified(err) {
			return "", err
		}
	}
	l.finished = true
	return l.id, nil
}

// Abort deletes the live message. A draft is left: Telegram drops a draft
// that is not refreshed within 30 s, and the final sent another way follows.
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

func (l *live) ref() adapters.MessageRef {
	return adapters.MessageRef{Chat: l.out.Chat, Topic: l.out.Topic, ID: l.id}
}

// sendDraft shows src (Markdown) as draft id in a private chat, as plain
// text if Telegram cannot parse it. refused reports that Telegram refused
// drafts themselves (an unknown method, or a 400 about neither the chat
// nor the text): the caller edits a message instead.
func (a *Adapter) sendDraft(ctx context.Context, m adapters.Outbound, id int, src string) (refused bool, err error) {
	b, chat, err := a.target(m.Chat)
	if err != nil {
		return false, err
	}
	p := &bot.SendMessageDraftParams{ChatID: chat, MessageThreadID: threadID(m.Topic), DraftID: strconv.Itoa(id),
		Text: markdown.TelegramHTML(src), ParseMode: models.ParseModeHTML}
	err = a.call(ctx, m.Chat, chat, func() error {
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

// notModified: Telegram refuses an edit that changes nothing.
func notModified(err error) bool {
	return err != nil && strings.Contains(err.Error(), "message is not modified")
}
