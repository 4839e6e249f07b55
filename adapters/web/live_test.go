package web

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
)

// nextDraft returns the next draft or draft_end event of the stream: it has
// no id line (a draft never moves the page's cursor).
func (st *sse) nextDraft(t *testing.T) draftView {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				t.Fatal("event stream ended")
			}
			var d draftView
			if ev.data == "" || json.Unmarshal([]byte(ev.data), &d) != nil || d.Type == "" {
				continue
			}
			if ev.id != "" {
				t.Errorf("draft event %s has id %q; want none", ev.data, ev.id)
			}
			return d
		case <-timeout:
			t.Fatal("no draft within 5s")
		}
	}
}

// A live reply is drafts on the room's event stream, never stored: a page
// that opens mid-turn gets the newest draft, an aborted one ends with
// draft_end, and a finished one is no longer sent to pages that open later.
func TestLiveDrafts(t *testing.T) {
	s := start(t, nil)
	ctx := t.Context()
	st := s.openEvents(t, "/api/rooms/lobby/events")
	kitchen := s.openEvents(t, "/api/rooms/kitchen/events")
	l, err := s.a.StartLive(ctx, adapters.Outbound{Chat: "web:lobby", Topic: "ops"}, "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Working", "Working on `it"} {
		if err := l.Update(ctx, text); err != nil {
			t.Fatalf("update: %v", err)
		}
	}
	first := st.nextDraft(t)
	if first.Type != "draft" || first.Turn != "turn-1" || !strings.HasPrefix(string(first.ID), "b-") || first.Name != "sb" || first.Topic != "ops" {
		t.Errorf("first draft %+v; want type draft, turn turn-1, the final's id b-…, the bot's name and the topic", first)
	}
	if first.Text != "Working on `it" {
		if d := st.nextDraft(t); d.Text != "Working on `it" || d.ID != first.ID {
			t.Errorf("second draft %+v; want the newest text under id %s", d, first.ID)
		}
	}
	late := s.openEvents(t, "/api/rooms/lobby/events")
	if d := late.nextDraft(t); d.Text != "Working on `it" {
		t.Errorf("a page opened mid-turn got %+v; want the newest draft", d)
	}
	if code, body := s.do(t, "GET", "/api/rooms/lobby/messages?after=0", "", ""); code != 200 || strings.Contains(body, "Working") {
		t.Errorf("GET messages: %d %s; want no draft", code, body)
	}

	id, err := l.Finish(ctx, "Done")
	if err != nil || id != first.ID {
		t.Fatalf("finish: %q, %v; want the drafts' id %s", id, err, first.ID)
	}
	if err := l.Update(ctx, "more"); !errors.Is(err, adapters.ErrLiveEnded) {
		t.Errorf("update after finish: %v; want ErrLiveEnded", err)
	}
	if n := len(s.g.stored()); n != 0 {
		t.Errorf("%d messages stored; drafts are never stored (the gateway stores the final)", n)
	}

	l2, _ := s.a.StartLive(ctx, adapters.Outbound{Chat: "web:lobby"}, "turn-2")
	if err := l2.Update(ctx, "Second turn"); err != nil {
		t.Fatal(err)
	}
	afterFinish := s.openEvents(t, "/api/rooms/lobby/events")
	if d := afterFinish.nextDraft(t); d.Turn != "turn-2" {
		t.Errorf("a page opened after turn-1 finished got %+v; want only turn-2's draft", d)
	}
	if err := l2.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	for {
		if d := st.nextDraft(t); d.Type == "draft_end" {
			if d.Turn != "turn-2" || d.ID == "" {
				t.Errorf("draft_end %+v; want turn-2 with its id", d)
			}
			break
		}
	}
	if _, err := l2.Finish(ctx, "x"); !errors.Is(err, adapters.ErrLiveEnded) {
		t.Errorf("finish after abort: %v; want ErrLiveEnded", err)
	}
	select {
	case ev := <-kitchen.events:
		if ev.data != "" {
			t.Errorf("another room's stream got %q", ev.data)
		}
	default:
	}
	if _, err := s.a.StartLive(ctx, adapters.Outbound{Chat: "telegram:user/1"}, "t"); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("live reply in a telegram chat: %v; want ErrPermanent", err)
	}
}

