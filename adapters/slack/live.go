package slack

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

// StartLive implements adapters.Streamer. In a thread, when it is known
// whom the reply answers (m.ReplyToSender, a user of the chat's workspace;
// anyone in a DM), the live reply is a Slack stream
// (chat.startStream at the first update, chat.appendStream of what each
// update adds, chat.stopStream with the rest of the final): the streamed
// message is the final. Anywhere else, and once Slack refused streams to
// this app, it is one message posted at the first update and edited
// (chat.update) after; the final is its last edit. That message carries
// m.Buttons (adapters.ButtonCarrier: the turn's Stop button) as a Block Kit
// actions block under its text until the final's edit takes it away; a
// stream carries none. It does not call Slack; a chat that is not Slack's
// wraps adapters.ErrPermanent.
func (a *Adapter) StartLive(_ context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	channel, kind, err := a.channelIn(m.Chat)
	if err != nil {
		return nil, err
	}
	l := &live{a: a, out: m, channel: channel}
	if thread := threadOf(m, kind); thread != "" && !a.noStreams.Load() {
		team := strings.Split(m.Chat.Room(), "/")[0]
		user := recipient(m, team)
		if user != "" || kind == "dm" {
			l.thread, l.user, l.team = thread, user, team
		}
	}
	return l, nil
}

// recipient is the Slack user id of m.ReplyToSender when it is a user of
// team, else "" (a stream in a channel needs whom it answers).
func recipient(m adapters.Outbound, team string) string {
	if m.ReplyTo == "" || m.ReplyToSender.Platform() != "slack" {
		return ""
	}
	t, user, ok := strings.Cut(m.ReplyToSender.Room(), "/user/")
	if !ok || t != team || user == "" {
		return ""
	}
	return user
}

// live is one turn's live reply in a Slack chat.
type live struct {
	a       *Adapter
	out     adapters.Outbound
	channel string
	// thread, user and team are where the stream starts and whom it
	// answers; thread "" before the first update: a message edited in place.
	thread, user, team string

	mu        sync.Mutex
	ts        string // the live message: the stream, or the message posted and edited
	streaming bool   // ts is a stream Slack has not stopped
	streamed  bool   // ts shows the stream's Markdown, sent (no edit replaced it)
	sent      string // the Markdown the stream holds
	shown     string // the mrkdwn the last edit showed: an update that renders the same sends nothing
	buttoned  bool   // ts shows out.Buttons
	finished  bool
	aborted   bool
}

// Update shows text: by appending what it adds to the stream, or by posting
// or editing the live message, rendered with markdown.Partial. An update
// that does not extend what the stream holds (the text was replaced, a
// progress line went away) stops the stream, and the message is edited
// from then on.
func (l *live) Update(ctx context.Context, text string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.aborted {
		return fmt.Errorf("slack: update live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	}
	if strings.TrimSpace(text) == "" {
		return nil
	}
	if l.thread != "" && l.ts == "" {
		t := streamText(text)
		if strings.TrimSpace(t) == "" {
			return nil
		}
		if err := l.due("chat.postMessage"); err != nil {
			return err
		}
		err := l.start(ctx, t)
		if err == nil || !streamRefused(err) {
			return classify("live", l.out.Chat, err)
		}
		l.refused(err)
	}
	if l.streaming {
		if delta, grows := strings.CutPrefix(streamText(text), l.sent); grows {
			if delta == "" {
				return nil
			}
			if err := l.due("chat.appendStream"); err != nil {
				return err
			}
			if err := l.append(ctx, delta); err != nil || l.streaming {
				return err
			}
		} else if err := l.due("chat.stopStream", "chat.update"); err != nil {
			return err
		} else if err := l.end(ctx, "", false); err != nil { // a replace: stop the stream, then edit it
			return err
		}
	}
	src := markdown.Partial(text)
	mrkdwn := markdown.SlackMrkdwn(src)
	if mrkdwn == l.shown {
		return nil
	}
	method := "chat.update"
	if l.ts == "" {
		method = "chat.postMessage"
	}
	if err := l.due(method); err != nil {
		return err
	}
	return l.edit(ctx, src, mrkdwn, false)
}

// CarriesButtons implements adapters.ButtonCarrier: a live reply started
// with buttons carries them where it is a message posted and edited, not a
// stream (true from when Slack refused the stream).
func (l *live) CarriesButtons() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.carries()
}

func (l *live) carries() bool { return len(l.out.Buttons) > 0 && l.thread == "" }

// due refuses an update whose requests (methods) the adapter's tiers
// would hold now, with adapters.NotDue's RetryAfterError: sent after the
// wait its text would be old, while the caller's next update, once due,
// carries the newest.
func (l *live) due(methods ...string) error {
	var d time.Duration
	for _, m := range methods {
		d = max(d, l.a.tiers.due(m, l.channel))
	}
	return adapters.NotDue(d)
}

// Finish ends the stream with the rest of text, or makes text the live
// message's last edit, or posts it when nothing was shown.
func (l *live) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.aborted:
		return "", fmt.Errorf("slack: finish live reply in %s: %w", l.out.Chat, adapters.ErrLiveEnded)
	case l.finished:
		return adapters.MessageID(l.ts), nil
	}
	if l.streaming {
		delta, grows := strings.CutPrefix(text, l.sent)
		if err := l.end(ctx, delta, grows); err != nil {
			return "", err
		}
	}
	if !l.streamed || l.sent != text {
		if err := l.edit(ctx, text, markdown.SlackMrkdwn(text), true); err != nil {
			return "", err
		}
	}
	l.finished = true
	return adapters.MessageID(l.ts), nil
}

