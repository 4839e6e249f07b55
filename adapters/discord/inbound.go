package discord

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
)

// handlers wires discordgo's events to the host. discordgo calls handlers
// from its event loop; each delivery blocks until stored.
// stuck is signalled when a lost connection is not back within
// Options.ReconnectDeadline.
func (a *Adapter) handlers(ctx context.Context, s *discordgo.Session, host adapters.Host, stuck chan<- struct{}) {
	var epoch atomic.Int64 // counts connects, so a watchdog knows whether one came
	connected := func() {
		epoch.Add(1)
		host.SetState(adapters.StateConnected, nil)
	}
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
		defer a.survive("Ready")
		connected()
		// A new session (not a resumed one) may have missed messages.
		go a.backfill(ctx, host)
	})
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) {
		defer a.survive("Resumed")
		connected()
	})
	s.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
		defer a.survive("Disconnect")
		if ctx.Err() != nil {
			return
		}
		host.SetState(adapters.StateBackingOff, errors.New("gateway connection lost; discordgo is reconnecting"))
		at := epoch.Load()
		time.AfterFunc(a.opt.ReconnectDeadline, func() {
			if epoch.Load() == at && ctx.Err() == nil {
				select {
				case stuck <- struct{}{}:
				default:
				}
			}
		})
	})
	s.AddHandler(func(_ *discordgo.Session, g *discordgo.GuildCreate) {
		defer a.survive("GuildCreate")
		a.learnGuild(g.Guild)
	})
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadCreate) {
		defer a.survive("ThreadCreate")
		a.learnChannel(c.Channel)
	})
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadDelete) {
		defer a.survive("ThreadDelete")
		a.forgetChannel(c.Channel)
	})
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ChannelDelete) {
		defer a.survive("ChannelDelete")
		a.forgetChannel(c.Channel)
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		defer a.survive("MessageCreate")
		if ev, ok := a.message(ctx, m.Message, adapters.KindMessage); ok {
			a.deliver(ctx, host, ev)
		}
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageUpdate) {
		defer a.survive("MessageUpdate")
		if m.Message == nil || m.Author == nil {
			return // an embed resolved, not an edit
		}
		if ev, ok := a.message(ctx, m.Message, adapters.KindEdit); ok {
			a.deliver(ctx, host, ev)
		}
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageDelete) {
		defer a.survive("MessageDelete")
		chat, topic := a.place(ctx, m.GuildID, m.ChannelID)
		a.deliver(ctx, host, adapters.Inbound{Kind: adapters.KindDelete, Chat: chat, Topic: topic, ID: adapters.MessageID(m.ID), Time: time.Now()})
	})
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageDeleteBulk) {
		defer a.survive("MessageDeleteBulk")
		chat, topic := a.place(ctx, m.GuildID, m.ChannelID)
		for _, id := range m.Messages {
			a.deliver(ctx, host, adapters.Inbound{Kind: adapters.KindDelete, Chat: chat, Topic: topic, ID: adapters.MessageID(id), Time: time.Now()})
		}
	})
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.MessageReactionAdd) {
		defer a.survive("MessageReactionAdd")
		a.reaction(ctx, host, r.MessageReaction, reactorName(r.Member), false)
	})
	s.AddHandler(func(s *discordgo.Session, i *discordgo.InteractionCreate) {
		defer a.survive("InteractionCreate")
		a.interaction(ctx, s, host, i.Interaction)
	})
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.MessageReactionRemove) {
		defer a.survive("MessageReactionRemove")
		a.reaction(ctx, host, r.MessageReaction, "", true)
	})
}

// survive ends a handler that panicked on an event it could not handle
// (discordgo decodes "null" into a nil struct, for one): the event is
// logged and skipped, and the adapter and the process go on.
func (a *Adapter) survive(event string) {
	if r := recover(); r != nil {
		a.log.Error("discord event could not be handled; skipped", "event", event, "panic", fmt.Sprint(r))
	}
}

// deliver hands ev to the gateway, retrying while the store refuses it
// (Discord does not redeliver: an event not stored now is lost).
func (a *Adapter) deliver(ctx context.Context, host adapters.Host, ev adapters.Inbound) {
	adapters.DeliverUntilStored(ctx, host, ev, func(err error, wait time.Duration) {
		if wait == 0 {
			a.log.Warn("discord event refused as invalid; skipped", "jid", ev.Chat, "msg_id", ev.ID, "err", err)
			return
		}
		a.log.Warn("discord event not stored; retrying", "jid", ev.Chat, "msg_id", ev.ID, "wait", wait, "err", err)
	})
}

