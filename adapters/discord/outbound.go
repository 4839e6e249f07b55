package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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
// there is a topic, as a reply when ReplyTo is set. The part's key (m.Key)
// goes as an enforced nonce: a post sent again because its answer was lost
// (discordgo retries a 502, the outbox a failed send) returns the message
// the first one created instead of showing the part twice.
func (a *Adapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	return a.post(ctx, m, nil, nonceOf(m.Key))
}

// send is Send with more request options (a live reply's turn off
// discordgo's waiting out a 429) and without a nonce: a live reply's
// message may be deleted (Abort) and its key then sent by the outbox,
// which must post anew.
func (a *Adapter) send(ctx context.Context, m adapters.Outbound, opts ...discordgo.RequestOption) (adapters.MessageID, error) {
	return a.post(ctx, m, nil, "", opts...)
}

// nonceOf is the nonce for idempotency key key ("" for none): Discord
// takes up to 25 characters, so a key is hashed (100 bits of SHA-256).
func nonceOf(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])[:25]
}

// messageSend is discordgo's MessageSend with the nonce it lacks.
type messageSend struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
}

// post sends m with components comps (nil: none) for send and sendButtons,
// with nonce enforced unless it is "".
func (a *Adapter) post(ctx context.Context, m adapters.Outbound, comps []discordgo.MessageComponent, nonce string, opts ...discordgo.RequestOption) (adapters.MessageID, error) {
	s, err := a.session()
	if err != nil {
		return "", err
	}
	ch, err := a.address(ctx, s, m.Chat, m.Topic)
	if err != nil {
		return "", err
	}
	data := &discordgo.MessageSend{Content: m.Text, AllowedMentions: mentions(m.ReplyTo != ""), Components: comps}
	if m.ReplyTo != "" {
		no := false
		data.Reference = &discordgo.MessageReference{MessageID: string(m.ReplyTo), ChannelID: ch, GuildID: guildOf(m.Chat), FailIfNotExists: &no}
	}
	opts = append(opts, discordgo.WithContext(ctx))
	if nonce == "" {
		sent, err := s.ChannelMessageSendComplex(ch, data, opts...)
		if err != nil {
			return "", classify(m.Chat, err)
		}
		return adapters.MessageID(sent.ID), nil
	}
	// As ChannelMessageSendComplex sends a message without files.
	endpoint := discordgo.EndpointChannelMessages(ch)
	resp, err := s.RequestWithBucketID("POST", endpoint, messageSend{MessageSend: data, Nonce: nonce, EnforceNonce: true}, endpoint, opts...)
	if err != nil {
		return "", classify(m.Chat, err)
	}
	var sent discordgo.Message
	if err := json.Unmarshal(resp, &sent); err != nil || sent.ID == "" {
		return "", fmt.Errorf("discord: send to %s: unreadable answer: %v", m.Chat, err)
	}
	return adapters.MessageID(sent.ID), nil
}

// Edit replaces the text of one of the bot's messages.
func (a *Adapter) Edit(ctx context.Context, ref adapters.MessageRef, text string) error {
	return a.edit(ctx, ref, text)
}

// edit is Edit with more request options (see send).
func (a *Adapter) edit(ctx context.Context, ref adapters.MessageRef, text string, opts ...discordgo.RequestOption) error {
	return a.rewrite(ctx, ref, text, nil, opts...)
}

// rewrite edits a message's text and, with comps not nil, its components,
// for edit and editButtons.
func (a *Adapter) rewrite(ctx context.Context, ref adapters.MessageRef, text string, comps *[]discordgo.MessageComponent, opts ...discordgo.RequestOption) error {
	s, ch, err := a.target(ctx, ref)
	if err != nil {
		return err
	}
	_, err = s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: string(ref.ID), Channel: ch, Content: &text,
		Components: comps, AllowedMentions: mentions(false)}, append(opts, discordgo.WithContext(ctx))...)
	return classify(ref.Chat, err)
}

// Delete deletes a message.
func (a *Adapter) Delete(ctx context.Context, ref adapters.MessageRef) error {
	s, ch, err := a.target(ctx, ref)
	if err != nil {
		return err
	}
	return classify(ref.Chat, s.ChannelMessageDelete(ch, string(ref.ID), discordgo.WithContext(ctx)))
}

