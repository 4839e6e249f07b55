package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/internal/testwait"
)

// TestApprovalEndpoint: POST /api/approvals/{id} is the press of the
// approval's button "appr:<id>:<decision>" by the sender, answered with
// the gateway's text; a bad decision or sender is refused 400 naming the
// field and reaches nobody; a gateway failure is a generic 503.
func TestApprovalEndpoint(t *testing.T) {
	s := start(t, nil)
	s.host.PressFunc = func(_ context.Context, p adapters.Press) (string, error) {
		if strings.HasSuffix(p.Data, ":deny") {
			return "", errors.New("store: database is locked")
		}
		return "Allowed once by " + p.SenderName + ".", nil
	}
	for _, tc := range []struct{ name, body, want string }{
		{"bad decision", `{"decision": "maybe", "sender": "ann"}`, `field \"decision\" must be`},
		{"no decision", `{"sender": "ann"}`, `field \"decision\" must be`},
		{"no sender", `{"decision": "allow"}`, "sender"},
		{"the bot", `{"decision": "allow", "sender": "switchboard"}`, "reserved for the bot"},
		{"unknown field", `{"decision": "allow", "sender": "ann", "why": "x"}`, "allowed fields are decision, sender"},
	} {
		if code, body := s.do(t, http.MethodPost, "/api/approvals/42", "application/json", tc.body); code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s; want 400 naming %s", tc.name, code, body, tc.want)
		}
	}
	if n := len(s.host.Presses()); n != 0 {
		t.Fatalf("refused requests reached Host.Press %d times", n)
	}
	code, body := s.do(t, http.MethodPost, "/api/approvals/42", "application/json", `{"decision": "allow", "sender": "ann", "name": "Ann"}`)
	if code != http.StatusOK || !strings.Contains(body, `"answer":"Allowed once by Ann."`) {
		t.Errorf("allow: %d %s; want 200 with the gateway's answer", code, body)
	}
	if p := s.host.Presses(); len(p) != 1 || p[0].Data != "appr:42:allow" || p[0].Sender != "web:user/ann" {
		t.Errorf("presses %+v; want appr:42:allow by web:user/ann", p)
	}
	code, body = s.do(t, http.MethodPost, "/api/approvals/42", "application/json", `{"decision": "deny", "sender": "ann"}`)
	if code != http.StatusServiceUnavailable || strings.Contains(body, "database") || !strings.Contains(body, adapters.PressFailedAnswer) {
		t.Errorf("a failed press: %d %s; want 503 with the generic answer", code, body)
	}
}

// TestApprovalEndpointUnknownID: a decision on a request the gateway does
// not know (Host.Press: adapters.ErrUnknownRequest) is answered 404 with
// the gateway's text as the error; it was 200 as if decided.
func TestApprovalEndpointUnknownID(t *testing.T) {
	s := start(t, nil)
	s.host.PressFunc = func(_ context.Context, p adapters.Press) (string, error) {
		return "There is no approval request nosuch.", fmt.Errorf("approval nosuch: %w", adapters.ErrUnknownRequest)
	}
	code, body := s.do(t, http.MethodPost, "/api/approvals/nosuch", "application/json", `{"decision": "allow", "sender": "ann"}`)
	if code != http.StatusNotFound || !strings.Contains(body, `"error":"There is no approval request nosuch."`) {
		t.Errorf("unknown id: %d %s; want 404 saying there is no such request", code, body)
	}
}

// TestButtonsSurviveRestart: a message's buttons show in its JSON after a
// restart (persisted through Host values); EditButtons(nil) removes them
// and changes the text, at once on an open event stream (an "edit" event)
// and for pages loaded afterwards.
func TestButtonsSurviveRestart(t *testing.T) {
	g := newFakeGateway()
	host := &adaptertest.Host{DeliverFunc: g.deliver}
	s := startOn(t, g, host, nil)
	chat := chatJID("lobby")
	id, err := s.a.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: "Run rm?"},
		[]adapters.Button{{Label: "Allow", Data: "appr:9:allow", Style: adapters.StylePrimary}, {Label: "Deny", Data: "appr:9:deny"}})
	if err != nil {
		t.Fatalf("send buttons: %v", err)
	}
	s.stop(t)
	s = startOn(t, g, host, nil)
	if m := messageByID(t, s, id); len(m.Buttons) != 2 || m.Buttons[0].Data != "appr:9:allow" || m.Buttons[0].Style != "primary" || m.Text != "Run rm?" {
		t.Fatalf("after a restart the message reads %+v; want \"Run rm?\" with its two buttons", m)
	}
	edits := watchEdits(t, s)
	if err := s.a.EditButtons(t.Context(), adapters.MessageRef{Chat: chat, ID: id}, "Allowed by ann", nil); err != nil {
		t.Fatalf("edit buttons: %v", err)
	}
	testwait.For(t, 10*time.Second, "the edit event", func() bool { return len(edits()) == 1 })
	if e := edits()[0]; e.ID != id || e.Text != "Allowed by ann" || len(e.Buttons) != 0 {
		t.Errorf("edit event %+v; want the new text and no buttons", e)
	}
	s.stop(t)
	s = startOn(t, g, host, nil)
	if m := messageByID(t, s, id); len(m.Buttons) != 0 || m.Text != "Allowed by ann" {
		t.Errorf("after the edit and a restart the message reads %+v; want the new text and no buttons", m)
	}
	if err := s.a.EditButtons(t.Context(), adapters.MessageRef{Chat: chat, ID: "b-1"}, "x", nil); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("edit buttons of a message sent without: %v; want ErrPermanent", err)
	}
}