// message normalizes a message; ok is false for messages with nothing to store.
func (a *Adapter) message(ctx context.Context, m *discordgo.Message, kind adapters.Kind) (adapters.Inbound, bool) {
	if m == nil || m.Author == nil || isSystem(m.Type) {
		return adapters.Inbound{}, false
	}
	self, _ := a.selfID.Load().(string)
	chat, topic := a.place(ctx, m.GuildID, m.ChannelID)
	ev := adapters.Inbound{
		Kind: kind, Chat: chat, Topic: topic, ID: adapters.MessageID(m.ID), Sender: userJID(m.Author.ID), SenderName: displayName(m),
		Text: a.render(m), Time: m.Timestamp, Verb: adapters.VerbMessage,
		FromBot: m.Author.ID == self, OtherBot: (m.Author.Bot || m.WebhookID != "") && m.Author.ID != self,
	}
	if kind == adapters.KindEdit && m.EditedTimestamp != nil {
		ev.Time = *m.EditedTimestamp
	}
	forward := m.MessageReference != nil && m.MessageReference.Type == discordgo.MessageReferenceTypeForward
	switch {
	case forward:
		// A forward is no reply: the message it copies is in another
		// chat, and its text is in the snapshot, not in content.
		ev.Text = strings.TrimSpace(ev.Text + " " + forwarded(m))
	case m.MessageReference != nil && m.MessageReference.MessageID != "":
		ev.ReplyTo = adapters.MessageID(m.MessageReference.MessageID)
	}
	for _, att := range m.Attachments {
		ev.Attachments = append(ev.Attachments, adapters.Attachment{Name: att.Filename, MIME: att.ContentType, Size: int64(att.Size),
			Ref: m.ChannelID + "/" + m.ID + "/" + att.ID})
	}
	for _, st := range m.StickerItems {
		ev.Text += " [sticker " + st.Name + "]"
	}
	if t := embedsText(m.Embeds); t != "" {
		ev.Text = strings.TrimSpace(ev.Text + "\n" + t)
	}
	if t := pollText(m.Poll); t != "" {
		ev.Text = strings.TrimSpace(ev.Text + " " + t)
	}
	if a.addressed(m, self) {
		ev.Verb = adapters.VerbMention
	}
	if kind == adapters.KindMessage && !forward && !ev.FromBot && !ev.OtherBot && m.Content == "" && len(m.Attachments) == 0 &&
		len(m.Embeds) == 0 && len(m.StickerItems) == 0 && m.Poll == nil {
		a.contentWarn.Do(func() {
			a.log.Warn("discord message content arrived empty: enable the Message Content intent for this bot " +
				"(developer portal → your application → Bot → Privileged Gateway Intents → Message Content Intent), then restart")
		})
	}
	return ev, true
}

// isSystem: a system message (a member joined, a message was pinned, a
// thread was started, a boost), which Discord posts with the acting user
// as author: no one said it, so it is not stored (as Telegram's service
// messages are not) and never starts a turn. People and bots write
// messages of type default, reply, or (bots) an application command's.
func isSystem(t discordgo.MessageType) bool {
	switch t {
	case discordgo.MessageTypeDefault, discordgo.MessageTypeReply,
		discordgo.MessageTypeChatInputCommand, discordgo.MessageTypeContextMenuCommand:
		return false
	}
	return true
}

// channelMention is Discord's markup for a channel: <#id>.
var channelMention = regexp.MustCompile(`<#([0-9]+)>`)

// render is a message's text as people read it: user mentions as
// @username (the bot's own as one word, mentionWord; another user's that
// would read as the bot's own, a member "bob" beside the bot "Bob", stays
// <@id>, so that MentionsSelf never takes it for the bot's), role mentions
// as @role (but the bot's own, and one named as the bot) and channel
// mentions as #channel (names from the session's state; markup left as it
// is when unknown).
func (a *Adapter) render(m *discordgo.Message) string {
	self, _ := a.selfID.Load().(string)
	selfName, _ := a.selfName.Load().(string)
	text := m.Content
	for _, u := range m.Mentions {
		name := u.Username
		if u.ID == self {
			name = mentionWord(name)
		} else if selfName != "" && strings.EqualFold(name, selfName) {
			continue
		}
		text = strings.NewReplacer("<@"+u.ID+">", "@"+name, "<@!"+u.ID+">", "@"+name).Replace(text)
	}
	text = plainMarkup(text)
	s, err := a.session()
	if err != nil || m.GuildID == "" || !strings.Contains(text, "<") {
		return text
	}
	a.mu.Lock()
	botRoles := maps.Clone(a.botRoles)
	a.mu.Unlock()
	for _, id := range m.MentionRoles {
		if botRoles[id] {
			continue // the bot's own role stays markup: "<@&id> stop" is one mention, whatever its name
		}
		if r, err := s.State.Role(m.GuildID, id); err == nil && r.Name != "" && !strings.EqualFold(r.Name, selfName) {
			text = strings.ReplaceAll(text, "<@&"+id+">", "@"+r.Name)
		}
	}
	return channelMention.ReplaceAllStringFunc(text, func(mention string) string {
		if c, err := s.State.Channel(mention[2 : len(mention)-1]); err == nil && c.Name != "" {
			return "#" + c.Name
		}
		return mention
	})
}

