package discord

import (
	"context"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

var _ adapters.Streamer = (*Adapter)(nil)

// StartLive implements adapters.Streamer. Discord has no drafts: the live
// reply is an adapters.EditLive, one message sent at the first update
// where Send puts it (the thread of the topic, as a reply to m.ReplyTo)
// and edited at the next ones, its mentions restricted as Send's; the
// final is its last edit and Abort deletes it. It does not call Discord;
// a chat that is not Discord's wraps adapters.ErrPermanent.
func (a *Adapter) StartLive(_ context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	if _, err := channelOf(m.Chat, m.Topic); err != nil {
		return nil, err
	}
	return &adapters.EditLive{Out: m, Send: a.Send, Edit: a.Edit, Delete: a.Delete, Render: partial}, nil
}

// partial is an unfinished text with markdown.Partial closing what the
// cut left open (a code fence, a code span, emphasis), or the text as it
// is when the closers would not fit in a message.
func partial(text string) string {
	if src := markdown.Partial(text); utf8.RuneCountInString(src) <= maxText {
		return src
	}
	return text
}
