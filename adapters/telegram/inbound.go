package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"

	"switchboard/adapters"
)

// handle stores one update (retrying while the store refuses, so that the
// gate does not confirm it to Telegram) and marks it handled.
//
// It runs on the SDK's worker goroutine, where a panic would end the
// process: one is logged, the update is skipped (its offset is stored, so
// a restart does not replay it), and the rest of the batch goes on.
func (a *Adapter) handle(ctx context.Context, host adapters.Host, g *gate, u *models.Update) {
	defer g.handled()
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("telegram update handling panicked; skipped", "update", u.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			a.saveOffset(ctx, host, u.ID)
		}
	}()
	events := a.normalize(ctx, host, u)
	for _, ev := range events {
		if !a.deliver(ctx, host, ev) {
			return // shutting down: the update stays unconfirmed and comes again
		}
	}
	a.saveOffset(ctx, host, u.ID)
}

// saveOffset persists id as the last stored update.
func (a *Adapter) saveOffset(ctx context.Context, host adapters.Host, id int64) {
	if err := host.SetValue(ctx, "offset", strconv.FormatInt(id, 10), 0); err != nil && ctx.Err() == nil {
		a.log.Error("persist telegram update offset", "update", id, "err", err)
	}
}

// deliver hands ev to the gateway until it is stored; false when ctx ended.
func (a *Adapter) deliver(ctx context.Context, host adapters.Host, ev adapters.Inbound) bool {
	return adapters.DeliverUntilStored(ctx, host, ev, func(err error, wait time.Duration) {
		if wait == 0 {
			a.log.Warn("telegram update refused as invalid; skipped", "jid", ev.Chat, "msg_id", ev.ID, "err", err)
			return
		}
		a.log.Warn("telegram update not stored; retrying", "jid", ev.Chat, "msg_id", ev.ID, "wait", wait, "err", err)
	})
}

// normalize turns an update into the events it carries (none for updates
// the gateway has no use for).
func (a *Adapter) normalize(ctx context.Context, host adapters.Host, u *models.Update) []adapters.Inbound {
	switch {
	case u.Message != nil:
		return a.message(ctx, host, u.Message, adapters.KindMessage)
	case u.ChannelPost != nil:
		return a.message(ctx, host, u.ChannelPost, adapters.KindMessage)
	case u.EditedMessage != nil:
		return a.message(ctx, host, u.EditedMessage, adapters.KindEdit)
	case u.EditedChannelPost != nil:
		return a.message(ctx, host, u.EditedChannelPost, adapters.KindEdit)
	case u.MessageReaction != nil:
		return a.reactions(u.MessageReaction)
	case u.CallbackQuery != nil:
		a.callback(ctx, host, u.CallbackQuery) // a press: answered, never stored
	}
	return nil
}

