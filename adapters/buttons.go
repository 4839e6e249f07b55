package adapters

import (
	"context"
	"fmt"
	"strings"
)

// ButtonStyle hints how a platform draws a button.
type ButtonStyle string

// Button styles; the zero style is the platform's default.
const (
	StyleDefault ButtonStyle = ""
	StylePrimary ButtonStyle = "primary" // allow
	StyleDanger  ButtonStyle = "danger"  // deny, stop
)

// MaxButtonData is the longest Button.Data, in bytes: Telegram's
// callback_data limit, the strictest of the platforms'.
const MaxButtonData = 64

// Button is one choice under a message the bot sent. Data is opaque to the
// adapter (the gateway mints it, e.g. "appr:<id>:allow"); it comes back
// unchanged in the Press of whoever presses the button.
type Button struct {
	Label string
	Data  string
	Style ButtonStyle
}

// Validate says what is wrong with b.
func (b Button) Validate() error {
	switch {
	case strings.TrimSpace(b.Label) == "":
		return fmt.Errorf("%w: button with data %q has no label", ErrBadMessage, b.Data)
	case b.Data == "":
		return fmt.Errorf("%w: button %q has no data", ErrBadMessage, b.Label)
	case len(b.Data) > MaxButtonData:
		return fmt.Errorf("%w: button %q: data is %d bytes, at most %d", ErrBadMessage, b.Label, len(b.Data), MaxButtonData)
	}
	return nil
}

// Buttons is implemented by adapters whose platform shows buttons under a
// message and reports presses on them (Telegram inline keyboards and
// callback queries, Discord message components and interactions, Slack
// Block Kit buttons and block_actions, the web chat's buttons). A press
// reaches the gateway through Host.Press; the adapter acknowledges the
// platform (answerCallbackQuery, the interaction response within Discord's
// 3 s, the 200 to Slack's interactivity request) with the answer Press
// returned, shown privately to the presser where the platform can.
type Buttons interface {
	// SendButtons posts m (Markdown, within Limits.MaxText) with buttons
	// in one row under it and returns its platform id.
	SendButtons(ctx context.Context, m Outbound, buttons []Button) (MessageID, error)
	// EditButtons replaces the text of a message sent by SendButtons and
	// its buttons; nil buttons removes them (after a decision, or when the
	// request expired).
	EditButtons(ctx context.Context, m MessageRef, text string, buttons []Button) error
}

// Press is a press of a Button, normalized.
type Press struct {
	Chat       JID
	Topic      string    // thread / forum topic of the message, if any
	Message    MessageID // the message carrying the button ("" when the platform does not say)
	Sender     JID       // who pressed, a JID minted like an Inbound's Sender
	SenderName string
	Data       string // the Button's Data
}

// Validate says what is wrong with p.
func (p Press) Validate() error {
	switch {
	case p.Data == "":
		return fmt.Errorf("%w: press without data", ErrBadMessage)
	case p.Sender == "":
		return fmt.Errorf("%w: press of %q without a sender", ErrBadMessage, p.Data)
	}
	if err := p.Sender.Validate(); err != nil {
		return fmt.Errorf("press sender: %w", err)
	}
	if p.Chat != "" {
		if err := p.Chat.Validate(); err != nil {
			return fmt.Errorf("press chat: %w", err)
		}
	}
	return nil
}
