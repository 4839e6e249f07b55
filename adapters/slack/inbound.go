package slack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"switchboard/adapters"
)

// handle delivers one Events API event (from either mode). It returns nil
// when the event was stored or is not one the gateway keeps, so that the
// caller acknowledges it; an error wrapping adapters.ErrBadMessage is garbage
// (acknowledged too); any other error leaves it unacknowledged for Slack to
// redeliver.
func (a *Adapter) handle(ctx context.Context, host adapters.Host, ev slackevents.EventsAPIEvent) error {
	team := ev.TeamID
	if team == "" {
		team, _, _ = a.identity()
	}
	var in []adapters.Inbound
	switch e := ev.InnerEvent.Data.(type) {
	case *slackevents.MessageEvent:
		m, ok := a.fromMessageEvent(ctx, team, e)
		if ok {
			in = append(in, m)
		}
	case *slackevents.AppMentionEvent:
		if e.Edited != nil {
			return nil // the message_changed event carries the edit
		}
		msg := slack.Msg{Channel: e.Channel, User: e.User, Text: e.Text, Timestamp: e.TimeStamp,
			ThreadTimestamp: e.ThreadTimeStamp, BotID: e.BotID, Files: e.Files}
		m := a.fromMsg(ctx, team, e.Channel, "", msg)
		m.Verb = adapters.VerbMention
		in = append(in, m)
	case *slackevents.ReactionAddedEvent:
		if e.Item.Type == "message" && e.Item.Channel != "" {
			in = append(in, a.reaction(ctx, team, slackevents.ReactionRemovedEvent(*e), false))
		}
	case *slackevents.ReactionRemovedEvent:
		if e.Item.Type == "message" && e.Item.Channel != "" {
			in = append(in, a.reaction(ctx, team, *e, true))
		}
	default:
		return nil
	}
	for _, m := range in {
		if _, err := host.Deliver(ctx, m); err != nil {
			return fmt.Errorf("deliver %s/%s: %w", m.Chat, m.ID, err)
		}
	}
	return nil
}

func (a *Adapter) reaction(ctx context.Context, team string, e slackevents.ReactionRemovedEvent, removed bool) adapters.Inbound {
	chat := a.chat(ctx, team, e.Item.Channel, "")
	return adapters.Inbound{Kind: adapters.KindReaction, Chat: chat, ID: adapters.MessageID(e.Item.Timestamp),
		Sender: userJID(team, e.User), SenderName: a.userName(ctx, e.User), Time: tsTime(e.EventTimestamp),
		Reaction: e.Reaction, ReactionRemoved: removed}
}

// fromMessageEvent converts a message event; ok is false for subtypes the
// gateway does not keep (joins, topic changes, unfurl-only edits).
func (a *Adapter) fromMessageEvent(ctx context.Context, team string, e *slackevents.MessageEvent) (adapters.Inbound, bool) {
	switch e.SubType {
	case "", "bot_message", "file_share", "thread_broadcast", "me_message":
		return a.fromMsg(ctx, team, e.Channel, e.ChannelType, *e.Message), true
	case "message_changed":
		if e.Message == nil || e.PreviousMessage != nil && e.PreviousMessage.Text == e.Message.Text &&
			len(e.PreviousMessage.Files) == len(e.Message.Files) {
			return adapters.Inbound{}, false // an unfurl or a reply count, not an edit
		}
		if e.Message.SubType == "tombstone" { // a thread's parent deleted: its replies stay
			return adapters.Inbound{Kind: adapters.KindDelete, Chat: a.chat(ctx, team, e.Channel, e.ChannelType),
				ID: adapters.MessageID(e.Message.Timestamp), Time: tsTime(e.EventTimeStamp)}, true
		}
		m := a.fromMsg(ctx, team, e.Channel, e.ChannelType, *e.Message)
		m.Kind = adapters.KindEdit
		return m, true
	case "message_deleted":
		id := e.DeletedTimeStamp
		if id == "" && e.PreviousMessage != nil {
			id = e.PreviousMessage.Timestamp
		}
		return adapters.Inbound{Kind: adapters.KindDelete, Chat: a.chat(ctx, team, e.Channel, e.ChannelType),
			ID: adapters.MessageID(id), Time: tsTime(e.EventTimeStamp)}, true
	}
	return adapters.Inbound{}, false
}