// chatJID is the JID of a chat; a supergroup that a group became keeps the
// group's JID, so its history and routes carry on.
func (a *Adapter) chatJID(c models.Chat) adapters.JID {
	if c.Type == models.ChatTypePrivate {
		return userJID(c.ID)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.alias[c.ID]; ok {
		return groupJID(old)
	}
	return groupJID(c.ID)
}

func (a *Adapter) message(ctx context.Context, host adapters.Host, m *models.Message, kind adapters.Kind) []adapters.Inbound {
	switch {
	case m.MigrateToChatID != 0: // in the group
		a.migrate(ctx, host, m.Chat.ID, m.MigrateToChatID)
		return nil
	case m.MigrateFromChatID != 0: // in the supergroup, maybe first
		a.migrate(ctx, host, m.MigrateFromChatID, m.Chat.ID)
		return nil
	}
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	atts, note := attachments(m)
	if note != "" {
		text = strings.TrimSpace(text + " " + note)
	}
	if text == "" && len(atts) == 0 {
		return nil // service messages: members joined, title changed, pins
	}
	ev := adapters.Inbound{
		Kind: kind, Chat: a.chatJID(m.Chat), ChatName: chatName(m.Chat), ID: a.msgID(m.Chat.ID, m.ID),
		Text: withLinks(text, entities), Time: time.Unix(int64(m.Date), 0), Attachments: atts, Verb: adapters.VerbMessage,
	}
	switch {
	case m.SenderChat != nil:
		// A channel post, or a person writing as a chat: an anonymous
		// admin or a member sending as a channel, whose from is one of
		// Telegram's placeholder bots (GroupAnonymousBot, Channel_Bot).
		ev.Sender, ev.SenderName = groupJID(m.SenderChat.ID), chatName(*m.SenderChat)
	case m.From != nil:
		ev.Sender, ev.SenderName = userJID(m.From.ID), userName(m.From)
		ev.FromBot = m.From.ID == a.selfID.Load()
		ev.OtherBot = m.From.IsBot && !ev.FromBot
	}
	if forumTopic(m) {
		ev.Topic = strconv.Itoa(m.MessageThreadID)
	}
	if r := m.ReplyToMessage; r != nil && !topicRoot(m, r) {
		ev.ReplyTo = a.msgID(m.Chat.ID, r.ID)
	}
	if a.addressed(m, text, entities) {
		ev.Verb = adapters.VerbMention
	}
	ev.ToOtherBot = a.commandToOtherBot(text, entities)
	if o := m.ForwardOrigin; o != nil && !m.IsAutomaticForward {
		ev.Text = strings.TrimSpace(forwardedFrom(o) + " " + ev.Text) // a photo without a caption: the note alone
	}
	return []adapters.Inbound{ev}
}

// withLinks writes the URL of each word a person linked (a text_link,
// whose URL is not in the text) after it: "the docs (https://…)". Entity
// offsets count UTF-16 units; a link whose text is its URL is left alone.
func withLinks(text string, entities []models.MessageEntity) string {
	if !slices.ContainsFunc(entities, func(e models.MessageEntity) bool { return e.Type == models.MessageEntityTypeTextLink }) {
		return text // most messages: no text_link, nothing to encode
	}
	units := utf16.Encode([]rune(text))
	type insert struct {
		at  int
		url string
	}
	var adds []insert
	for _, e := range entities {
		if e.Type != models.MessageEntityTypeTextLink || e.URL == "" || e.Offset < 0 || e.Length <= 0 || e.Offset+e.Length > len(units) {
			continue
		}
		if string(utf16.Decode(units[e.Offset:e.Offset+e.Length])) == e.URL {
			continue
		}
		adds = append(adds, insert{e.Offset + e.Length, e.URL})
	}
	if len(adds) == 0 {
		return text
	}
	slices.SortStableFunc(adds, func(x, y insert) int { return x.at - y.at })
	var b strings.Builder
	prev := 0
	for _, ad := range adds {
		b.WriteString(string(utf16.Decode(units[prev:ad.at])))
		b.WriteString(" (" + ad.url + ")")
		prev = ad.at
	}
	b.WriteString(string(utf16.Decode(units[prev:])))
	return b.String()
}

// forwardedFrom is what a forwarded message starts with: "[forwarded
// from <whose it was>]", so that the agent does not take another's words
// (or a forwarded "/stop") for the sender's own. A channel's post that
// Telegram mirrors into its discussion group (is_automatic_forward) is
// the channel speaking, not a forward.
func forwardedFrom(o *models.MessageOrigin) string {
	name := ""
	switch {
	case o.MessageOriginUser != nil:
		name = userName(&o.MessageOriginUser.SenderUser)
	case o.MessageOriginHiddenUser != nil:
		name = o.MessageOriginHiddenUser.SenderUserName
	case o.MessageOriginChat != nil:
		name = chatName(o.MessageOriginChat.SenderChat)
	case o.MessageOriginChannel != nil:
		name = chatName(o.MessageOriginChannel.Chat)
	}
	if name = strings.TrimSpace(name); name == "" {
		return "[forwarded]"
	}
	return "[forwarded from " + name + "]"
}

// forumTopic: m was written in a forum topic. A reply in a supergroup
// without topics, or in a forum's General topic, also carries a
// message_thread_id (its reply thread's root), but no is_topic_message.
func forumTopic(m *models.Message) bool {
	return m.Chat.IsForum && m.IsTopicMessage && m.MessageThreadID != 0
}

// topicRoot: r, which m replies to, is only its forum topic's first message
// (Telegram makes every message in a topic a reply to it), not a reply the
// user chose. In a reply thread the root is the message the user answered.
func topicRoot(m, r *models.Message) bool {
	return forumTopic(m) && r.ID == m.MessageThreadID
}

// addressed: a private chat, a mention of the bot (@name, a text mention,
// /command@name) or a reply to one of its messages.
func (a *Adapter) addressed(m *models.Message, text string, entities []models.MessageEntity) bool {
	if m.Chat.Type == models.ChatTypePrivate {
		return true
	}
	self := a.selfID.Load()
	if r := m.ReplyToMessage; r != nil && r.From != nil && r.From.ID == self && !topicRoot(m, r) {
		return true
	}
	name, _ := a.username.Load().(string)
	if len(entities) == 0 {
		return false
	}
	units := utf16.Encode([]rune(text))
	for _, e := range entities {
		if e.Offset < 0 || e.Length < 0 || e.Offset+e.Length > len(units) {
			continue
		}
		part := strings.ToLower(string(utf16.Decode(units[e.Offset : e.Offset+e.Length])))
		switch e.Type {
		case models.MessageEntityTypeMention:
			if name != "" && part == "@"+name {
				return true
			}
		case models.MessageEntityTypeBotCommand:
			if name != "" && strings.HasSuffix(part, "@"+name) {
				return true
			}
		case models.MessageEntityTypeTextMention:
			if e.User != nil && e.User.ID == self {
				return true
			}
		}
	}
	return false
}

// commandToOtherBot: the message starts with a command addressed to
// another bot, "/stop@other_bot" (a group's members may talk to several
// bots; whatever else makes the message addressed to this one, such as a
// reply to its message, the command is the other bot's).
func (a *Adapter) commandToOtherBot(text string, entities []models.MessageEntity) bool {
	name, _ := a.username.Load().(string)
	if name == "" || len(entities) == 0 {
		return false
	}
	units := utf16.Encode([]rune(text))
	for _, e := range entities {
		if e.Type != models.MessageEntityTypeBotCommand || e.Offset != 0 || e.Length < 0 || e.Length > len(units) {
			continue
		}
		_, to, ok := strings.Cut(string(utf16.Decode(units[:e.Length])), "@")
		return ok && !strings.EqualFold(to, name)
	}
	return false
}

// attachments lists the files of a message with their file ids as opaque
// references; a sticker, a place, a contact, a poll or a die becomes text.
func attachments(m *models.Message) (atts []adapters.Attachment, note string) {
	switch {
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1] // the largest size
		atts = append(atts, adapters.Attachment{Name: "photo-" + strconv.Itoa(m.ID) + ".jpg", MIME: "image/jpeg", Size: int64(p.FileSize), Ref: p.FileID})
	case m.Document != nil:
		atts = append(atts, adapters.Attachment{Name: orDefault(m.Document.FileName, "document"), MIME: m.Document.MimeType, Size: m.Document.FileSize, Ref: m.Document.FileID})
	case m.Voice != nil:
		atts = append(atts, adapters.Attachment{Name: "voice-" + strconv.Itoa(m.ID) + ".ogg", MIME: orDefault(m.Voice.MimeType, "audio/ogg"), Size: m.Voice.FileSize, Ref: m.Voice.FileID})
	case m.Audio != nil:
		atts = append(atts, adapters.Attachment{Name: orDefault(m.Audio.FileName, "audio"), MIME: m.Audio.MimeType, Size: m.Audio.FileSize, Ref: m.Audio.FileID})
	case m.Video != nil:
		atts = append(atts, adapters.Attachment{Name: orDefault(m.Video.FileName, "video-"+strconv.Itoa(m.ID)+".mp4"), MIME: m.Video.MimeType, Size: m.Video.FileSize, Ref: m.Video.FileID})
	case m.VideoNote != nil: // a round video message
		atts = append(atts, adapters.Attachment{Name: "video-note-" + strconv.Itoa(m.ID) + ".mp4", MIME: "video/mp4", Size: int64(m.VideoNote.FileSize), Ref: m.VideoNote.FileID})
	case m.Sticker != nil:
		note = "[sticker " + m.Sticker.Emoji + "]"
	default:
		note = shared(m)
	}
	return atts, note
}