// Abort deletes the live message, streamed or posted.
func (l *live) Abort(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.aborted {
		return nil
	}
	if l.ts != "" {
		if err := l.a.Delete(ctx, adapters.MessageRef{Chat: l.out.Chat, Topic: l.out.Topic, ID: adapters.MessageID(l.ts)}); err != nil {
			return err
		}
	}
	l.aborted = true
	return nil
}

// refused turns the live reply into an edited message after Slack refused
// its stream with err. An error that says this app may not stream at all
// stops the adapter asking until it restarts (logged once).
func (l *live) refused(err error) {
	l.thread = ""
	for _, code := range []string{"unknown_method", "not_allowed", "not_allowed_token_type", "missing_scope"} {
		if isCode(err, code) {
			if !l.a.noStreams.Swap(true) {
				l.a.log.Warn("slack refused streams to this app; live replies edit a message instead", "jid", l.out.Chat, "err", err)
			}
			return
		}
	}
	l.a.log.Info("slack refused a stream; this live reply edits a message instead", "jid", l.out.Chat, "err", err)
}

// start starts the stream in the thread with text, paced as a message
// posted in the channel. It returns Slack's error unclassified, so that
// the caller can tell a refused stream.
func (l *live) start(ctx context.Context, text string) error {
	if err := l.a.tiers.wait(ctx, "chat.postMessage", l.channel); err != nil {
		return err
	}
	opts := []slack.MsgOption{slack.MsgOptionTS(l.thread), slack.MsgOptionMarkdownText(defang(text))}
	if l.user != "" {
		opts = append(opts, slack.MsgOptionRecipientUserID(l.user), slack.MsgOptionRecipientTeamID(l.team))
	}
	_, ts, err := l.a.api.StartStreamContext(ctx, l.channel, opts...)
	if err != nil {
		return err
	}
	l.ts, l.streaming, l.streamed, l.sent = ts, true, true, text
	return nil
}

// append adds delta to the stream. A stream Slack no longer takes appends
// to is taken as stopped: the caller edits its message.
func (l *live) append(ctx context.Context, delta string) error {
	if err := l.a.tiers.wait(ctx, "chat.appendStream", l.channel); err != nil {
		return err
	}
	_, _, err := l.a.api.AppendStreamContext(ctx, l.channel, l.ts, slack.MsgOptionMarkdownText(defang(delta)))
	switch {
	case err == nil:
		l.sent += delta
	case streamRefused(err):
		l.a.log.Info("slack ended a stream; the live reply edits its message instead", "jid", l.out.Chat, "err", err)
		l.streaming = false
	default:
		return classify("live", l.out.Chat, err)
	}
	return nil
}

// end stops the stream, with delta as its last chunk when grows. A stream
// Slack stopped already counts as stopped, its last chunk not shown.
func (l *live) end(ctx context.Context, delta string, grows bool) error {
	if err := l.a.tiers.wait(ctx, "chat.stopStream", l.channel); err != nil {
		return err
	}
	var opts []slack.MsgOption
	if grows && delta != "" {
		opts = append(opts, slack.MsgOptionMarkdownText(defang(delta)))
	}
	_, _, err := l.a.api.StopStreamContext(ctx, l.channel, l.ts, opts...)
	switch {
	case err == nil:
		if grows {
			l.sent += delta
		}
	case streamRefused(err):
		l.a.log.Info("slack ended a stream; the live reply edits its message instead", "jid", l.out.Chat, "err", err)
	default:
		return classify("live", l.out.Chat, err)
	}
	l.streaming = false
	return nil
}