// React adds the bot's reaction: a unicode emoji, a standard emoji's
// shortcode (adapters.EmojiByName: ":thumbsup:", "fire"), or a custom
// emoji of the server by name (with or without colons).
func (a *Adapter) React(ctx context.Context, ref adapters.MessageRef, reaction string) error {
	s, ch, err := a.target(ctx, ref)
	if err != nil {
		return err
	}
	emoji := strings.Trim(reaction, ":")
	if e, ok := adapters.EmojiByName(emoji); ok {
		// A standard emoji's shortcode (":thumbsup:", "+1"); one shown as
		// text by default Discord names with the selector.
		emoji = adapters.EmojiPresentation(e)
	} else if isName(emoji) {
		guild := guildOf(ref.Chat)
		if guild == "" {
			return fmt.Errorf("discord: custom emoji %q works in servers only; use a unicode emoji in DMs: %w", reaction, adapters.ErrPermanent)
		}
		list, err := s.GuildEmojis(guild, discordgo.WithContext(ctx))
		if err != nil {
			return classify(ref.Chat, err)
		}
		i := slices.IndexFunc(list, func(e *discordgo.Emoji) bool { return e.Name == emoji })
		if i < 0 {
			return fmt.Errorf("discord: this server has no custom emoji named %q; use a unicode emoji or one of the server's: %w", emoji, adapters.ErrPermanent)
		}
		emoji = list[i].APIName()
	}
	return classify(ref.Chat, s.MessageReactionAdd(ch, string(ref.ID), emoji, discordgo.WithContext(ctx)))
}

// isName: a custom emoji's name (letters, digits, _), not a unicode emoji.
func isName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
}

// Pin pins a message (the bot needs Manage Messages).
func (a *Adapter) Pin(ctx context.Context, ref adapters.MessageRef) error {
	s, ch, err := a.target(ctx, ref)
	if err != nil {
		return err
	}
	return classify(ref.Chat, s.ChannelMessagePin(ch, string(ref.ID), discordgo.WithContext(ctx)))
}

// Unpin unpins a message.
func (a *Adapter) Unpin(ctx context.Context, ref adapters.MessageRef) error {
	s, ch, err := a.target(ctx, ref)
	if err != nil {
		return err
	}
	return classify(ref.Chat, s.ChannelMessageUnpin(ch, string(ref.ID), discordgo.WithContext(ctx)))
}

// SendFile uploads a file with an optional caption. A caption longer than
// Discord takes beside a file follows it as messages of its own, so that
// neither is lost.
func (a *Adapter) SendFile(ctx context.Context, m adapters.Outbound, f adapters.File) (adapters.MessageID, error) {
	s, err := a.session()
	if err != nil {
		return "", err
	}
	ch, err := a.address(ctx, s, m.Chat, m.Topic)
	if err != nil {
		return "", err
	}
	caption, follow := m.Text, ""
	if adapters.UTF16Len(caption) > maxText {
		caption, follow = "", m.Text
	}
	// As ChannelMessageSendComplex uploads a file, with the key's nonce
	// (see Send): a post sent again after its answer was lost does not
	// show the file twice.
	files := []*discordgo.File{{Name: f.Name, ContentType: f.MIME, Reader: f.Content}}
	data := &discordgo.MessageSend{Content: caption, AllowedMentions: mentions(false), Files: files}
	nonce := nonceOf(m.Key)
	contentType, body, err := discordgo.MultipartBodyWithJSON(messageSend{MessageSend: data, Nonce: nonce, EnforceNonce: nonce != ""}, files)
	if err != nil {
		return "", fmt.Errorf("discord: send file %s: %w", f.Name, err)
	}
	endpoint := discordgo.EndpointChannelMessages(ch)
	resp, err := s.RequestRaw("POST", endpoint, contentType, body, endpoint, 0, discordgo.WithContext(ctx))
	if err != nil {
		return "", classify(m.Chat, err)
	}
	var sent discordgo.Message
	if err := json.Unmarshal(resp, &sent); err != nil || sent.ID == "" {
		return "", fmt.Errorf("discord: send file to %s: unreadable answer: %v", m.Chat, err)
	}
	if follow != "" {
		for i, part := range adapters.Split(follow, maxText) {
			// The file is sent: a failure here must not send it again.
			out := adapters.Outbound{Chat: m.Chat, Topic: m.Topic, Text: part}
			if m.Key != "" {
				out.Key = fmt.Sprintf("%s/caption/%d", m.Key, i+1)
			}
			if _, err := a.Send(ctx, out); err != nil {
				a.log.Warn("discord file sent, but its long caption could not follow", "jid", m.Chat, "err", err)
				break
			}
		}
	}
	return adapters.MessageID(sent.ID), nil
}

// Typing shows "… is typing" in the channel or thread for ten seconds.
func (a *Adapter) Typing(ctx context.Context, chat adapters.JID, topic string) error {
	s, err := a.session()
	if err != nil {
		return err
	}
	ch, err := a.address(ctx, s, chat, topic)
	if err != nil {
		return err
	}
	return classify(chat, s.ChannelTyping(ch, discordgo.WithContext(ctx)))
}

func (a *Adapter) target(ctx context.Context, ref adapters.MessageRef) (*discordgo.Session, string, error) {
	s, err := a.session()
	if err != nil {
		return nil, "", err
	}
	if !isID(string(ref.ID)) { // as channelOf's ids: it goes into the path
		return nil, "", fmt.Errorf("discord: %q is not a message id (letters, digits, _ and -, with no leading 0): %w", ref.ID, adapters.ErrPermanent)
	}
	ch, err := a.address(ctx, s, ref.Chat, ref.Topic)
	return s, ch, err
}