// shared is the text of what a message shares without text or a file (a
// place, a contact, a poll, a die), so that it reaches the agent rather
// than being dropped as a service message; "" for anything else.
func shared(m *models.Message) string {
	switch {
	case m.Venue != nil: // also carries its location
		v := m.Venue
		return fmt.Sprintf("[venue %s, %s (%.6f, %.6f)]", v.Title, v.Address, v.Location.Latitude, v.Location.Longitude)
	case m.Location != nil:
		return fmt.Sprintf("[location %.6f, %.6f]", m.Location.Latitude, m.Location.Longitude)
	case m.Contact != nil:
		c := m.Contact
		return "[contact " + strings.TrimSpace(strings.TrimSpace(c.FirstName+" "+c.LastName)+" "+c.PhoneNumber) + "]"
	case m.Poll != nil:
		return "[poll " + m.Poll.Question + "]"
	case m.Dice != nil:
		return fmt.Sprintf("[dice %s %d]", m.Dice.Emoji, m.Dice.Value)
	}
	return ""
}

// reactions turns a reaction change into added and removed reactions.
func (a *Adapter) reactions(r *models.MessageReactionUpdated) []adapters.Inbound {
	if r.User == nil {
		return nil // anonymous reactions carry no sender
	}
	old, cur := emojis(r.OldReaction), emojis(r.NewReaction)
	base := adapters.Inbound{Kind: adapters.KindReaction, Chat: a.chatJID(r.Chat), ID: a.msgID(r.Chat.ID, r.MessageID),
		Sender: userJID(r.User.ID), SenderName: userName(r.User), Time: time.Unix(int64(r.Date), 0)}
	var out []adapters.Inbound
	for e := range cur {
		if !old[e] {
			ev := base
			ev.Reaction = e
			out = append(out, ev)
		}
	}
	for e := range old {
		if !cur[e] {
			ev := base
			ev.Reaction, ev.ReactionRemoved = e, true
			out = append(out, ev)
		}
	}
	return out
}

