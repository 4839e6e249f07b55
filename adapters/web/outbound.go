package web

import (
	"context"
	"fmt"
	"sync"

	"switchboard/adapters"
)

// Send "delivers" a bot message: the page shows it once the gateway has
// stored it and called Stored. It returns a fresh unique id ("b-…") for the
// gateway to store the message under. It does not block. A chat that is not
// a valid web room is an error wrapping adapters.ErrPermanent.
func (a *Adapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("web: send %s: %w", m.Chat, err)
	}
	if _, err := roomOf(m.Chat); err != nil {
		return "", fmt.Errorf("web: send %s: %w: %w", m.Chat, err, adapters.ErrPermanent)
	}
	return adapters.MessageID("b-" + randomID()), nil
}

// Stored implements adapters.Watcher: it wakes the event streams open on
// chat so they read the new message from History. It never blocks.
func (a *Adapter) Stored(chat adapters.JID, seq int64) {
	if chat.Platform() != platform {
		return
	}
	a.hub.wake(chat)
}

// hub tracks the event streams open on each room.
type hub struct {
	mu    sync.Mutex
	rooms map[adapters.JID]map[*subscriber]struct{}
}

// subscriber is one open event stream; wake has room for one pending signal,
// so many Stored calls between two reads coalesce into one.
type subscriber struct {
	wake chan struct{}
}

func (h *hub) subscribe(chat adapters.JID) *subscriber {
	s := &subscriber{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.rooms[chat]
	if subs == nil {
		subs = make(map[*subscriber]struct{})
		h.rooms[chat] = subs
	}
	subs[s] = struct{}{}
	return s
}

func (h *hub) unsubscribe(chat adapters.JID, s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.rooms[chat], s)
	if len(h.rooms[chat]) == 0 {
		delete(h.rooms, chat)
	}
}

func (h *hub) wake(chat adapters.JID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.rooms[chat] {
		select {
		case s.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}
