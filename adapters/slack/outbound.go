package slack

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

// threadOf is where a message goes: the topic's thread, else (a reply) the
// thread of the replied message, which starts one under it. In a DM a reply
// to a top-level message stays in the conversation: a DM is one
// conversation already, and answers hidden in threads would be missed.
func threadOf(m adapters.Outbound, kind string) string {
	if m.Topic != "" || kind == "dm" {
		return m.Topic
	}
	return string(m.ReplyTo)
}

// ReplyTopic is the thread a reply lands in (adapters.Threader): in a
// channel, a reply to a top-level message starts a thread under it.
func (a *Adapter) ReplyTopic(m adapters.Outbound) string {
	if m.Topic != "" || m.ReplyTo == "" {
		return ""
	}
	_, kind, err := channelOf(m.Chat)
	if err != nil {
		return ""
	}
	return threadOf(m, kind)
}

// Send posts one part, rendered to mrkdwn, in its thread.
func (a *Adapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	channel, kind, err := a.address(ctx, "send", m.Chat)
	if err != nil {
		return "", err
	}
	post := func(opts ...slack.MsgOption) (string, error) {
		if ts := threadOf(m, kind); ts != "" {
			opts = append(opts, slack.MsgOptionTS(ts))
		}
		if err := a.tiers.wait(ctx, "chat.postMessage", channel); err != nil {
			return "", err
		}
		_, ts, err := a.api.PostMessageContext(ctx, channel, opts...)
		return ts, err
	}
	ts, err := post(slack.MsgOptionText(shown(markdown.SlackMrkdwn(m.Text), m.Text), false))
	if isFormatError(err) {
		ts, err = post(slack.MsgOptionText(shown(markdown.SlackPlain(m.Text), m.Text), false), slack.MsgOptionDisableMarkdown())
	}
	return adapters.MessageID(ts), classify("send", m.Chat, err)
}

// shown is rendered, or the reply's own text where its rendering shows
// nothing (bare markup such as "[]()" or "#"): Slack refuses a message
// without text for good (no_text), and the reply would be lost.
func shown(rendered, text string) string {
	if strings.TrimSpace(rendered) == "" {
		return text
	}
	return rendered
}

// Edit replaces a bot message's text (chat.update).
func (a *Adapter) Edit(ctx context.Context, ref adapters.MessageRef, text string) error {
	channel, _, err := a.address(ctx, "edit", ref.Chat)
	if err != nil {
		return err
	}
	if err := a.tiers.wait(ctx, "chat.update", channel); err != nil {
		return err
	}
	_, _, _, err = a.api.UpdateMessageContext(ctx, channel, string(ref.ID), slack.MsgOptionText(shown(markdown.SlackMrkdwn(text), text), false))
	if isFormatError(err) {
		_, _, _, err = a.api.UpdateMessageContext(ctx, channel, string(ref.ID), slack.MsgOptionText(shown(markdown.SlackPlain(text), text), false),
			slack.MsgOptionDisableMarkdown())
	}
	return classify("edit", ref.Chat, err)
}

// Delete deletes a message (chat.delete).
func (a *Adapter) Delete(ctx context.Context, ref adapters.MessageRef) error {
	channel, _, err := a.address(ctx, "delete", ref.Chat)
	if err != nil {
		return err
	}
	if err := a.tiers.wait(ctx, "chat.delete", channel); err != nil {
		return err
	}
	_, _, err = a.api.DeleteMessageContext(ctx, channel, string(ref.ID))
	return classify("delete", ref.Chat, err)
}

// React adds an emoji by name (reactions.add); ":thumbsup:" and "thumbsup"
// are the same, and so is "👍" (adapters.EmojiName). Reacting twice is not an error.
func (a *Adapter) React(ctx context.Context, ref adapters.MessageRef, reaction string) error {
	channel, _, err := a.address(ctx, "like", ref.Chat)
	if err != nil {
		return err
	}
	name := adapters.EmojiName(reaction)
	if name == "" {
		return fmt.Errorf("%w: slack like: empty emoji name", adapters.ErrPermanent)
	}
	if err := a.tiers.wait(ctx, "reactions.add", channel); err != nil {
		return err
	}
	err = a.api.AddReactionContext(ctx, name, slack.NewRefToMessage(channel, string(ref.ID)))
	if isCode(err, "already_reacted") {
		err = nil
	}
	return classify("like", ref.Chat, err)
}