func emojis(rs []models.ReactionType) map[string]bool {
	out := map[string]bool{}
	for _, r := range rs {
		if r.ReactionTypeEmoji != nil {
			out[r.ReactionTypeEmoji.Emoji] = true
		}
	}
	return out
}

// migrate records that group from became supergroup to: its messages keep
// the group's JID (so routes and history carry on) and sends follow it.
func (a *Adapter) migrate(ctx context.Context, host adapters.Host, from, to int64) {
	a.mu.Lock()
	if old, ok := a.alias[from]; ok {
		from = old // migrated twice: keep the first JID
	}
	if a.moved[from] == to {
		a.mu.Unlock()
		return // told by both chats
	}
	a.moved[from], a.alias[to] = to, from
	b, err := json.Marshal(a.moved)
	a.mu.Unlock()
	if err == nil {
		err = host.SetValue(ctx, "migrations", string(b), 0)
	}
	if err != nil {
		a.log.Error("persist telegram group migration", "err", err)
	}
	a.log.Warn("telegram group became a supergroup; its messages keep the old JID, so routes still match",
		"jid", groupJID(from), "new_chat_id", to, "new_jid_if_routed_afresh", groupJID(to))
}

func userName(u *models.User) string {
	name := strings.TrimSpace(u.FirstName + " " + u.LastName)
	if name == "" {
		name = u.Username
	}
	return name
}

func chatName(c models.Chat) string {
	if c.Title != "" {
		return c.Title
	}
	return strings.TrimSpace(c.FirstName + " " + c.LastName)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