// fromMsg normalizes a message (live or from history).
func (a *Adapter) fromMsg(ctx context.Context, team, channel, channelType string, msg slack.Msg) adapters.Inbound {
	_, botUser, botID := a.identity()
	chat := a.chat(ctx, team, channel, channelType)
	m := adapters.Inbound{Chat: chat, ChatName: a.chatName(channel), ID: adapters.MessageID(msg.Timestamp), Time: tsTime(msg.Timestamp),
		Text: a.render(ctx, msg.Text), Verb: adapters.VerbMessage}
	if msg.ThreadTimestamp != "" && msg.ThreadTimestamp != msg.Timestamp {
		m.Topic = msg.ThreadTimestamp
	}
	switch {
	case msg.User != "":
		m.Sender = userJID(team, msg.User)
		m.SenderName = a.userName(ctx, msg.User)
	case msg.BotID != "":
		m.Sender = userJID(team, msg.BotID)
	}
	if msg.Username != "" && m.SenderName == "" {
		m.SenderName = msg.Username
	} else if msg.BotProfile != nil && m.SenderName == "" {
		m.SenderName = msg.BotProfile.Name
	}
	m.FromBot = msg.User != "" && msg.User == botUser || msg.BotID != "" && msg.BotID == botID
	m.OtherBot = !m.FromBot && (msg.BotID != "" || msg.SubType == "bot_message")
	if m.OtherBot {
		if t := a.attachmentsText(ctx, msg.Attachments); t != "" {
			m.Text = strings.TrimSpace(m.Text + "\n" + t)
		}
	} else if t := a.sharedText(ctx, msg.Attachments); t != "" {
		m.Text = strings.TrimSpace(m.Text + "\n" + t)
	}
	// The same message arrives as `message` and as `app_mention`: both must
	// say mention, whichever the gateway stores first.
	if strings.HasPrefix(chat.Room(), team+"/dm/") || mentions(msg.Text, botUser) ||
		m.Topic != "" && msg.ParentUserId != "" && msg.ParentUserId == botUser {
		m.Verb = adapters.VerbMention
	}
	for _, f := range msg.Files {
		m.Attachments = append(m.Attachments, adapters.Attachment{Name: f.Name, MIME: f.Mimetype, Size: int64(f.Size), Ref: f.ID})
	}
	return m
}

// attachmentsText is what an integration's legacy attachments say (how
// CI and monitoring post their news, often with no text of their own):
// each one's pretext, author, title, text, fields ("title: value") and
// footer, one a line; its fallback when it has none of them. People's
// messages are not read this way: their attachments are link previews
// and shares.
func (a *Adapter) attachmentsText(ctx context.Context, atts []slack.Attachment) string {
	var lines []string
	for _, at := range atts {
		var own []string
		add := func(s string) {
			if s = strings.TrimSpace(a.render(ctx, s)); s != "" {
				own = append(own, s)
			}
		}
		add(at.Pretext)
		add(at.AuthorName)
		add(at.Title)
		add(at.Text)
		for _, f := range at.Fields {
			if f.Title == "" {
				add(f.Value)
			} else {
				add(f.Title + ": " + f.Value)
			}
		}
		add(at.Footer)
		if len(own) == 0 {
			add(at.Fallback)
		}
		lines = append(lines, own...)
	}
	return strings.Join(lines, "\n")
}

// sharedText is what the messages a person forwarded say (Slack adds each
// as an attachment marked is_share): "[forwarded from <author>] <text>",
// one a line, so that the agent does not take them for the person's own
// words. Their other attachments (link previews) add nothing.
func (a *Adapter) sharedText(ctx context.Context, atts []slack.Attachment) string {
	var lines []string
	for _, at := range atts {
		if !at.IsShare {
			continue
		}
		text := strings.TrimSpace(a.render(ctx, at.Text))
		if text == "" {
			text = strings.TrimSpace(a.render(ctx, at.Fallback))
		}
		head := "[forwarded]"
		if name := strings.TrimSpace(at.AuthorName); name != "" {
			head = "[forwarded from " + name + "]"
		}
		lines = append(lines, strings.TrimSpace(head+" "+text))
	}
	return strings.Join(lines, "\n")
}

// mentions reports whether Slack markup text mentions user: <@U1> or
// <@U1|name>, not <@U12>.
func mentions(text, user string) bool {
	return user != "" && (strings.Contains(text, "<@"+user+">") || strings.Contains(text, "<@"+user+"|"))
}

// chat is the JID of a conversation: the kind comes from the event's
// channel_type, else from the cache, else from conversations.info.
func (a *Adapter) chat(ctx context.Context, team, channel, channelType string) adapters.JID {
	a.sawTeam(team)
	return chatJID(team, a.lookupKind(ctx, channel, kindOf(channelType)), channel)
}

