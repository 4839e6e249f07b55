package gateway

import (
	"context"
	"log/slog"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// deferStore is what chatHolder needs of the store.
type deferStore interface {
	DeferChat(ctx context.Context, folder groups.Folder, chat adapters.JID, topic string, until time.Time) error
}

// chatHolder holds a chat: the flood limits, the web-room loop guard and
// budgets all hold one through it.
type chatHolder struct {
	st        deferStore
	send      func(context.Context, ops.SendRequest) (store.OutboxItem, error) // queue a notice (outbox.send)
	kickAfter func(folder groups.Folder, d time.Duration)                      // wake the folder later (workers.kickAfter)
	log       *slog.Logger
}

// hold defers b's chat and topic until until (store time; wait from now):
// its messages stay queued and run as one batch afterwards, the folder's
// other chats go on. It queues notice to the chat (unless empty) (key
// makes it once per key; "" is a new key each time) and wakes the folder
// when the wait is over.
func (h chatHolder) hold(ctx context.Context, b store.Batch, until time.Time, wait time.Duration, notice, key string) error {
	if err := h.st.DeferChat(ctx, b.Folder, b.ChatJID, b.Topic, until); err != nil {
		return err
	}
	if notice != "" {
		if key == "" {
			key = store.NewID("hold-")
		}
		req := ops.SendRequest{Chat: b.ChatJID, Topic: b.Topic, Folder: b.Folder, Text: notice, Kind: store.OutboxNotice, Key: key}
		if _, err := h.send(ctx, req); err != nil {
			h.log.Error("tell the held chat", "folder", b.Folder, "jid", b.ChatJID, "err", err)
		}
	}
	h.kickAfter(b.Folder, wait)
	return nil
}
