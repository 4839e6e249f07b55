package discord

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
)

var _ adapters.Buttons = (*Adapter)(nil)

// Discord's limits on message components.
const (
	buttonsPerRow = 5
	maxLabel      = 80
	maxAnswer     = 2000
)

// components lays buttons out in action rows of five; no buttons is an
// empty list, which removes a message's components.
func components(buttons []adapters.Button) ([]discordgo.MessageComponent, error) {
	out := []discordgo.MessageComponent{}
	var row discordgo.ActionsRow
	for i, b := range buttons {
		if err := b.Validate(); err != nil {
			return nil, err
		}
		row.Components = append(row.Components, discordgo.Button{Label: adapters.Shorten(b.Label, maxLabel), CustomID: b.Data, Style: buttonStyle(b.Style)})
		if len(row.Components) == buttonsPerRow || i == len(buttons)-1 {
			out = append(out, row)
			row = discordgo.ActionsRow{}
		}
	}
	return out, nil
}

func buttonStyle(s adapters.ButtonStyle) discordgo.ButtonStyle {
	switch s {
	case adapters.StylePrimary:
		return discordgo.PrimaryButton
	case adapters.StyleDanger:
		return discordgo.DangerButton
	}
	return discordgo.SecondaryButton
}

// SendButtons posts m with a row of buttons (custom_id = Data) under it.
func (a *Adapter) SendButtons(ctx context.Context, m adapters.Outbound, buttons []adapters.Button) (adapters.MessageID, error) {
	return a.sendButtons(ctx, m, buttons)
}

// sendButtons is SendButtons with more request options (see send).
func (a *Adapter) sendButtons(ctx context.Context, m adapters.Outbound, buttons []adapters.Button, opts ...discordgo.RequestOption) (adapters.MessageID, error) {
	comps, err := components(buttons)
	if err != nil {
		return "", err
	}
	return a.post(ctx, m, comps, "", opts...)
}

// EditButtons replaces a message's text and buttons; nil removes them.
func (a *Adapter) EditButtons(ctx context.Context, ref adapters.MessageRef, text string, buttons []adapters.Button) error {
	return a.editButtons(ctx, ref, text, buttons)
}

// editButtons is EditButtons with more request options (see send).
func (a *Adapter) editButtons(ctx context.Context, ref adapters.MessageRef, text string, buttons []adapters.Button, opts ...discordgo.RequestOption) error {
	comps, err := components(buttons)
	if err != nil {
		return err
	}
	return a.rewrite(ctx, ref, text, &comps, opts...)
}

// interaction hands a button press to the gateway and answers the
// interaction (Discord wants that within 3 s): the gateway's answer as an
// ephemeral message only the presser sees, or, with no answer, a silent
// acknowledgement that leaves the message as it is.
func (a *Adapter) interaction(ctx context.Context, s *discordgo.Session, host adapters.Host, i *discordgo.Interaction) {
	if i.Type != discordgo.InteractionMessageComponent {
		return
	}
	p := adapters.Press{Data: i.MessageComponentData().CustomID}
	switch {
	case i.Member != nil && i.Member.User != nil:
		p.Sender, p.SenderName = userJID(i.Member.User.ID), memberName(i.Member.Nick, i.Member.User)
	case i.User != nil:
		p.Sender, p.SenderName = userJID(i.User.ID), memberName("", i.User)
	}
	p.Chat, p.Topic = a.place(ctx, i.GuildID, i.ChannelID)
	if i.Message != nil {
		p.Message = adapters.MessageID(i.Message.ID)
	}
	answer := ""
	if p.Sender != "" {
		var err error
		if answer, err = adapters.PressAnswer(ctx, host, p); err != nil {
			a.log.Warn("discord button press not taken; the presser was asked to try again", "jid", p.Chat, "sender", p.Sender, "err", err)
		}
	}
	resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
	if answer != "" {
		resp = &discordgo.InteractionResponse{Type: discordgo.InteractionResponseChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Content: adapters.Shorten(answer, maxAnswer), Flags: discordgo.MessageFlagsEphemeral,
				AllowedMentions: &discordgo.MessageAllowedMentions{}}}
	}
	if err := s.InteractionRespond(i, resp, discordgo.WithContext(ctx)); err != nil && ctx.Err() == nil {
		a.log.Warn("answer discord interaction", "jid", p.Chat, "err", classify(p.Chat, err))
	}
}

func memberName(nick string, u *discordgo.User) string {
	switch {
	case nick != "":
		return nick
	case u.GlobalName != "":
		return u.GlobalName
	}
	return u.Username
}