// markupTokens are Discord's markup that needs no lookup: a custom emoji
// (<:name:id>, animated <a:name:id>), a timestamp (<t:unix> or
// <t:unix:style>) and a command mention (</name:id>).
var markupTokens = regexp.MustCompile(`<(a?):([A-Za-z0-9_]{1,64}):[0-9]+>|<t:(-?[0-9]{1,13})(?::[tTdDfFR])?>|</([^<>:]{1,100}):[0-9]+>`)

// plainMarkup writes markupTokens as people read them: ":name:", the
// time in RFC 3339 (UTC), "/name".
func plainMarkup(text string) string {
	if !strings.Contains(text, "<") {
		return text
	}
	return markupTokens.ReplaceAllStringFunc(text, func(tok string) string {
		g := markupTokens.FindStringSubmatch(tok)
		switch {
		case g[2] != "":
			return ":" + g[2] + ":"
		case g[3] != "":
			sec, err := strconv.ParseInt(g[3], 10, 64)
			if err != nil {
				return tok
			}
			return time.Unix(sec, 0).UTC().Format(time.RFC3339)
		}
		return "/" + g[4]
	})
}

// mentionWord is the bot's username as its mention renders: one word, its
// spaces as underscores ("My Bot" → "My_Bot"), so that "@My_Bot stop" is
// the two words of a stop request, as "<@id> stop" was (bots' usernames
// may hold spaces; people's no longer do).
func mentionWord(name string) string {
	return strings.Join(strings.Fields(name), "_")
}

// forwarded is what a forwarded message shows: "[forwarded] " and the
// text of the message it copies, with its files and stickers named.
func forwarded(m *discordgo.Message) string {
	var parts []string
	for _, snap := range m.MessageSnapshots {
		o := snap.Message
		if o == nil {
			continue
		}
		if t := strings.TrimSpace(o.ContentWithMentionsReplaced()); t != "" {
			parts = append(parts, t)
		}
		for _, att := range o.Attachments {
			parts = append(parts, "[file "+att.Filename+"]")
		}
		for _, st := range o.StickerItems {
			parts = append(parts, "[sticker "+st.Name+"]")
		}
	}
	return "[forwarded] " + strings.Join(parts, " ")
}

// embedsText is what a message's rich embeds say, the way bots and
// webhooks post their news with empty content: each embed's author,
// title, description, fields ("name: value") and footer, one a line. A
// link preview (an embed of another type, made from a URL in the text)
// adds nothing.
func embedsText(embeds []*discordgo.MessageEmbed) string {
	var lines []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			lines = append(lines, s)
		}
	}
	for _, e := range embeds {
		if e == nil || e.Type != "" && e.Type != discordgo.EmbedTypeRich {
			continue
		}
		if e.Author != nil {
			add(e.Author.Name)
		}
		add(e.Title)
		add(e.Description)
		for _, f := range e.Fields {
			switch {
			case f == nil:
			case strings.TrimSpace(f.Name) == "":
				add(f.Value)
			default:
				add(f.Name + ": " + f.Value)
			}
		}
		if e.Footer != nil {
			add(e.Footer.Text)
		}
	}
	return strings.Join(lines, "\n")
}

// pollText is what a poll asks: "[poll <question> — <answer> / …]"; ""
// for none.
func pollText(p *discordgo.Poll) string {
	if p == nil {
		return ""
	}
	var answers []string
	for _, a := range p.Answers {
		if a.Media != nil && strings.TrimSpace(a.Media.Text) != "" {
			answers = append(answers, strings.TrimSpace(a.Media.Text))
		}
	}
	t := "[poll " + strings.TrimSpace(p.Question.Text)
	if len(answers) > 0 {
		t += " — " + strings.Join(answers, " / ")
	}
	return t + "]"
}

