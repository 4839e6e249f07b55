package adapters

import (
	"fmt"
	"unicode/utf8"
)

// MaxInboundText is the largest text an adapter may deliver at all: more is
// garbage, refused rather than cut.
const MaxInboundText = 1 << 20

// Validate says whether the gateway may store in: nil, or an error wrapping
// ErrBadMessage that says what was wrong and where (kind, id and chat).
func (in Inbound) Validate() error {
	bad := func(format string, args ...any) error {
		where := fmt.Sprintf("%s %q in %q", in.Kind.Name(), in.ID, in.Chat)
		return fmt.Errorf("%w: %s: %s", ErrBadMessage, where, fmt.Sprintf(format, args...))
	}
	switch in.Kind {
	case "", KindMessage, KindEdit, KindDelete, KindReaction:
	default:
		return bad("unknown kind %q (want message, edit, delete or reaction)", in.Kind)
	}
	if err := in.Chat.Validate(); err != nil {
		return bad("chat: %v", err)
	}
	if in.ID == "" || len(in.ID) > 256 || !utf8.ValidString(string(in.ID)) {
		return bad("message id must be 1 to 256 bytes of UTF-8")
	}
	needSender := in.Kind != KindDelete && in.Kind != KindEdit
	if in.Sender != "" || needSender {
		if err := in.Sender.Validate(); err != nil {
			return bad("sender: %v", err)
		}
	}
	if len(in.Text) > MaxInboundText {
		return bad("text is %d bytes, more than the %d an adapter may deliver", len(in.Text), MaxInboundText)
	}
	for _, f := range []struct{ name, v string }{{"text", in.Text}, {"sender name", in.SenderName}, {"topic", in.Topic}, {"reply_to", string(in.ReplyTo)}} {
		if i := invalidUTF8At(f.v); i >= 0 {
			return bad("%s is not valid UTF-8 (byte %d)", f.name, i)
		}
	}
	if in.Kind == KindReaction && (in.Reaction == "" || len(in.Reaction) > 128 || !utf8.ValidString(in.Reaction)) {
		return bad("a reaction needs an emoji of 1 to 128 bytes")
	}
	return nil
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
