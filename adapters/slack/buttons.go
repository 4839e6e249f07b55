package slack

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

var _ adapters.Buttons = (*Adapter)(nil)

// InteractivityPath is where Slack posts button presses in Events API mode:
// the app's Interactivity & Shortcuts → Request URL.
const InteractivityPath = "/slack/interactivity"

// Block Kit limits: a section's text, a button's label.
const (
	maxSection = 3000
	// maxSections bounds the sections of a message's text (Slack takes
	// 50 blocks; MaxText needs 2).
	maxSections = 4
	maxLabel    = 75
	maxAnswer   = 4000
	// answerWithin bounds the ephemeral answer, posted before the press
	// is acknowledged (Slack wants that within 3 s).
	answerWithin = 2 * time.Second
)

// blocks is a message with buttons: the text in sections (of at most
// maxSection characters each: a live reply's text may be up to MaxText)
// and, when there are buttons, an actions block of them (action_id and
// value = Data).
func blocks(text string, plain bool, buttons []adapters.Button) ([]slack.Block, error) {
	kind, body := slack.MarkdownType, markdown.SlackMrkdwn(text)
	if plain {
		kind, body = slack.PlainTextType, markdown.SlackPlain(text)
	}
	var out []slack.Block
	for _, part := range sections(body) {
		out = append(out, slack.NewSectionBlock(slack.NewTextBlockObject(kind, part, false, false), nil, nil))
	}
	if len(buttons) == 0 {
		return out, nil
	}
	var elems []slack.BlockElement
	for _, b := range buttons {
		if err := b.Validate(); err != nil {
			return nil, err
		}
		e := slack.NewButtonBlockElement(b.Data, b.Data, slack.NewTextBlockObject(slack.PlainTextType, adapters.Shorten(b.Label, maxLabel), false, false))
		switch b.Style {
		case adapters.StylePrimary:
			e.Style = slack.StylePrimary
		case adapters.StyleDanger:
			e.Style = slack.StyleDanger
		}
		elems = append(elems, e)
	}
	return append(out, slack.NewActionBlock("buttons", elems...)), nil
}

// sections splits s into parts of at most maxSection characters, at a
// line break where there is one in the part's second half; at most
// maxSections parts, the last cut.
func sections(s string) []string {
	r := []rune(s)
	var out []string
	for len(r) > maxSection && len(out) < maxSections-1 {
		n := maxSection
		for i := maxSection - 1; i > maxSection/2; i-- {
			if r[i] == '\n' {
				n = i + 1
				break
			}
		}
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, adapters.Shorten(string(r), maxSection))
}

// SendButtons posts m as Block Kit: its text in a section, the buttons in
// an actions block; the text is also the notification's fallback.
func (a *Adapter) SendButtons(ctx context.Context, m adapters.Outbound, buttons []adapters.Button) (adapters.MessageID, error) {
	channel, kind, err := a.address(ctx, "send", m.Chat)
	if err != nil {
		return "", err
	}
	post := func(plain bool) (string, error) {
		bl, err := blocks(m.Text, plain, buttons)
		if err != nil {
			return "", err
		}
		opts := []slack.MsgOption{slack.MsgOptionText(markdown.SlackPlain(m.Text), false), slack.MsgOptionBlocks(bl...)}
		if ts := threadOf(m, kind); ts != "" {
			opts = append(opts, slack.MsgOptionTS(ts))
		}
		if err := a.tiers.wait(ctx, "chat.postMessage", channel); err != nil {
			return "", err
		}
		_, ts, err := a.api.PostMessageContext(ctx, channel, opts...)
		return ts, err
	}
	ts, err := post(false)
	if isFormatError(err) {
		ts, err = post(true)
	}
	if errors.Is(err, adapters.ErrBadMessage) {
		return "", err
	}
	return adapters.MessageID(ts), classify("send", m.Chat, err)
}

// EditButtons replaces a message's text and buttons (chat.update); nil
// buttons leaves the section alone, without the actions block.
func (a *Adapter) EditButtons(ctx context.Context, ref adapters.MessageRef, text string, buttons []adapters.Button) error {
	channel, _, err := a.address(ctx, "edit", ref.Chat)
	if err != nil {
		return err
	}
	update := func(plain bool) error {
		bl, err := blocks(text, plain, buttons)
		if err != nil {
			return err
		}
		if err := a.tiers.wait(ctx, "chat.update", channel); err != nil {
			return err
		}
		_, _, _, err = a.api.UpdateMessageContext(ctx, channel, string(ref.ID),
			slack.MsgOptionText(markdown.SlackPlain(text), false), slack.MsgOptionBlocks(bl...))
		return err
	}
	err = update(false)
	if isFormatError(err) {
		err = update(true)
	}
	if errors.Is(err, adapters.ErrBadMessage) {
		return err
	}
	return classify("edit", ref.Chat, err)
}

// interactivityHandler takes a press over the Events API: a form with
// payload=<json>, signed like events (refused 401 when it is not). The
// answer is posted ephemerally before the 200.
func (a *Adapter) interactivityHandler(host adapters.Host) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := a.verified(w, r)
		if !ok {
			return
		}
		form, err := url.ParseQuery(string(body))
		var cb slack.InteractionCallback
		if err == nil {
			err = json.Unmarshal([]byte(form.Get("payload")), &cb)
		}
		if err != nil {
			a.log.Warn("slack interactivity request refused: no payload", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "no payload", http.StatusBadRequest)
			return
		}
		a.interaction(r.Context(), host, cb)
	})
}

// interaction hands each button of a block_actions payload to the gateway
// and posts its answer where only the presser sees it. Other interactions
// (shortcuts, views) are acknowledged and ignored.
func (a *Adapter) interaction(ctx context.Context, host adapters.Host, cb slack.InteractionCallback) {
	if cb.Type != slack.InteractionTypeBlockActions {
		return
	}
	team := cb.Team.ID
	if team == "" {
		team, _, _ = a.identity()
	}
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	for _, act := range cb.ActionCallback.BlockActions {
		p := adapters.Press{Sender: userJID(team, cb.User.ID), SenderName: cb.User.Name, Data: act.Value,
			Message: adapters.MessageID(cb.Container.MessageTs), Topic: cb.Container.ThreadTs}
		if p.Data == "" {
			p.Data = act.ActionID
		}
		if channel != "" {
			p.Chat = a.chat(ctx, team, channel, "")
		}
		if cb.User.ID == "" || channel == "" {
			p.Data = "" // nobody to answer, nowhere: acknowledged, dropped
		}
		answer, err := adapters.PressAnswer(ctx, host, p)
		if err != nil {
			a.log.Warn("slack button press not taken; the presser was asked to try again", "jid", p.Chat, "sender", p.Sender, "err", err)
		}
		if answer != "" {
			a.answer(ctx, channel, cb.User.ID, p.Topic, answer)
		}
	}
}

// answer posts text to user alone in channel (chat.postEphemeral).
func (a *Adapter) answer(ctx context.Context, channel, user, thread, text string) {
	ctx, cancel := context.WithTimeout(ctx, answerWithin)
	defer cancel()
	opts := []slack.MsgOption{slack.MsgOptionText(adapters.Shorten(text, maxAnswer), false)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	err := a.tiers.wait(ctx, "chat.postEphemeral", channel)
	if err == nil {
		_, err = a.api.PostEphemeralContext(ctx, channel, user, opts...)
	}
	if err != nil {
		a.log.Warn("slack answer to a button press not posted", "channel", channel, "user", user, "err", err)
	}
}
