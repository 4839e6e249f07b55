package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

// Send posts one part: Markdown rendered to Telegram HTML, sent again as
// plain text if Telegram cannot parse it; into the forum topic, replying to
// ReplyTo when given.
func (a *Adapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	return a.send(ctx, m, nil)
}

// send is Send with a reply markup (nil: none), for Send and SendButtons.
func (a *Adapter) send(ctx context.Context, m adapters.Outbound, markup models.ReplyMarkup) (adapters.MessageID, error) {
	b, chat, err := a.target(m.Chat)
	if err == nil {
		err = checkTopic(m.Chat, m.Topic)
	}
	if err != nil {
		return "", err
	}
	text, mode := rendered(m.Text)
	p := &bot.SendMessageParams{ChatID: chat, Text: text, ParseMode: mode,
		MessageThreadID: threadID(m.Topic), ReplyParameters: a.replyTo(chat, m.ReplyTo), ReplyMarkup: markup}
	var sent *models.Message
	err = a.call(ctx, m.Chat, chat, func() (err error) {
		sent, err = b.SendMessage(ctx, p)
		if isParseError(err) {
			a.log.Warn("telegram refused the formatting; sending plain text", "jid", m.Chat, "err", err)
			p.Text, p.ParseMode = markdown.Plain(m.Text), ""
			sent, err = b.SendMessage(ctx, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return a.msgID(chat, sent.ID), nil
}

// Edit replaces the text of one of the bot's messages.
func (a *Adapter) Edit(ctx context.Context, ref adapters.MessageRef, text string) error {
	return a.edit(ctx, ref, text, nil)
}

// edit is Edit with a reply markup (nil: none), for
// Edit and EditButtons.
func (a *Adapter) edit(ctx context.Context, ref adapters.MessageRef, text string, markup models.ReplyMarkup) error {
	b, chat, id, err := a.ref(ref)
	if err != nil {
		return err
	}
	html, mode := rendered(text)
	p := &bot.EditMessageTextParams{ChatID: chat, MessageID: id, Text: html, ParseMode: mode, ReplyMarkup: markup}
	return a.call(ctx, ref.Chat, chat, func() error {
		_, err := b.EditMessageText(ctx, p)
		if isParseError(err) {
			p.Text, p.ParseMode = markdown.Plain(text), ""
			_, err = b.EditMessageText(ctx, p)
		}
		if notModified(err) {
			return nil // the message shows text already
		}
		return err
	})
}

// rendered is src as Telegram HTML, or, when that shows nothing (markup
// alone: "#", an empty code block), as plain text, or as src itself:
// Telegram refuses an empty message for good.
func rendered(src string) (string, models.ParseMode) {
	if html := markdown.TelegramHTML(src); strings.TrimSpace(markdown.HTMLText(html)) != "" {
		return html, models.ParseModeHTML
	}
	if plain := markdown.Plain(src); strings.TrimSpace(plain) != "" {
		return plain, ""
	}
	return src, ""
}

// notModified: Telegram refuses an edit that changes nothing (two
// Markdown texts can render alike).
func notModified(err error) bool {
	return err != nil && strings.Contains(err.Error(), "message is not modified")
}

// Delete deletes a message (the bot's own, or any in a group where it is admin).
func (a *Adapter) Delete(ctx context.Context, ref adapters.MessageRef) error {
	b, chat, id, err := a.ref(ref)
	if err != nil {
		return err
	}
	return a.call(ctx, ref.Chat, chat, func() error {
		_, err := b.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: chat, MessageID: id})
		return err
	})
}

// Reactions is the set of emoji a bot may react with.
var Reactions = []string{"👍", "👎", "❤", "🔥", "🥰", "👏", "😁", "🤔", "🤯", "😱", "🤬", "😢", "🎉", "🤩", "🤮", "💩", "🙏",
	"👌", "🕊", "🤡", "🥱", "🥴", "😍", "🐳", "❤‍🔥", "🌚", "🌭", "💯", "🤣", "⚡", "🍌", "🏆", "💔", "🤨", "😐", "🍓", "🍾",
	"💋", "🖕", "😈", "😴", "😭", "🤓", "👻", "👨‍💻", "👀", "🎃", "🙈", "😇", "😨", "🤝", "✍", "🤗", "🫡", "🎅", "🎄", "☃",
	"💅", "🤪", "🗿", "🆒", "💘", "🙉", "🦄", "😘", "💊", "🙊", "😎", "👾", "🤷‍♂", "🤷", "🤷‍♀", "😡"}

// React sets the bot's reaction on a message, an emoji or its shortcode
// (adapters.EmojiByName); only Telegram's set is allowed.
func (a *Adapter) React(ctx context.Context, ref adapters.MessageRef, reaction string) error {
	emoji := strings.ReplaceAll(reaction, "\ufe0f", "") // ❤️ is ❤ to Telegram
	if e, ok := adapters.EmojiByName(reaction); ok && !slices.Contains(Reactions, emoji) {
		emoji = strings.ReplaceAll(e, "\ufe0f", "") // a shortcode: ":thumbsup:", "fire"
	}
	if !slices.Contains(Reactions, emoji) {
		return fmt.Errorf("telegram: %q is not a reaction Telegram allows; use one of %s: %w", reaction, strings.Join(Reactions, " "), adapters.ErrPermanent)
	}
	b, chat, id, err := a.ref(ref)
	if err != nil {
		return err
	}
	return a.call(ctx, ref.Chat, chat, func() error {
		_, err := b.SetMessageReaction(ctx, &bot.SetMessageReactionParams{ChatID: chat, MessageID: id, Reaction: []models.ReactionType{
			{Type: models.ReactionTypeTypeEmoji, ReactionTypeEmoji: &models.ReactionTypeEmoji{Type: models.ReactionTypeTypeEmoji, Emoji: emoji}}}})
		return err
	})
}

// Pin pins a message (the bot must be allowed to pin in groups).
func (a *Adapter) Pin(ctx context.Context, ref adapters.MessageRef) error {
	b, chat, id, err := a.ref(ref)
	if err != nil {
		return err
	}
	return a.call(ctx, ref.Chat, chat, func() error {
		_, err := b.PinChatMessage(ctx, &bot.PinChatMessageParams{ChatID: chat, MessageID: id, DisableNotification: true})
		return err
	})
}

// Unpin unpins a message.
func (a *Adapter) Unpin(ctx context.Context, ref adapters.MessageRef) error {
	b, chat, id, err := a.ref(ref)
	if err != nil {
		return err
	}
	return a.call(ctx, ref.Chat, chat, func() error {
		_, err := b.UnpinChatMessage(ctx, &bot.UnpinChatMessageParams{ChatID: chat, MessageID: id})
		return err
	})
}

// maxCaption is the longest caption Telegram takes, as measure counts it.
const maxCaption = 1024

// SendFile uploads an image as a photo (as a document when Telegram will
// not take it as one) and anything else as a document, with m.Text as its
// caption: rendered like Send, sent again as plain text when Telegram
// cannot parse it (the file is read again from the start, which the
// gateway's open file allows). A caption longer than Telegram
// takes follows the file as messages of its own, so that neither is lost.
func (a *Adapter) SendFile(ctx context.Context, m adapters.Outbound, f adapters.File) (adapters.MessageID, error) {
	b, chat, err := a.target(m.Chat)
	if err == nil {
		err = checkTopic(m.Chat, m.Topic)
	}
	if err != nil {
		return "", err
	}
	caption, follow := m.Text, ""
	if measure(caption) > maxCaption {
		caption, follow = "", m.Text
	}
	var sent *models.Message
	photo := isPhoto(f.MIME)
	err = a.call(ctx, m.Chat, chat, func() (err error) {
		sent, err = a.upload(ctx, b, chat, m, f, photo, markdown.TelegramHTML(caption), models.ParseModeHTML)
		if photo && photoRefused(err) && rewind(f) {
			a.log.Info("telegram refused the image as a photo; sending it as a document", "jid", m.Chat, "err", err)
			photo = false
			sent, err = a.upload(ctx, b, chat, m, f, photo, markdown.TelegramHTML(caption), models.ParseModeHTML)
		}
		if isParseError(err) && rewind(f) {
			a.log.Warn("telegram refused the caption's formatting; sending it as plain text", "jid", m.Chat, "err", err)
			sent, err = a.upload(ctx, b, chat, m, f, photo, markdown.Plain(caption), "")
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if follow != "" {
		for _, part := range adapters.SplitRendered(follow, a.Limits().MaxText, measure) {
			// The file is sent: a failure here must not send it again.
			if _, err := a.Send(ctx, adapters.Outbound{Chat: m.Chat, Topic: m.Topic, Text: part}); err != nil {
				a.log.Warn("telegram file sent, but its long caption could not follow", "jid", m.Chat, "err", err)
				break
			}
		}
	}
	return a.msgID(chat, sent.ID), nil
}

// isPhoto: an image Telegram shows as a photo (anything else, a GIF too,
// goes as a document).
func isPhoto(mime string) bool {
	switch mime {
	case "image/jpeg", "image/png", "image/webp":
		return true
	}
	return false
}

// photoRefused: Telegram will not take the image as a photo (too tall or
// wide, over the photo size limit, not decodable), but takes it as a
// document.
func photoRefused(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "PHOTO_") || strings.Contains(msg, "IMAGE_PROCESS_FAILED") ||
		strings.Contains(strings.ToLower(msg), "too big") || strings.Contains(strings.ToLower(msg), "too large")
}

// rewind puts f's reader back at its start for another upload: false when
// it cannot (the gateway hands the adapter an open file, which can).
func rewind(f adapters.File) bool {
	s, ok := f.Content.(io.Seeker)
	if !ok {
		return false
	}
	_, err := s.Seek(0, io.SeekStart)
	return err == nil
}

// upload sends f (from where its reader stands), as a photo or a document,
// with caption in parseMode.
func (a *Adapter) upload(ctx context.Context, b *bot.Bot, chat int64, m adapters.Outbound, f adapters.File, photo bool, caption string, parseMode models.ParseMode) (*models.Message, error) {
	upload := &models.InputFileUpload{Filename: f.Name, Data: f.Content}
	if photo {
		return b.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chat, Photo: upload, Caption: caption, ParseMode: parseMode,
			MessageThreadID: threadID(m.Topic), ReplyParameters: a.replyTo(chat, m.ReplyTo)})
	}
	return b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chat, Document: upload, Caption: caption, ParseMode: parseMode,
		MessageThreadID: threadID(m.Topic), ReplyParameters: a.replyTo(chat, m.ReplyTo)})
}