func messageByID(t *testing.T, s *server, id adapters.MessageID) messageView {
	t.Helper()
	code, body := s.do(t, http.MethodGet, "/api/rooms/lobby/messages", "", "")
	var r messagesResponse
	if code != http.StatusOK || json.Unmarshal([]byte(body), &r) != nil {
		t.Fatalf("messages: %d %s", code, body)
	}
	for _, m := range r.Messages {
		if m.ID == id {
			return m
		}
	}
	t.Fatalf("message %s not in %s", id, body)
	return messageView{}
}

// watchEdits reads the room's event stream and collects its edit and
// delete events.
func watchEdits(t *testing.T, s *server) func() []draftView {
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, s.base+"/api/rooms/lobby/events", nil)
	resp, err := (&http.Client{}).Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("open the event stream: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	testwait.For(t, 5*time.Second, "the stream subscribed", func() bool { return s.a.hub.count() > 0 })
	got := make(chan draftView, 16)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var d draftView
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &d) == nil && (d.Type == "edit" || d.Type == "delete") {
				got <- d
			}
		}
	}()
	var seen []draftView
	return func() []draftView {
		for {
			select {
			case d := <-got:
				seen = append(seen, d)
			default:
				return seen
			}
		}
	}
}

// TestEditReplayedToALaterPage: a page that read a message with buttons
// and connects its event stream only after the buttons were edited away
// still gets the edit (they do not stay on its screen until a reload).
func TestEditReplayedToALaterPage(t *testing.T) {
	s := start(t, nil)
	chat := adapters.JID("web:lobby")
	id, err := s.a.SendButtons(t.Context(), adapters.Outbound{Chat: chat, Text: "Run deploy.sh?"},
		[]adapters.Button{{Label: "Allow once", Data: "appr:5:allow"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.a.EditButtons(t.Context(), adapters.MessageRef{Chat: chat, ID: id}, "Allowed once by Ann", nil); err != nil {
		t.Fatal(err)
	}
	edits := watchEdits(t, s)
	var got []draftView
	testwait.For(t, 5*time.Second, "the edit replayed to a page that connected after it", func() bool {
		got = edits()
		return len(got) > 0
	})
	if got[0].ID != id || got[0].Text != "Allowed once by Ann" || len(got[0].Buttons) != 0 {
		t.Errorf("edit event %+v; want %s's new text without buttons", got[0], id)
	}
}

// TestPressBySenderReadingAsTheBotRefused: a press whose sender id reads
// as the bot's ("switch-board"), with no name or one a post would refuse,
// is refused as a post by that sender is; it reached the gateway named
// "switch-board" ("Allowed once by switch-board."). With a name of its
// own the sender id is not shown and the press goes through, as a post does.
func TestPressBySenderReadingAsTheBotRefused(t *testing.T) {
	s := start(t, nil)
	s.host.PressFunc = func(_ context.Context, p adapters.Press) (string, error) {
		return "Allowed once by " + p.SenderName + ".", nil
	}
	for _, tc := range []struct{ path, body string }{
		{"/api/approvals/42", `{"decision": "allow", "sender": "switch-board"}`},
		{"/api/approvals/42", `{"decision": "allow", "sender": "Switch.Board", "name": "Switchboard"}`},
		{"/api/rooms/lobby/press", `{"data": "x", "sender": "switch_board"}`},
	} {
		if code, body := s.do(t, http.MethodPost, tc.path, "application/json", tc.body); code != http.StatusBadRequest || !strings.Contains(body, "reserved for the bot") {
			t.Errorf("%s %s: %d %s; want 400 naming the reservation", tc.path, tc.body, code, body)
		}
	}
	if n := len(s.host.Presses()); n != 0 {
		t.Fatalf("refused presses reached Host.Press %d times", n)
	}
	code, body := s.do(t, http.MethodPost, "/api/approvals/42", "application/json", `{"decision": "allow", "sender": "switch-board", "name": "Ann"}`)
	if code != http.StatusOK || !strings.Contains(body, `"answer":"Allowed once by Ann."`) {
		t.Errorf("a press by switch-board named Ann: %d %s; want 200 naming Ann", code, body)
	}
}

// TestApprovalPressKeepsTheNameAPostWouldTake: a press carries the
// display name a posted message may have (64 characters, any script), and
// not one that reads as the bot's: the gateway's answer "Allowed once by
// <name>" named the person who posted as "Иванова …" by their sender id
// (the name was counted in bytes), and "Switchboard" as the bot.
func TestApprovalPressKeepsTheNameAPostWouldTake(t *testing.T) {
	s := start(t, nil)
	s.host.PressFunc = func(_ context.Context, p adapters.Press) (string, error) {
		return "Allowed once by " + p.SenderName + ".", nil
	}
	long := strings.Repeat("Ж", 40) // 40 characters, 80 bytes
	for _, tc := range []struct{ name, want string }{{long, long}, {"Switchboard", "ann"}, {"switch board", "ann"}} {
		code, body := s.do(t, http.MethodPost, "/api/approvals/42", "application/json",
			`{"decision": "allow", "sender": "ann", "name": "`+tc.name+`"}`)
		if code != http.StatusOK || !strings.Contains(body, `"answer":"Allowed once by `+tc.want+`."`) {
			t.Errorf("name %q: %d %s; want the answer naming %q", tc.name, code, body, tc.want)
		}
	}
}
