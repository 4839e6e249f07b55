package gateway

import (
	"context"

	"switchboard/adapters"
	"switchboard/store"
)

// History serves stored messages to adapters that show them (the web chat).
type History struct{ Store *store.Store }

// Messages returns chat's messages with seq > after, ascending.
func (h History) Messages(ctx context.Context, chat adapters.JID, after int64, limit int) ([]adapters.Stored, error) {
	ms, err := h.Store.MessagesAfter(ctx, chat, after, limit)
	if err != nil {
		return nil, err
	}
	out := make([]adapters.Stored, len(ms))
	for i, m := range ms {
		out[i] = toStored(m)
	}
	return out, nil
}

// toStored converts a store message to the adapters' view of it.
func toStored(m store.Message) adapters.Stored {
	return adapters.Stored{Seq: m.Seq, Deleted: m.Deleted, Inbound: adapters.Inbound{
		Chat: m.ChatJID, ID: m.ID, Sender: m.Sender, SenderName: m.SenderName, Text: m.Text,
		Time: m.Time, Topic: m.Topic, ReplyTo: m.ReplyTo, Verb: m.Verb, FromBot: m.FromBot, Attachments: m.Attachments,
	}}
}