// A live reply that never showed a draft (the agent answered through MCP,
// or failed before any text) ends without a draft_end: the room's stream
// carries nothing for it, where it carried a draft_end for a draft no page
// had seen, after the turn's final message.
func TestLiveAbortOfAnUnshownDraftSendsNothing(t *testing.T) {
	s := start(t, nil)
	ctx := t.Context()
	st := s.openEvents(t, "/api/rooms/lobby/events")
	quiet, err := s.a.StartLive(ctx, adapters.Outbound{Chat: "web:lobby"}, "turn-quiet")
	if err != nil {
		t.Fatal(err)
	}
	if err := quiet.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	shown, _ := s.a.StartLive(ctx, adapters.Outbound{Chat: "web:lobby"}, "turn-shown")
	if err := shown.Update(ctx, "Working"); err != nil {
		t.Fatal(err)
	}
	d := st.nextDraft(t)
	got := []string{d.Type + " " + d.Turn}
	if err := shown.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if got[0] == "draft turn-shown" {
		d = st.nextDraft(t)
		got = append(got, d.Type+" "+d.Turn)
	}
	if want := []string{"draft turn-shown", "draft_end turn-shown"}; !slices.Equal(got, want) {
		t.Errorf("the stream carried %q; want %q (nothing of the turn that showed no draft)", got, want)
	}
}

// A live reply started with buttons (the turn's Stop button) shows them on
// every draft, for pages open and opening; the final message has none.
func TestLiveDraftCarriesButtons(t *testing.T) {
	s := start(t, nil)
	ctx := t.Context()
	st := s.openEvents(t, "/api/rooms/lobby/events")
	stop := adapters.Button{Label: "Stop", Data: "stop:t-1", Style: adapters.StyleDanger}
	l, err := s.a.StartLive(ctx, adapters.Outbound{Chat: "web:lobby", Buttons: []adapters.Button{stop}}, "t-1")
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := l.(adapters.ButtonCarrier); !ok || !c.CarriesButtons() {
		t.Fatalf("the web live reply started with a Stop button does not carry it (ButtonCarrier)")
	}
	want := []buttonView{{Label: "Stop", Data: "stop:t-1", Style: "danger"}}
	if err := l.Update(ctx, "Working"); err != nil {
		t.Fatal(err)
	}
	if d := st.nextDraft(t); d.Text != "Working" || !slices.Equal(d.Buttons, want) {
		t.Errorf("draft %+v; want text Working with buttons %+v", d, want)
	}
	if err := l.Update(ctx, "Working harder"); err != nil {
		t.Fatal(err)
	}
	late := s.openEvents(t, "/api/rooms/lobby/events")
	if d := late.nextDraft(t); d.Text != "Working harder" || !slices.Equal(d.Buttons, want) {
		t.Errorf("a page opened mid-turn got %+v; want the newest draft with buttons %+v", d, want)
	}
	id, err := l.Finish(ctx, "Done")
	if err != nil {
		t.Fatal(err)
	}
	// A final the gateway does not store (a stopped turn's) shows too.
	d := st.nextDraft(t)
	for d.Text == "Working harder" { // the update before
		d = st.nextDraft(t)
	}
	if d.Text != "Done" || len(d.Buttons) != 0 || d.ID != id {
		t.Errorf("the draft after Finish %+v; want it reading Done without buttons", d)
	}
	s.g.mu.Lock() // the gateway stores the final under its id
	seq, _ := s.g.store(adapters.Inbound{Chat: "web:lobby", ID: id, Sender: "web:bot", Text: "Done", Time: time.Now(), FromBot: true})
	s.g.mu.Unlock()
	s.a.Stored("web:lobby", seq)
	if m := messageByID(t, s, id); len(m.Buttons) != 0 {
		t.Errorf("the final message %s shows buttons %+v; want none", id, m.Buttons)
	}
	if l2, _ := s.a.StartLive(ctx, adapters.Outbound{Chat: "web:lobby"}, "t-2"); l2.(adapters.ButtonCarrier).CarriesButtons() {
		t.Errorf("a live reply started without buttons says it carries some")
	}
	bad := adapters.Outbound{Chat: "web:lobby", Buttons: []adapters.Button{{Label: "Stop"}}}
	if _, err := s.a.StartLive(ctx, bad, "t-3"); !errors.Is(err, adapters.ErrBadMessage) {
		t.Errorf("a live reply with a button without data: %v; want ErrBadMessage", err)
	}
}