// lookupKind returns a conversation's kind and learns its name: the event's
// channel_type is authoritative (known); else the cache; else
// conversations.info; else a guess from the id, not cached.
func (a *Adapter) lookupKind(ctx context.Context, channel, known string) string {
	if v, ok := a.chans.get(channel); ok {
		kind, _, _ := strings.Cut(v, "|")
		if known == "" || known == kind {
			return kind
		}
	}
	kind, name := known, ""
	err := a.tiers.wait(ctx, "conversations.info", "")
	var c *slack.Channel
	if err == nil {
		c, err = a.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel})
	}
	if err != nil {
		a.log.Debug("slack conversations.info", "channel", channel, "err", err)
		if kind == "" {
			return guessKind(channel) // not cached: asked again next time
		}
	} else {
		var k string
		k, name = a.kindAndName(ctx, c)
		if kind == "" {
			kind = k
		}
	}
	a.chans.put(channel, kind+"|"+name)
	return kind
}

// kindAndName are a conversation's JID kind and name as conversations.info
// describes it (a DM is named by its person).
func (a *Adapter) kindAndName(ctx context.Context, c *slack.Channel) (kind, name string) {
	switch {
	case c.IsIM:
		return "dm", a.userName(ctx, c.User)
	case c.IsMpIM, c.IsPrivate, c.IsGroup:
		return "group", c.Name
	}
	return "channel", c.Name
}

// guessKind reads the id's prefix when Slack cannot be asked (D: a DM, G:
// a legacy private channel or group DM, else a channel).
func guessKind(id string) string {
	switch {
	case strings.HasPrefix(id, "D"):
		return "dm"
	case strings.HasPrefix(id, "G"):
		return "group"
	}
	return "channel"
}

func (a *Adapter) chatName(channel string) string {
	v, _ := a.chans.get(channel)
	_, name, _ := strings.Cut(v, "|")
	return name
}

// userName is a user's display name (users.info, cached); the id when unknown.
func (a *Adapter) userName(ctx context.Context, id string) string {
	if id == "" {
		return ""
	}
	if v, ok := a.users.get(id); ok {
		return v
	}
	err := a.tiers.wait(ctx, "users.info", "")
	var u *slack.User
	if err == nil {
		u, err = a.api.GetUserInfoContext(ctx, id)
	}
	if err != nil {
		a.log.Debug("slack users.info", "user", id, "err", err)
		var se slack.SlackErrorResponse
		if errors.As(err, &se) {
			a.users.put(id, id) // no such user (a bot id): do not ask again for an hour
		}
		return id
	}
	name := u.Profile.DisplayName
	if name == "" {
		name = u.RealName
	}
	if name == "" {
		name = u.Name
	}
	a.users.put(id, name)
	return name
}

var markup = regexp.MustCompile(`<([^<>]*)>`)

// render turns Slack markup into readable text: <@U1> → @name (the bot
// itself → @ its one-word handle, so that "@bot stop" stays two words
// whatever the app's display name; anyone else named as that handle stays
// <@U1>),
// <#C1|general> → #general, <url|text> → text (url), <!here> → @here, and
// unescapes &amp; &lt; &gt;.
func (a *Adapter) render(ctx context.Context, text string) string {
	a.mu.Lock()
	self, selfName := a.botUser, a.botName
	a.mu.Unlock()
	// Another mention that would read as the bot's ("@switchboard": a
	// display name, a label, a user group) stays markup: MentionsSelf
	// takes "@<handle>" for the bot's mention.
	other := func(tok, name string) string {
		if selfName != "" && strings.EqualFold(name, selfName) {
			return tok
		}
		return "@" + name
	}
	out := markup.ReplaceAllStringFunc(text, func(tok string) string {
		body := tok[1 : len(tok)-1]
		target, label, _ := strings.Cut(body, "|")
		switch {
		case self != "" && selfName != "" && target == "@"+self:
			return "@" + selfName
		case strings.HasPrefix(target, "@"):
			if label != "" {
				return other(tok, strings.TrimPrefix(label, "@"))
			}
			return other(tok, a.userName(ctx, target[1:]))
		case strings.HasPrefix(target, "#"):
			if label == "" {
				if label = a.chatName(target[1:]); label == "" {
					label = target[1:]
				}
			}
			return "#" + label
		case strings.HasPrefix(target, "!subteam^"):
			if label != "" {
				return other(tok, strings.TrimPrefix(label, "@"))
			}
			return "@group"
		case strings.HasPrefix(target, "!date^"):
			return label
		case strings.HasPrefix(target, "!"):
			return "@" + target[1:]
		case label == strings.TrimPrefix(target, "mailto:"):
			return label // an e-mail address
		case label == "" || label == strings.TrimPrefix(strings.TrimPrefix(target, "https://"), "http://"):
			return target // a bare link
		}
		return label + " (" + target + ")"
	})
	return strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(out)
}

// tsTime parses a Slack timestamp ("1700000000.000100").
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000)
}

// tsOf formats a time as a Slack timestamp bound.
func tsOf(t time.Time) string {
	return fmt.Sprintf("%d.%06d", t.Unix(), t.Nanosecond()/1000)
}
