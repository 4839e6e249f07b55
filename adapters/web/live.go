package web

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"switchboard/adapters"
)

var _ adapters.Streamer = (*Adapter)(nil)

// draftView is a live reply as the room's event stream carries it: a
// "draft" shows Text in place of the turn's previous draft; a "draft_end"
// removes the turn's draft (the reply was aborted). ID is the id the final
// message is stored under: the page replaces the draft with the message of
// that id when it arrives. An "edit" (EditButtons) and a "delete" (Delete)
// change the shown message ID. Drafts are never stored, and their events carry
// no "id:" line, so they never move a stream's cursor.
type draftView struct {
	Type  string             `json:"type"` // "draft", "draft_end", "edit" or "delete"
	Turn  string             `json:"turn"`
	ID    adapters.MessageID `json:"id"`
	Name  string             `json:"name,omitempty"`
	Text  string             `json:"text,omitempty"`
	Topic string             `json:"topic,omitempty"`
	// Buttons: an "edit" event (EditButtons) replaces the text and the
	// buttons of the message ID, none meaning they are gone; a "draft"
	// shows them under the draft (the turn's Stop button: a press posts
	// the draft's ID as the message), and the final message has none.
	Buttons []buttonView `json:"buttons,omitempty"`
}

// StartLive implements adapters.Streamer: the live reply is draft objects on
// the room's event stream, its final the message the gateway stores under
// the id Finish returns (minted now, and carried by every draft). Every
// draft carries m.Buttons (adapters.ButtonCarrier). It does not block. A
// chat that is not a valid web room is an error wrapping
// adapters.ErrPermanent, an invalid button one wrapping
// adapters.ErrBadMessage; an empty turn is the message id.
func (a *Adapter) StartLive(ctx context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	if _, err := roomOf(m.Chat); err != nil {
		return nil, fmt.Errorf("web: start live reply in %s: %w: %w", m.Chat, err, adapters.ErrPermanent)
	}
	var buttons []buttonView
	for _, b := range m.Buttons {
		if err := b.Validate(); err != nil {
			return nil, fmt.Errorf("web: start live reply in %s: %w", m.Chat, err)
		}
		buttons = append(buttons, buttonView{Label: b.Label, Data: b.Data, Style: string(b.Style)})
	}
	id := adapters.MessageID("b-" + randomID())
	if turn == "" {
		turn = string(id)
	}
	return &live{a: a, chat: m.Chat, d: draftView{Type: "draft", Turn: turn, ID: id, Name: a.botName, Topic: m.Topic, Buttons: buttons}}, nil
}

// CarriesButtons implements adapters.ButtonCarrier: the draft shows the
// buttons the live reply was started with; its final message has none.
func (l *live) CarriesButtons() bool { return len(l.d.Buttons) > 0 }

// live is one turn's live reply in a web room. None of its methods block.
type live struct {
	a    *Adapter
	chat adapters.JID
	d    draftView

	mu       sync.Mutex
	finished bool
	aborted  bool
	shown    bool // a draft was sent to the pages (Update)
}

// Update shows text as the turn's draft on the pages open on the room.
func (l *live) Update(ctx context.Context, text string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("web: update live reply %s: %w", l.d.Turn, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.aborted {
		return fmt.Errorf("web: update live reply %s: %w", l.d.Turn, adapters.ErrLiveEnded)
	}
	if strings.TrimSpace(text) == "" {
		return nil
	}
	d := l.d
	d.Text = text
	l.shown = true
	l.a.hub.showDraft(l.chat, d)
	return nil
}

// Finish returns the final message's id. The pages show the final once the
// gateway stored it (Stored): it replaces the draft. A draft that carried
// buttons is first shown reading text without them, since a final the
// gateway does not store (a stopped turn's "Stopped.") never replaces it.
// The draft is no longer sent to pages that connect from now on.
func (l *live) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("web: finish live reply %s: %w", l.d.Turn, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.aborted {
		return "", fmt.Errorf("web: finish live reply %s: %w", l.d.Turn, adapters.ErrLiveEnded)
	}
	if !l.finished {
		l.finished = true
		var last *draftView
		if len(l.d.Buttons) > 0 && strings.TrimSpace(text) != "" {
			d := l.d
			d.Text, d.Buttons = text, nil
			last = &d
		}
		l.a.hub.endDraft(l.chat, l.d.Turn, last)
	}
	return l.d.ID, nil
}

// Abort removes the draft from the pages; a live reply that never showed
// one sends nothing.
func (l *live) Abort(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.finished || l.aborted {
		return nil
	}
	l.aborted = true
	var end *draftView
	if l.shown {
		end = &draftView{Type: "draft_end", Turn: l.d.Turn, ID: l.d.ID}
	}
	l.a.hub.endDraft(l.chat, l.d.Turn, end)
	return nil
}

// writeDrafts writes the drafts pending for sub, newest text of each turn.
func (a *Adapter) writeDrafts(s *stream, sub *subscriber) error {
	var buf []byte
	for _, d := range a.hub.takeDrafts(sub) {
		data, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("encode draft of turn %s: %w", d.Turn, err)
		}
		buf = append(buf, "data: "...)
		buf = append(buf, data...) // JSON has no raw newlines
		buf = append(buf, "\n\n"...)
	}
	return s.write(buf)
}

// Shown implements adapters.LiveShown: a draft, gone with the process that
// showed it (pages drop it when their event stream reconnects).
func (l *live) Shown() (adapters.MessageRef, adapters.LiveMode, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return adapters.MessageRef{Chat: l.chat, Topic: l.d.Topic, ID: l.d.ID}, adapters.LiveDraft, !l.finished && !l.aborted
}
