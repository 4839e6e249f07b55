package web

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/markdown"
)

// webPlatform is the web chat as adaptertest sees it: the "platform" is the
// adapter's own HTTP API, users post through it, and the bot's messages are
// read back from it the way the chat page reads them.
type webPlatform struct {
	g    *fakeGateway
	a    *Adapter
	http *http.Client
}

// webUnderTest stores each sent message the way the gateway's outbox does,
// so the page (GET …/messages) shows it.
type webUnderTest struct {
	*Adapter
	g *fakeGateway
}

func (w webUnderTest) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	id, err := w.Adapter.Send(ctx, m)
	if err != nil {
		return "", err
	}
	w.store(m, id)
	return id, nil
}

// store stores the bot's message m under id, as the outbox does, and tells
// the adapter, unless (chat, id) was stored before.
func (w webUnderTest) store(m adapters.Outbound, id adapters.MessageID) {
	w.g.mu.Lock()
	seq, dup := w.g.store(adapters.Inbound{Chat: m.Chat, ID: id, Sender: "web:user/switchboard", Text: m.Text, Topic: m.Topic,
		ReplyTo: m.ReplyTo, Time: time.Now(), FromBot: true})
	w.g.mu.Unlock()
	if !dup {
		w.Stored(m.Chat, seq)
	}
}

// SendButtons' message is stored as the gateway stores the bot's echo.
func (w webUnderTest) SendButtons(ctx context.Context, m adapters.Outbound, buttons []adapters.Button) (adapters.MessageID, error) {
	id, err := w.Adapter.SendButtons(ctx, m, buttons)
	if err != nil {
		return "", err
	}
	w.store(m, id)
	return id, nil
}

// EditButtons' edit changes the stored text, as the gateway's store does.
func (w webUnderTest) EditButtons(ctx context.Context, ref adapters.MessageRef, text string, buttons []adapters.Button) error {
	if err := w.Adapter.EditButtons(ctx, ref, text, buttons); err != nil {
		return err
	}
	w.g.edit(ref.Chat, ref.ID, text)
	return nil
}

// Delete's delete marks the stored message deleted, as the gateway's
// store does.
func (w webUnderTest) Delete(ctx context.Context, ref adapters.MessageRef) error {
	if err := w.Adapter.Delete(ctx, ref); err != nil {
		return err
	}
	_, err := w.g.deliver(ctx, adapters.Inbound{Kind: adapters.KindDelete, Chat: ref.Chat, ID: ref.ID})
	return err
}

// UserPresses presses a button as ann (who posts UserPosts) through the
// endpoint the page uses, and returns the answer shown to her.
func (p *webPlatform) UserPresses(t *testing.T, chat adapters.JID, id adapters.MessageID, data string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"data": data, "sender": "ann", "message": id.String()})
	resp, err := p.http.Post("http://"+p.a.Addr()+"/api/rooms/"+chat.Room()+"/press", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("press: %v", err)
	}
	defer resp.Body.Close()
	var r struct{ Answer, Error string }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("press: %d, %v", resp.StatusCode, err)
	}
	if data == "" && resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a press without data answered %d; want 400", resp.StatusCode)
	}
	return r.Answer
}

// StartLive's final is stored under the id Finish returns, as the gateway
// will store it.
func (w webUnderTest) StartLive(ctx context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	l, err := w.Adapter.StartLive(ctx, m, turn)
	if err != nil {
		return nil, err
	}
	return storingLive{LiveReply: l, w: w, m: m}, nil
}

type storingLive struct {
	adapters.LiveReply
	w webUnderTest
	m adapters.Outbound
}

func (l storingLive) Finish(ctx context.Context, text string) (adapters.MessageID, error) {
	id, err := l.LiveReply.Finish(ctx, text)
	if err != nil {
		return "", err
	}
	m := l.m
	m.Text = text
	l.w.store(m, id)
	return id, nil
}

func (p *webPlatform) NewAdapter(t *testing.T) adapters.Adapter {
	p.a = New(Options{Listen: "127.0.0.1:0", History: p.g})
	p.g.watcher = p.a
	return webUnderTest{Adapter: p.a, g: p.g}
}

func (p *webPlatform) Features() adaptertest.Features {
	return adaptertest.Features{EveryMessageMentions: true, NoRateLimits: true}
}

func (p *webPlatform) Group() (adapters.JID, string) { return "web:lobby", "t1" }
func (p *webPlatform) DM() adapters.JID              { return "" }

func (p *webPlatform) UserPosts(t *testing.T, post adaptertest.Post) adapters.MessageID {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sender": "ann", "text": post.Text, "topic": post.Topic})
	// Like the chat page, a user whose post was refused (503: not stored)
	// sends it again.
	for try := 0; try < 5; try++ {
		resp, err := p.http.Post("http://"+p.a.Addr()+"/api/rooms/"+strings.TrimPrefix(string(post.Chat), "web:")+"/messages",
			"application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusAccepted {
			var r struct{ ID adapters.MessageID }
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("post: %d %s", resp.StatusCode, b)
		}
	}
	t.Fatal("post refused five times")
	return ""
}

func (p *webPlatform) UserEdits(*testing.T, adapters.JID, adapters.MessageID, string) bool {
	return false
}
func (p *webPlatform) UserDeletes(*testing.T, adapters.JID, adapters.MessageID) bool { return false }
func (p *webPlatform) UserReacts(*testing.T, adapters.JID, adapters.MessageID, string) bool {
	return false
}

