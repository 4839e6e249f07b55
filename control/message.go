package control

import (
	"fmt"
	"time"
	"unicode/utf8"

	"switchboard/adapters"
	"switchboard/store"
)

// maxInboundText is the largest text an adapter may deliver at all: more is
// garbage, refused rather than cut.
const maxInboundText = 1 << 20

// Normalize validates an inbound event and converts it to a store message.
// Garbage gets an error wrapping adapters.ErrBadMessage that says what was wrong.
func Normalize(in adapters.Inbound) (store.Message, error) {
	bad := func(format string, args ...any) (store.Message, error) {
		where := fmt.Sprintf("%s %q in %q", kind(in.Kind), in.ID, in.Chat)
		return store.Message{}, fmt.Errorf("%w: %s: %s", adapters.ErrBadMessage, where, fmt.Sprintf(format, args...))
	}
	switch in.Kind {
	case "", adapters.KindMessage, adapters.KindEdit, adapters.KindDelete, adapters.KindReaction:
	default:
		return bad("unknown kind %q (want message, edit, delete or reaction)", in.Kind)
	}
	if err := in.Chat.Validate(); err != nil {
		return bad("chat: %v", err)
	}
	if in.ID == "" || len(in.ID) > 256 || !utf8.ValidString(string(in.ID)) {
		return bad("message id must be 1 to 256 bytes of UTF-8")
	}
	needSender := in.Kind != adapters.KindDelete && in.Kind != adapters.KindEdit
	if in.Sender != "" || needSender {
		if err := in.Sender.Validate(); err != nil {
			return bad("sender: %v", err)
		}
	}
	if len(in.Text) > maxInboundText {
		return bad("text is %d bytes, more than the %d an adapter may deliver", len(in.Text), maxInboundText)
	}
	for _, f := range []struct{ name, v string }{{"text", in.Text}, {"sender name", in.SenderName}, {"topic", in.Topic}, {"reply_to", string(in.ReplyTo)}} {
		if i := invalidUTF8At(f.v); i >= 0 {
			return bad("%s is not valid UTF-8 (byte %d)", f.name, i)
		}
	}
	if in.Kind == adapters.KindReaction && (in.Reaction == "" || len(in.Reaction) > 128 || !utf8.ValidString(in.Reaction)) {
		return bad("a reaction needs an emoji of 1 to 128 bytes")
	}
	t := in.Time
	if t.IsZero() {
		t = time.Now()
	}
	verb := in.Verb
	if verb != adapters.VerbMention {
		verb = adapters.VerbMessage
	}
	return store.Message{
		ChatJID: in.Chat, ID: in.ID, Sender: in.Sender, SenderName: in.SenderName,
		Text: store.CapText(in.Text), Topic: in.Topic, ReplyTo: in.ReplyTo, Verb: verb, FromBot: in.FromBot, OtherBot: in.OtherBot,
		Time: t, Attachments: in.Attachments,
	}, nil
}

// kind names an event kind for an error; the zero Kind is a message.
func kind(k adapters.Kind) string {
	if k == "" {
		return string(adapters.KindMessage)
	}
	return string(k)
}

// invalidUTF8At is the byte offset of the first invalid UTF-8 in s, or -1.
func invalidUTF8At(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return -1
}
