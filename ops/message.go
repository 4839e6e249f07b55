package ops

import (
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// StoreMessage converts an inbound event that passed Validate to the
// message the store keeps: text capped (store.CapText), a zero time set to
// now, any verb but a mention stored as a plain message.
func StoreMessage(in adapters.Inbound) store.Message {
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
	}
}