// Typing shows "typing…" in the chat (and forum topic) for five seconds.
// While a 429 holds the bot it sends nothing (the indicator is best
// effort: the next one after the hold shows it), and a 429 of its own
// holds the bot as a send's does.
func (a *Adapter) Typing(ctx context.Context, chat adapters.JID, topic string) error {
	b, id, err := a.target(chat)
	if err != nil {
		return err
	}
	if a.pace.held.Left() > 0 {
		return nil
	}
	_, err = b.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: id, MessageThreadID: threadID(topic), Action: models.ChatActionTyping})
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		return &adapters.RetryAfterError{Wait: a.pace.held.Set(time.Duration(tooMany.RetryAfter) * time.Second)}
	}
	return err
}

func (a *Adapter) target(chat adapters.JID) (*bot.Bot, int64, error) {
	b, err := a.client()
	if err != nil {
		return nil, 0, err
	}
	id, err := a.chatID(chat)
	return b, id, err
}

func (a *Adapter) ref(ref adapters.MessageRef) (*bot.Bot, int64, int, error) {
	b, chat, err := a.target(ref.Chat)
	if err != nil {
		return nil, 0, 0, err
	}
	id, ok, migrated := a.parseMsgID(chat, ref.ID)
	if !ok && migrated && !strings.HasPrefix(string(ref.ID), "s") {
		return nil, 0, 0, fmt.Errorf("telegram: message %s of %s was written before the group became a supergroup; Telegram no longer reaches it: %w", ref.ID, ref.Chat, adapters.ErrPermanent)
	}
	if !ok {
		return nil, 0, 0, fmt.Errorf("telegram: message id %q is not a number as Telegram writes it: %w", ref.ID, adapters.ErrPermanent)
	}
	return b, chat, id, nil
}

