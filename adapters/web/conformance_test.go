package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
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
	w.g.mu.Lock()
	seq, _ := w.g.store(adapters.Inbound{Chat: m.Chat, ID: id, Sender: "web:user/switchboard", Text: m.Text, Topic: m.Topic,
		ReplyTo: m.ReplyTo, Time: time.Now(), FromBot: true})
	w.g.mu.Unlock()
	w.Stored(m.Chat, seq)
	return id, nil
}

func (p *webPlatform) NewAdapter(t *testing.T) adapters.Adapter {
	p.a = New(Options{Listen: "127.0.0.1:0", History: p.g})
	p.g.watcher = p.a
	return webUnderTest{Adapter: p.a, g: p.g}
}

func (p *webPlatform) Features() adaptertest.Features {
	return adaptertest.Features{EveryMessageMentions: true}
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
			out = append(out, adaptertest.Message{ID: m.ID, Text: markdown.Plain(m.Text), Raw: m.Text, Topic: m.Topic})
		}
	}
	return out
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
