package discord

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
)

// mentions lets the agent's text ping the users it names and the user it
// replies to, never @everyone, @here or a role.
func mentions(reply bool) *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}, RepliedUser: reply}
}

// Send posts one part (Discord renders the Markdown), into the thread when
// there is a topic, as a reply when ReplyTo is set.
func (a *Adapter) Send(ctx context.Context, m adapters.Outbound) (string, error) {
	s, err := a.session()
	if err != nil {
		return "", err
	}
	ch, err := channelOf(m.Chat, m.Topic)
	if err != nil {
		return "", err
	}
	data := &discordgo.MessageSend{Content: m.Text, AllowedMentions: mentions(m.ReplyTo != "")}
	if m.ReplyTo != "" {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: m.ReplyTo, ChannelID: ch, GuildID: guildOf(m.Chat), FailIfNotExists: &no}
	}
	sent, err := s.ChannelMessageSendComplex(ch, data, discordgo.WithContext(ctx))
	if err != nil {
		return "", mapError(m.Chat, err)
	}
	return sent.ID, nil
}

// Edit replaces the text of one of the bot's messages.
func (a *Adapter) Edit(ctx context.Context, ref adapters.MessageRef, text string) error {
	s, ch, err := a.target(ref)
	if err != nil {
		return err
	}
	_, err = s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: ref.ID, Channel: ch, Content: &text, AllowedMentions: mentions(false)},
		discordgo.WithContext(ctx))
	return mapError(ref.Chat, err)
}

// Delete deletes a message.
func (a *Adapter) Delete(ctx context.Context, ref adapters.MessageRef) error {
	s, ch, err := a.target(ref)
	if err != nil {
		return err
	}
	return mapError(ref.Chat, s.ChannelMessageDelete(ch, ref.ID, discordgo.WithContext(ctx)))
}

// React adds the bot's reaction: a unicode emoji, or a custom emoji of the
// server by name (with or without colons).
func (a *Adapter) React(ctx context.Context, ref adapters.MessageRef, reaction string) error {
	s, ch, err := a.target(ref)
	if err != nil {
		return err
	}
	emoji := strings.Trim(reaction, ":")
	if isName(emoji) {
		guild := guildOf(ref.Chat)
		if guild == "" {
			return fmt.Errorf("discord: custom emoji %q works in servers only; use a unicode emoji in DMs: %w", reaction, adapters.ErrPermanent)
		}
		list, err := s.GuildEmojis(guild, discordgo.WithContext(ctx))
		if err != nil {
			return mapError(ref.Chat, err)
		}
		i := slices.IndexFunc(list, func(e *discordgo.Emoji) bool { return e.Name == emoji })
		if i < 0 {
			return fmt.Errorf("discord: this server has no custom emoji named %q; use a unicode emoji or one of the server's: %w", emoji, adapters.ErrPermanent)
		}
		emoji = list[i].APIName()
	}
	return mapError(ref.Chat, s.MessageReactionAdd(ch, ref.ID, emoji, discordgo.WithContext(ctx)))
}

// isName: a custom emoji's name (letters, digits, _), not a unicode emoji.
func isName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
}

// Pin pins a message (the bot needs Manage Messages).
func (a *Adapter) Pin(ctx context.Context, ref adapters.MessageRef) error {
	s, ch, err := a.target(ref)
	if err != nil {
		return err
	}
	return mapError(ref.Chat, s.ChannelMessagePin(ch, ref.ID, discordgo.WithContext(ctx)))
}

// Unpin unpins a message.
func (a *Adapter) Unpin(ctx context.Context, ref adapters.MessageRef) error {
	s, ch, err := a.target(ref)
	if err != nil {
		return err
	}
	return mapError(ref.Chat, s.ChannelMessageUnpin(ch, ref.ID, discordgo.WithContext(ctx)))
}

// SendFile uploads a file with an optional caption.
func (a *Adapter) SendFile(ctx context.Context, m adapters.Outbound, f adapters.File) (string, error) {
	s, err := a.session()
	if err != nil {
		return "", err
	}
	ch, err := channelOf(m.Chat, m.Topic)
	if err != nil {
		return "", err
	}
	sent, err := s.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Content: m.Text, AllowedMentions: mentions(false),
		Files: []*discordgo.File{{Name: f.Name, ContentType: f.MIME, Reader: f.Content}}}, discordgo.WithContext(ctx))
	if err != nil {
		return "", mapError(m.Chat, err)
	}
	return sent.ID, nil
}

// Download re-reads the message for a fresh attachment URL (Discord's CDN
// links expire) and fetches it.
func (a *Adapter) Download(ctx context.Context, att adapters.Attachment) (io.ReadCloser, error) {
	s, err := a.session()
	if err != nil {
		return nil, err
	}
	parts := strings.Split(att.Ref, "/")
	if len(parts) != 3 {
		return nil, fmt.Errorf("discord: malformed attachment reference")
	}
	m, err := s.ChannelMessage(parts[0], parts[1], discordgo.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("discord: read the attachment's message: %w", err)
	}
	i := slices.IndexFunc(m.Attachments, func(x *discordgo.MessageAttachment) bool { return x.ID == parts[2] })
	if i < 0 {
		return nil, fmt.Errorf("discord: the attachment was removed from its message")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Attachments[i].URL, nil)
	if err != nil {
		return nil, fmt.Errorf("discord: bad attachment URL")
	}
	if !a.cdnURL(req.URL) {
		return nil, fmt.Errorf("discord: the attachment URL is not on Discord's CDN (host %q); not fetched", req.URL.Host)
	}
	resp, err := a.dl.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord: download failed (connection error)")
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("discord: download failed: HTTP %d", resp.StatusCode)
	}
	return resp.Body, nil
}

// FetchHistory reads a channel's (or thread's) messages through REST,
// oldest first.
func (a *Adapter) FetchHistory(ctx context.Context, chat adapters.JID, q adapters.HistoryQuery) ([]adapters.Inbound, error) {
	s, err := a.session()
	if err != nil {
		return nil, err
	}
	ch, err := channelOf(chat, q.Topic)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	msgs, err := s.ChannelMessages(ch, limit, q.Before, q.After, "", discordgo.WithContext(ctx))
	if err != nil {
		return nil, mapError(chat, err)
	}
	var out []adapters.Inbound
	for i := len(msgs) - 1; i >= 0; i-- { // Discord answers newest first
		m := msgs[i]
		if m.GuildID == "" {
			m.GuildID = guildOf(chat)
		}
		if !q.Since.IsZero() && m.Timestamp.Before(q.Since) {
			continue
		}
		if ev, ok := a.message(ctx, m, adapters.KindMessage); ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// Typing shows "… is typing" in the channel or thread for ten seconds.
func (a *Adapter) Typing(ctx context.Context, chat adapters.JID, topic string) error {
	s, err := a.session()
	if err != nil {
		return err
	}
	ch, err := channelOf(chat, topic)
	if err != nil {
		return err
	}
	return mapError(chat, s.ChannelTyping(ch, discordgo.WithContext(ctx)))
}

func (a *Adapter) target(ref adapters.MessageRef) (*discordgo.Session, string, error) {
	s, err := a.session()
	if err != nil {
		return nil, "", err
	}
	ch, err := channelOf(ref.Chat, ref.Topic)
	return s, ch, err
}