// addressed: a DM, a mention of the bot or of its managed role, or a reply
// to one of its messages.
func (a *Adapter) addressed(m *discordgo.Message, self string) bool {
	if m.GuildID == "" {
		return true
	}
	for _, u := range m.Mentions {
		if u.ID == self {
			return true
		}
	}
	if r := m.ReferencedMessage; r != nil && r.Author != nil && r.Author.ID == self {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(m.MentionRoles, func(id string) bool { return a.botRoles[id] })
}

// reaction delivers a reaction by r.UserID, named name ("" when the event
// does not say: a DM's, a removal's).
func (a *Adapter) reaction(ctx context.Context, host adapters.Host, r *discordgo.MessageReaction, name string, removed bool) {
	if r == nil {
		return
	}
	emoji := r.Emoji.Name
	chat, topic := a.place(ctx, r.GuildID, r.ChannelID)
	a.deliver(ctx, host, adapters.Inbound{Kind: adapters.KindReaction, Chat: chat, Topic: topic, ID: adapters.MessageID(r.MessageID),
		Sender: userJID(r.UserID), SenderName: name, Reaction: emoji, ReactionRemoved: removed, Time: time.Now()})
}

// place is the chat JID and topic of a channel: a thread's parent channel,
// with the thread as topic.
func (a *Adapter) place(ctx context.Context, guild, channel string) (adapters.JID, string) {
	if guild == "" {
		a.mu.Lock()
		if _, ok := a.homes[channel]; !ok {
			forgetHalf(a.homes)
			a.homes[channel] = "" // a DM channel: replies need not ask (address)
		}
		a.mu.Unlock()
		return chatJID("", channel), ""
	}
	a.mu.Lock()
	p, known := a.parents[channel]
	_, channelKnown := a.homes[channel]
	s := a.s
	a.mu.Unlock()
	if !known && !channelKnown && s != nil {
		if c, err := s.State.Channel(channel); err == nil {
			a.learnChannel(c)
		} else if c, err := s.Channel(channel, discordgo.WithContext(ctx)); err == nil {
			a.learnChannel(c)
		}
		a.mu.Lock()
		p, known = a.parents[channel]
		a.mu.Unlock()
	}
	if known {
		return chatJID(p.guild, p.channel), channel
	}
	return chatJID(guild, channel), ""
}

// learnChannel remembers a thread's parent, and another channel's server
// ("" for a DM), which address then need not ask for.
func (a *Adapter) learnChannel(c *discordgo.Channel) {
	if c == nil || c.IsThread() && c.ParentID == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if c.IsThread() {
		if _, ok := a.parents[c.ID]; !ok {
			forgetHalf(a.parents)
		}
		a.parents[c.ID] = parent{guild: c.GuildID, channel: c.ParentID}
		return
	}
	if _, ok := a.homes[c.ID]; !ok {
		forgetHalf(a.homes)
	}
	a.homes[c.ID] = c.GuildID
}

// forgetChannel forgets a deleted channel or thread.
func (a *Adapter) forgetChannel(c *discordgo.Channel) {
	if c == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.parents, c.ID)
	delete(a.homes, c.ID)
}

// maxPlaces bounds the channels and the threads the adapter remembers
// (each map): they grow with every DM and thread the bot ever sees. One
// forgotten is asked for again (place, lookup); a forgotten thread is not
// backfilled unless its server's next GUILD_CREATE lists it again.
const maxPlaces = 50_000

// forgetHalf makes room for one more entry in m (the caller holds a.mu):
// full, it forgets about half of it, whichever Go's map order visits first.
func forgetHalf[V any](m map[string]V) {
	if len(m) < maxPlaces {
		return
	}
	drop := len(m) / 2
	for k := range m {
		if drop == 0 {
			return
		}
		delete(m, k)
		drop--
	}
}

// learnGuild remembers the guild's threads and the bot's managed role.
func (a *Adapter) learnGuild(g *discordgo.Guild) {
	for _, c := range g.Channels {
		if c.GuildID == "" {
			c.GuildID = g.ID
		}
		a.learnChannel(c)
	}
	for _, t := range g.Threads {
		if t.GuildID == "" {
			t.GuildID = g.ID
		}
		a.learnChannel(t)
	}
	self, _ := a.selfID.Load().(string)
	var mine []string
	for _, m := range g.Members {
		if m.User != nil && m.User.ID == self {
			mine = m.Roles
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, r := range g.Roles {
		if r.Managed && slices.Contains(mine, r.ID) {
			a.botRoles[r.ID] = true
		}
	}
}

// reactorName is who reacted as the event names them: a server member's
// name (memberName); "" when it does not say (a DM).
func reactorName(m *discordgo.Member) string {
	if m == nil || m.User == nil {
		return ""
	}
	return memberName(m.Nick, m.User)
}

func displayName(m *discordgo.Message) string {
	if m.Member != nil && m.Member.Nick != "" {
		return m.Member.Nick
	}
	if m.Author.GlobalName != "" {
		return m.Author.GlobalName
	}
	return m.Author.Username
}