// call paces a request to chat, runs it (following one group-to-supergroup
// migration) and maps Telegram's errors to the adapters' ones.
func (a *Adapter) call(ctx context.Context, jid adapters.JID, chat int64, fn func() error) error {
	return a.callIn(ctx, jid, lane{chat: chat}, fn)
}

// callIn is call paced in lane l (a chat's drafts have their own).
func (a *Adapter) callIn(ctx context.Context, jid adapters.JID, l lane, fn func() error) error {
	chat := l.chat
	if err := a.pace.wait(ctx, l); err != nil {
		return err
	}
	err := fn()
	var tooMany *bot.TooManyRequestsError
	if errors.As(err, &tooMany) {
		// The whole bot waits, and so does the gateway: for no longer
		// than adapters.MaxRetryAfter, whatever retry_after said.
		return &adapters.RetryAfterError{Wait: a.pace.held.Set(time.Duration(tooMany.RetryAfter) * time.Second)}
	}
	var mig *bot.MigrateError
	if errors.As(err, &mig) && mig.MigrateToChatID != 0 {
		a.mu.Lock()
		host := a.host
		a.mu.Unlock()
		if host != nil {
			a.migrate(ctx, host, chat, int64(mig.MigrateToChatID))
		}
		return fmt.Errorf("telegram: %s became a supergroup; retrying there", jid)
	}
	return classify(jid, err)
}

// checkTopic refuses a topic that is not a forum topic's id as Telegram
// writes it (a positive integer, no sign or leading zero): threadID would
// read "09" or "+9" as topic 9 and anything else as General, reaching a
// topic other than the one the gateway authorized the call for.
func checkTopic(chat adapters.JID, topic string) error {
	if topic == "" {
		return nil
	}
	if n, err := strconv.Atoi(topic); err != nil || n <= 0 || strconv.Itoa(n) != topic {
		return fmt.Errorf("telegram: topic %q of %s is not a forum topic's id (a positive integer): %w", topic, chat, adapters.ErrPermanent)
	}
	return nil
}

func threadID(topic string) int {
	n, _ := strconv.Atoi(topic)
	return n
}

// replyTo quotes message id of chat; nil when id is none, or one Telegram
// cannot reach there (the group's, from before it became a supergroup).
func (a *Adapter) replyTo(chat int64, id adapters.MessageID) *models.ReplyParameters {
	n, ok, _ := a.parseMsgID(chat, id)
	if !ok || n <= 0 {
		return nil
	}
	return &models.ReplyParameters{MessageID: n, AllowSendingWithoutReply: true}
}