// edit shows src (Markdown, rendered as mrkdwn) by posting the live
// message or editing it, unless it shows that already. The message carries
// the buttons (blocks) while it runs; final's edit takes them away (a
// final posted at once never had them).
func (l *live) edit(ctx context.Context, src, mrkdwn string, final bool) error {
	buttons := l.carries() && !final
	if mrkdwn == l.shown && buttons == l.buttoned {
		return nil
	}
	ref := adapters.MessageRef{Chat: l.out.Chat, Topic: l.out.Topic, ID: adapters.MessageID(l.ts)}
	var err error
	switch {
	case l.ts == "":
		m := l.out
		m.Text, m.Buttons = src, nil
		var id adapters.MessageID
		if buttons {
			id, err = l.a.SendButtons(ctx, m, l.out.Buttons)
		} else {
			id, err = l.a.Send(ctx, m)
		}
		l.ts = string(id)
	case buttons:
		err = l.a.EditButtons(ctx, ref, src, l.out.Buttons)
	case l.buttoned:
		err = l.a.EditButtons(ctx, ref, src, nil) // the blocks replaced: no actions block
	default:
		err = l.a.Edit(ctx, ref, src)
	}
	if err != nil {
		return err
	}
	l.shown, l.streamed, l.buttoned = mrkdwn, false, buttons
	return nil
}

// streamText is what of text a stream may carry now: a cut UTF-8 sequence
// and a trailing "<" wait for what follows them, so that nothing appended
// ever has to change (defang needs the character after a "<").
func streamText(text string) string {
	for i := len(text) - 1; i >= 0 && i >= len(text)-utf8.UTFMax; i-- {
		if utf8.RuneStart(text[i]) {
			if !utf8.FullRuneInString(text[i:]) {
				text = text[:i]
			}
			break
		}
	}
	return strings.TrimRight(text, "<")
}

var slackCommand = regexp.MustCompile(`<([!@#])`)

// defang escapes the "<" of what Slack could take for a mention or a
// command (<!channel>, <@U1>, <#C1>) in Markdown a stream carries, as
// Send's mrkdwn escapes every "<": agent output never pings a channel.
func defang(md string) string { return slackCommand.ReplaceAllString(md, "&lt;$1") }

// streamRefused: Slack answered a stream method with an error about the
// stream, not the chat, a rate limit or a passing failure: it will not
// stream here (or no longer takes this stream), and an edited message will
// do.
func streamRefused(err error) bool {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "not_in_channel", "channel_not_found", "is_archived", "ratelimited", "internal_error", "fatal_error",
			"service_unavailable", "request_timeout", "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired":
			return false
		}
		return true
	}
	var sc slack.StatusCodeError
	return errors.As(err, &sc) && sc.Code == 404
}

// Shown implements adapters.LiveShown: the stream while Slack streams it,
// else the message posted and edited.
func (l *live) Shown() (adapters.MessageRef, adapters.LiveMode, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	mode := adapters.LiveEdit
	switch {
	case l.streaming:
		mode = adapters.LiveStream
	case l.buttoned:
		mode = adapters.LiveEditButtons
	}
	return adapters.MessageRef{Chat: l.out.Chat, Topic: l.out.Topic, ID: adapters.MessageID(l.ts)}, mode, l.ts != "" && !l.finished && !l.aborted
}

// EndLive implements adapters.LiveEnder: a stream left by a gateway that
// died is stopped (chat.stopStream), so that it no longer shows as
// streaming; a stream Slack stopped already is no error. Other modes need
// nothing.
func (a *Adapter) EndLive(ctx context.Context, ref adapters.MessageRef, mode adapters.LiveMode) error {
	if mode != adapters.LiveStream {
		return nil
	}
	channel, _, err := channelOf(ref.Chat)
	if err != nil {
		return err
	}
	if err := a.tiers.wait(ctx, "chat.stopStream", channel); err != nil {
		return err
	}
	_, _, err = a.api.StopStreamContext(ctx, channel, string(ref.ID))
	if err != nil && !streamRefused(err) {
		return classify("end live", ref.Chat, err)
	}
	return nil
}