// Pin pins a message (pins.add); pinning twice is not an error.
func (a *Adapter) Pin(ctx context.Context, ref adapters.MessageRef) error {
	channel, _, err := a.address(ctx, "pin", ref.Chat)
	if err != nil {
		return err
	}
	if err := a.tiers.wait(ctx, "pins.add", channel); err != nil {
		return err
	}
	err = a.api.AddPinContext(ctx, channel, slack.NewRefToMessage(channel, string(ref.ID)))
	if isCode(err, "already_pinned") {
		err = nil
	}
	return classify("pin", ref.Chat, err)
}

// Unpin unpins a message (pins.remove); a message not pinned is not an error.
func (a *Adapter) Unpin(ctx context.Context, ref adapters.MessageRef) error {
	channel, _, err := a.address(ctx, "unpin", ref.Chat)
	if err != nil {
		return err
	}
	if err := a.tiers.wait(ctx, "pins.remove", channel); err != nil {
		return err
	}
	err = a.api.RemovePinContext(ctx, channel, slack.NewRefToMessage(channel, string(ref.ID)))
	if isCode(err, "no_pin") {
		err = nil
	}
	return classify("unpin", ref.Chat, err)
}

// SendFile uploads through the external upload flow
// (files.getUploadURLExternal, the upload, files.completeUploadExternal)
// into the chat and thread, with the caption as its comment. It returns the
// ts of the message that shares the file (from files.info), or the file id
// when Slack has not shared it yet (sharing is asynchronous).
func (a *Adapter) SendFile(ctx context.Context, m adapters.Outbound, f adapters.File) (adapters.MessageID, error) {
	channel, kind, err := a.address(ctx, "send_file", m.Chat)
	if err != nil {
		return "", err
	}
	if f.Size <= 0 {
		return "", fmt.Errorf("%w: slack send_file %s: Slack refuses empty files", adapters.ErrPermanent, f.Name)
	}
	p := slack.UploadFileParameters{Filename: f.Name, Title: f.Name, FileSize: int(f.Size), Reader: f.Content,
		Channel: channel, ThreadTimestamp: threadOf(m, kind)}
	if strings.TrimSpace(m.Text) != "" {
		p.InitialComment = markdown.SlackMrkdwn(m.Text)
	}
	if err := a.tiers.wait(ctx, "files.getUploadURLExternal", channel); err != nil {
		return "", err
	}
	if err := a.tiers.wait(ctx, "files.completeUploadExternal", channel); err != nil {
		return "", err
	}
	sum, err := a.api.UploadFileContext(ctx, p)
	if err != nil {
		return "", classify("send_file", m.Chat, err)
	}
	return adapters.MessageID(a.shareTS(ctx, sum.ID, channel)), nil
}

// shareTS finds the message that shared file in channel: a few quick looks
// at files.info, then the file id.
func (a *Adapter) shareTS(ctx context.Context, file, channel string) string {
	for try := range 3 {
		if try > 0 {
			t := time.NewTimer(time.Duration(try) * 300 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return file
			case <-t.C:
			}
		}
		if a.tiers.wait(ctx, "files.info", "") != nil {
			return file
		}
		f, _, _, err := a.api.GetFileInfoContext(ctx, file, 0, 0)
		if err != nil {
			return file
		}
		for _, shares := range []map[string][]slack.ShareFileInfo{f.Shares.Public, f.Shares.Private} {
			if s := shares[channel]; len(s) > 0 && s[0].Ts != "" {
				return s[0].Ts
			}
		}
	}
	return file
}
