package web

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

var _ adapters.StoreDelivered = (*Adapter)(nil)

// DeliveredWhenStored implements adapters.StoreDelivered: a room shows
// the bot's message once the gateway stores it (Send only mints its id).
func (*Adapter) DeliveredWhenStored() {}

var _ adapters.Deleter = (*Adapter)(nil)

// Delete implements adapters.Deleter for the bot's own messages (ids
// "b-…" and "k-…"): it is stored as the bot's delete, and a "delete" event
// takes the message off the open pages and off pages that connect later
// (a page that read it before and connects after). It does not block on
// the pages. Any other id, or a chat that is not a valid web room, is an
// error wrapping adapters.ErrPermanent.
func (a *Adapter) Delete(ctx context.Context, ref adapters.MessageRef) error {
	if _, err := roomOf(ref.Chat); err != nil {
		return fmt.Errorf("web: delete %s: %w: %w", ref.Chat, err, adapters.ErrPermanent)
	}
	if id := ref.ID.String(); !strings.HasPrefix(id, "b-") && !strings.HasPrefix(id, buttonsPrefix) {
		return fmt.Errorf("web: delete %s in %s: not a message of the bot's: %w", ref.ID, ref.Chat, adapters.ErrPermanent)
	}
	if err := a.echo(ctx, adapters.Inbound{Kind: adapters.KindDelete, Chat: ref.Chat, ID: ref.ID, Topic: ref.Topic}); err != nil {
		return err
	}
	a.hub.edit(ref.Chat, draftView{Type: "delete", Turn: "edit:" + ref.ID.String(), ID: ref.ID})
	return nil
}

// Stored implements adapters.Watcher: it wakes the event streams open on
// chat so they read the new message from History. It never blocks.
func (a *Adapter) Stored(chat adapters.JID, seq int64) {
	if chat.Platform() != platform {
		return
	}
	a.hub.wake(chat)
}

// hub tracks the event streams open on each room, and the drafts of the
// live replies showing in each.
type hub struct {
	mu     sync.Mutex
	rooms  map[adapters.JID]map[*subscriber]struct{}
	drafts map[adapters.JID]map[string]draftView // by turn: what a page that connects now gets
	// edits are the latest edit and delete events of each chat (at most
	// maxEdits, one per message), replayed to a page that connects: it may
	// have read the message before the edit and connected after it. Only
	// the maxEditRooms chats edited last keep theirs.
	edits    map[adapters.JID]*roomEdits
	editTick uint64 // counts edits: roomEdits.tick orders the chats
}

// roomEdits are one chat's kept edit events and when it was last edited.
type roomEdits struct {
	events []draftView
	tick   uint64
}

const (
	// maxEdits bounds the edit events kept per chat for pages that connect.
	maxEdits = 32
	// maxEditRooms bounds the chats whose edit events are kept: past it,
	// the half edited longest ago are forgotten (a page reconnecting there
	// reads the history, which has the edits, but not the events).
	maxEditRooms = 1024
)

// subscriber is one open event stream; wake has room for one pending signal,
// so many Stored calls between two reads coalesce into one. drafts (guarded
// by hub.mu) are the draft events not yet written, at most one per turn:
// a newer text replaces an unwritten one.
type subscriber struct {
	wake   chan struct{}
	drafts []draftView
}

func (h *hub) subscribe(chat adapters.JID) *subscriber {
	s := &subscriber{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.drafts[chat] {
		s.drafts = append(s.drafts, d)
	}
	if e := h.edits[chat]; e != nil {
		s.drafts = append(s.drafts, e.events...)
	}
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
	h.wakeLocked(chat)
}

func (h *hub) wakeLocked(chat adapters.JID) {
	for s := range h.rooms[chat] {
		select {
		case s.wake <- struct{}{}:
		default: // a wake-up is already pending
		}
	}
}

// showDraft sends d to the room's streams and keeps it for streams that
// open later.
func (h *hub) showDraft(chat adapters.JID, d draftView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.drafts[chat] == nil {
		h.drafts[chat] = make(map[string]draftView)
	}
	h.drafts[chat][d.Turn] = d
	for s := range h.rooms[chat] {
		s.put(d)
	}
	h.wakeLocked(chat)
}

// endDraft forgets turn's draft: streams that have not written its last
// text yet never will, so no draft follows the final message; end, when
// not nil, is sent instead.
func (h *hub) endDraft(chat adapters.JID, turn string, end *draftView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.drafts[chat], turn)
	if len(h.drafts[chat]) == 0 {
		delete(h.drafts, chat)
	}
	for s := range h.rooms[chat] {
		s.drafts = slices.DeleteFunc(s.drafts, func(d draftView) bool { return d.Turn == turn })
		if end != nil {
			s.put(*end)
		}
	}
	if end != nil {
		h.wakeLocked(chat)
	}
}

// edit shows an edit or delete event on the chat's open pages and keeps it
// for the pages that connect later (the newest per message, maxEdits per
// chat: a delete replaces the message's edit).
func (h *hub) edit(chat adapters.JID, d draftView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.edits == nil {
		h.edits = map[adapters.JID]*roomEdits{}
	}
	e := h.edits[chat]
	if e == nil {
		h.forgetOldEdits()
		e = &roomEdits{}
		h.edits[chat] = e
	}
	h.editTick++
	e.tick = h.editTick
	kept := slices.DeleteFunc(e.events, func(e draftView) bool { return e.Turn == d.Turn })
	if len(kept) >= maxEdits {
		kept = kept[1:]
	}
	e.events = append(kept, d)
	for s := range h.rooms[chat] {
		s.put(d)
	}
	h.wakeLocked(chat)
}

// forgetOldEdits makes room for one more chat's edit events: with
// maxEditRooms kept, it forgets the half edited longest ago (so a chat
// never seen before costs a sort only once per maxEditRooms/2 of them);
// the caller holds h.mu.
func (h *hub) forgetOldEdits() {
	if len(h.edits) < maxEditRooms {
		return
	}
	ticks := make([]uint64, 0, len(h.edits))
	for _, e := range h.edits {
		ticks = append(ticks, e.tick)
	}
	slices.Sort(ticks)
	oldest := ticks[len(ticks)/2] // keep the newer half
	for chat, e := range h.edits {
		if e.tick < oldest {
			delete(h.edits, chat)
		}
	}
}

// takeDrafts returns and clears the drafts s has not written yet.
func (h *hub) takeDrafts(s *subscriber) []draftView {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := s.drafts
	s.drafts = nil
	return out
}

// put queues d, replacing an unwritten event of the same turn in place;
// the caller holds hub.mu.
func (s *subscriber) put(d draftView) {
	for i := range s.drafts {
		if s.drafts[i].Turn == d.Turn {
			s.drafts[i] = d
			return
		}
	}
	s.drafts = append(s.drafts, d)
}