// BotMessages reads the room through the API the page uses.
func (p *webPlatform) BotMessages(chat adapters.JID) []adaptertest.Message {
	resp, err := p.http.Get("http://" + p.a.Addr() + "/api/rooms/" + strings.TrimPrefix(string(chat), "web:") + "/messages?after=0")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var r messagesResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil
	}
	var out []adaptertest.Message
	for _, m := range r.Messages {
		if m.FromBot {
			// The page shows the agent's Markdown rendered.
			msg := adaptertest.Message{ID: m.ID, Text: markdown.Plain(m.Text), Raw: m.Text, Topic: m.Topic, Deleted: m.Deleted}
			for _, b := range m.Buttons {
				msg.Buttons = append(msg.Buttons, adapters.Button{Label: b.Label, Data: b.Data, Style: adapters.ButtonStyle(b.Style)})
			}
			out = append(out, msg)
		}
	}
	return out
}

// WatchLive reads the room's event stream as the page does: the drafts of
// live replies and the bot's messages, Markdown rendered.
func (p *webPlatform) WatchLive(t *testing.T, chat adapters.JID) func() []string {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+p.a.Addr()+"/api/rooms/"+chat.Room()+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{}).Do(req) // no timeout: the stream is long
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("open the event stream: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	var mu sync.Mutex
	var shown []string
	var draftID string // the newest draft's
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type    string
				ID      string
				Text    string
				FromBot bool `json:"from_bot"`
			}
			if json.Unmarshal([]byte(data), &ev) != nil || ev.Type == "" && !ev.FromBot || ev.Type == "draft_end" {
				continue
			}
			text := markdown.Plain(ev.Text)
			mu.Lock()
			// The message of a draft's id replaces the draft in place:
			// the same text does not show again.
			if ev.Type != "" || ev.ID != draftID || len(shown) == 0 || shown[len(shown)-1] != text {
				shown = append(shown, text)
			}
			if ev.Type == "draft" {
				draftID = ev.ID
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(shown)
	}
}

// The web chat has no rate limits, formatting refusals or connection to drop.
func (p *webPlatform) RateLimit(time.Duration) {}
func (p *webPlatform) RejectFormatting()       {}
func (p *webPlatform) Disconnect()             {}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adaptertest.Platform {
		return &webPlatform{g: newFakeGateway(), http: &http.Client{Timeout: 10 * time.Second}}
	})
}

// No user may post as the bot: its sender is the bot's identity, and the
// gateway would take such a message for the bot's own echo.
func TestBotNameReserved(t *testing.T) {
	s := start(t, nil)
	for _, name := range []string{"switchboard", "Switchboard"} {
		code, body := s.post(t, "lobby", `{"sender": "`+name+`", "text": "I am the bot"}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "reserved for the bot") {
			t.Errorf("posting as %q: %d %s; want 400 naming the reservation", name, code, body)
		}
	}
	if n := s.g.deliverCalls(); n != 0 {
		t.Errorf("deliver called %d times", n)
	}
}

// Nor may a user show the bot's name: the page shows names, not sender ids.
func TestBotDisplayNameReserved(t *testing.T) {
	s := start(t, nil)
	for _, name := range []string{"switchboard", "Switchboard", " SWITCHBOARD ", "Switch Board", "switch\u200bboard"} {
		code, body := s.post(t, "lobby", `{"sender": "mallory", "name": "`+name+`", "text": "I am the bot"}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "reserved for the bot") {
			t.Errorf("posting with the name %q: %d %s; want 400 naming the reservation", name, code, body)
		}
	}
	if code, body := s.post(t, "lobby", `{"sender": "switch-board", "text": "I am the bot"}`); code != http.StatusBadRequest || !strings.Contains(body, "reserved for the bot") {
		t.Errorf("posting as switch-board with no name: %d %s; want 400 naming the reservation", code, body)
	}
	if n := s.g.deliverCalls(); n != 0 {
		t.Errorf("deliver called %d times", n)
	}
	if code, body := s.post(t, "lobby", `{"sender": "ann", "name": "Ann of switchboard fans", "text": "hi"}`); code != http.StatusAccepted {
		t.Errorf("an ordinary name: %d %s", code, body)
	}
}

// Bidirectional controls make text display other than it reads: "\u202e"
// (right-to-left override) followed by "draobhctiws" shows "switchboard",
// past the reservation above. A name or topic with one is refused, saying
// so; names in right-to-left scripts are fine.
func TestBidiControlsRefusedInNamesAndTopics(t *testing.T) {
	s := start(t, nil)
	for _, name := range []string{"\u202edraobhctiws", "\u202ebs", "ann\u2066x\u2069", "\u200fann"} {
		code, body := s.post(t, "lobby", `{"sender": "mallory", "name": "`+name+`", "text": "I am the bot"}`)
		if code != http.StatusBadRequest || !strings.Contains(body, "bidirectional") {
			t.Errorf("posting with the name %q: %d %s; want 400 naming the bidirectional control", name, code, body)
		}
	}
	if code, body := s.post(t, "lobby", `{"sender": "mallory", "topic": "\u202etpircs", "text": "hi"}`); code != http.StatusBadRequest || !strings.Contains(body, "bidirectional") {
		t.Errorf("posting with a reversed topic: %d %s; want 400", code, body)
	}
	if n := s.g.deliverCalls(); n != 0 {
		t.Errorf("deliver called %d times", n)
	}
	for _, name := range []string{"\u05e9\u05e8\u05d4", "\u0633\u0627\u0631\u0627", "Zo\u00eb \U0001F469\u200d\U0001F4BB"} {
		if code, body := s.post(t, "lobby", `{"sender": "ann", "name": "`+name+`", "text": "hi"}`); code != http.StatusAccepted {
			t.Errorf("the name %q: %d %s; want it accepted", name, code, body)
		}
	}
}
