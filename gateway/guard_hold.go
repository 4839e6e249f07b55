package gateway

import (
	"context"
	"time"

	"switchboard/control"
	"switchboard/store"
)

// holdChat defers b's chat and topic until until (store time; wait from
// now): its messages stay queued and run as one batch afterwards, the
// folder's other chats go on. It queues notice to the chat (unless empty)
// (key makes it once per key; "" is a new key each time) and wakes the
// folder when the wait is over. The flood limits, the web-room loop guard
// and budgets all hold a chat through it.
func (g *Gateway) holdChat(ctx context.Context, b store.Batch, until time.Time, wait time.Duration, notice, key string) error {
	if err := g.st.DeferChat(ctx, b.Folder, b.ChatJID, b.Topic, until); err != nil {
		return err
	}
	if notice != "" {
		if key == "" {
			key = store.NewID("hold-")
		}
		req := control.SendRequest{Chat: b.ChatJID, Topic: b.Topic, Folder: b.Folder, Text: notice, Kind: store.OutboxNotice, Key: key}
		if _, err := g.send(ctx, req); err != nil {
			g.log.Error("tell the held chat", "folder", b.Folder, "jid", b.ChatJID, "err", err)
		}
	}
	g.workers.kickAfter(b.Folder, wait)
	return nil
}

// withheld reports whether b's turn is not to run now, deciding in this
// order: a chain of agent-started turns too deep is stopped (recorded as
// failed); a used-up budget holds the chat (or skips a task run); then a
// flood limit holds it; then the web-room loop guard pauses it. The flood
// and loop counts are taken last, so a turn a budget holds is counted by
// neither.
func (g *Gateway) withheld(ctx context.Context, b store.Batch, turn store.Turn) bool {
	return g.stopChain(ctx, b, turn) || g.holdForBudget(ctx, b) || g.holdFlood(ctx, b) || g.pauseLoop(ctx, b)
}
