package adapters

import (
	"errors"
	"strings"
	"testing"
)

// Validate accepts every kind of well-formed event and refuses garbage with
// ErrBadMessage, saying what was wrong and where (kind, id, chat).
func TestInboundValidate(t *testing.T) {
	ok := Inbound{Chat: "web:lobby", ID: "m1", Sender: "web:user/ann", Text: "hi"}
	for _, tc := range []struct {
		name string
		edit func(in *Inbound)
		want string // "" when valid
	}{
		{"message", func(*Inbound) {}, ""},
		{"edit without sender", func(in *Inbound) { in.Kind, in.Sender = KindEdit, "" }, ""},
		{"delete without sender", func(in *Inbound) { in.Kind, in.Sender = KindDelete, "" }, ""},
		{"reaction", func(in *Inbound) { in.Kind, in.Reaction = KindReaction, "👍" }, ""},
		{"unknown kind", func(in *Inbound) { in.Kind = "poke" }, `poke "m1" in "web:lobby": unknown kind "poke"`},
		{"bad chat", func(in *Inbound) { in.Chat = "lobby" }, `message "m1" in "lobby": chat: invalid JID`},
		{"empty id", func(in *Inbound) { in.ID = "" }, `message "" in "web:lobby": message id must be 1 to 256 bytes`},
		{"message without sender", func(in *Inbound) { in.Sender = "" }, "sender: invalid JID: empty"},
		{"huge text", func(in *Inbound) { in.Text = strings.Repeat("a", MaxInboundText+1) }, "text is 1048577 bytes"},
		{"invalid reply_to", func(in *Inbound) { in.ReplyTo = "a\xff" }, "reply_to is not valid UTF-8 (byte 1)"},
		{"reaction without emoji", func(in *Inbound) { in.Kind = KindReaction }, `reaction "m1" in "web:lobby": a reaction needs an emoji`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ok
			tc.edit(&in)
			err := in.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v; want nil", err)
			case tc.want != "" && (!errors.Is(err, ErrBadMessage) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v; want ErrBadMessage saying %q", err, tc.want)
			}
		})
	}
}

func TestKindName(t *testing.T) {
	for k, want := range map[Kind]string{"": "message", KindMessage: "message", KindEdit: "edit", KindReaction: "reaction", "poke": "poke"} {
		if got := k.Name(); got != want {
			t.Errorf("Kind(%q).Name() = %q; want %q", k, got, want)
		}
	}
}
