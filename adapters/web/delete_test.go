package web

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testcdp"
	"switchboard/internal/testenv"
	"switchboard/internal/testwait"
)

// TestDeleteReplayedToALaterPage: the bot deletes its message with
// buttons (a finished turn's Stop button); the message is stored deleted,
// the history shows no text or buttons for it, and a page that read it
// before and connects its event stream after still gets the delete.
func TestDeleteReplayedToALaterPage(t *testing.T) {
	s := start(t, nil)
	chat := adapters.JID("web:lobby")
	id, err := s.a.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: "Working on it. Press Stop to stop."},
		[]adapters.Button{{Label: "Stop", Data: "stop:7", Style: adapters.StyleDanger}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.a.Delete(t.Context(), adapters.MessageRef{Chat: chat, ID: id}); err != nil {
		t.Fatal(err)
	}
	if m := messageByID(t, s, id); !m.Deleted || m.Text != "" || len(m.Buttons) != 0 {
		t.Errorf("deleted message in the history: %+v; want deleted, no text, no buttons", m)
	}
	events := watchEdits(t, s)
	var got []draftView
	testwait.For(t, 5*time.Second, "the delete replayed to a page that connected after it", func() bool {
		got = events()
		return len(got) > 0
	})
	if len(got) != 1 || got[0].Type != "delete" || got[0].ID != id {
		t.Errorf("events %+v; want one delete of %s", got, id)
	}
}

// TestDeleteOnlyTheBotsMessages: a person's message is not the bot's to
// delete on the web chat; nothing is stored.
func TestDeleteOnlyTheBotsMessages(t *testing.T) {
	s := start(t, nil)
	s.g.seed("lobby", "ann", "hello")
	before := s.g.deliverCalls()
	err := s.a.Delete(t.Context(), adapters.MessageRef{Chat: "web:lobby", ID: "seed-hello"})
	if !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("delete a person's message: %v; want ErrPermanent", err)
	}
	if s.g.deliverCalls() != before || s.g.stored()[0].Deleted {
		t.Error("a refused delete was stored")
	}
}

// TestBrowserDeletesMessage: a message of the bot's with a Stop button
// leaves the open page when the bot deletes it, and a page loaded after
// does not show it. Without Chromium it skips, or fails when CI is set.
func TestBrowserDeletesMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	s := start(t, nil)
	chat := adapters.JID("web:lobby")
	s.post(t, "lobby", `{"sender": "ann", "text": "run the long job"}`)
	id, err := s.a.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: "Working on it. Press Stop to stop."},
		[]adapters.Button{{Label: "Stop", Data: "stop:7", Style: adapters.StyleDanger}})
	if err != nil {
		t.Fatal(err)
	}
	b := testcdp.Open(t, chromium, "about:blank")
	b.Navigate(s.base + "/?room=lobby")
	msg := `document.querySelectorAll('.msg[data-id="` + id.String() + `"]').length`
	b.WaitFor("the Stop button message", msg+" === 1")
	if err := s.a.Delete(t.Context(), adapters.MessageRef{Chat: chat, ID: id}); err != nil {
		t.Fatal(err)
	}
	b.WaitFor("the message gone, the person's left", msg+` === 0 && document.querySelectorAll(".msg").length === 1`)
	b.Navigate(s.base + "/?room=lobby")
	b.WaitFor("the person's message after a reload", `document.querySelectorAll(".msg").length === 1`)
	if got := evalString(t, b, `Array.from(document.querySelectorAll(".msg .text"), t => t.textContent).join("|")`); got != "run the long job" {
		t.Errorf("after a reload the page shows %q; want only the person's message", got)
	}
}

// TestEditEventsKeptForBoundedRooms: a gateway that runs for months sees
// edits and deletes in ever new rooms; the events kept for pages that
// connect later must not grow with every room ever edited. The room edited
// last still replays its delete to a page that connects after it.
func TestEditEventsKeptForBoundedRooms(t *testing.T) {
	s := start(t, nil)
	const rooms = 5 * maxEditRooms
	for i := range rooms {
		chat := adapters.JID(fmt.Sprintf("web:old-%d", i))
		s.a.hub.edit(chat, draftView{Type: "delete", Turn: "edit:b-1", ID: "b-1"})
	}
	chat := adapters.JID("web:lobby")
	id, err := s.a.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: "Working on it. Press Stop to stop."},
		[]adapters.Button{{Label: "Stop", Data: "stop:7", Style: adapters.StyleDanger}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.a.Delete(t.Context(), adapters.MessageRef{Chat: chat, ID: id}); err != nil {
		t.Fatal(err)
	}
	s.a.hub.mu.Lock()
	kept := len(s.a.hub.edits)
	s.a.hub.mu.Unlock()
	if kept > maxEditRooms {
		t.Errorf("edit events kept for %d rooms after edits in %d; want at most %d", kept, rooms+1, maxEditRooms)
	}
	events := watchEdits(t, s)
	var got []draftView
	testwait.For(t, 5*time.Second, "the delete replayed to a page that connected after it", func() bool {
		got = events()
		return len(got) > 0
	})
	if len(got) != 1 || got[0].Type != "delete" || got[0].ID != id {
		t.Errorf("events %+v; want one delete of %s", got, id)
	}
}
