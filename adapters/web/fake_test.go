package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
)

// fakeGateway stands in for the gateway and its store: deliver assigns
// global seqs and de-duplicates by (chat, id) like the real store, then
// tells the adapter (Watcher) as the gateway does; Messages implements
// History.
type fakeGateway struct {
	mu    sync.Mutex
	seq   int64
	msgs  []adapters.Stored
	byID  map[string]int64
	calls int   // deliver calls
	fail  error // deliver fails with this when set
	// lost: the next this many deliveries store the message and then
	// fail, as if the answer was lost on the way back.
	lost    int
	watcher adapters.Watcher
}

func newFakeGateway() *fakeGateway {
	return &fakeGateway{byID: make(map[string]int64)}
}

func (g *fakeGateway) Messages(ctx context.Context, chat adapters.JID, after int64, limit int) ([]adapters.Stored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []adapters.Stored
	for _, m := range g.msgs {
		if m.Chat == chat && m.Seq > after && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

func (g *fakeGateway) deliver(ctx context.Context, m adapters.Inbound) (int64, error) {
	g.mu.Lock()
	g.calls++
	if g.fail != nil {
		g.mu.Unlock()
		return 0, g.fail
	}
	if m.Kind == adapters.KindEdit {
		g.mu.Unlock()
		g.edit(m.Chat, m.ID, m.Text)
		return 0, nil
	}
	if m.Kind == adapters.KindDelete { // marked deleted, as the store does
		for i := range g.msgs {
			if g.msgs[i].Chat == m.Chat && g.msgs[i].ID == m.ID {
				g.msgs[i].Deleted = true
			}
		}
		g.mu.Unlock()
		return 0, nil
	}
	seq, dup := g.store(m)
	w := g.watcher
	lost := g.lost > 0
	if lost {
		g.lost--
	}
	g.mu.Unlock()
	if w != nil && !dup {
		w.Stored(m.Chat, seq)
	}
	if lost {
		return 0, errors.New("answer lost")
	}
	return seq, nil
}

// store appends m unless (chat, id) is known; the caller holds g.mu.
func (g *fakeGateway) store(m adapters.Inbound) (seq int64, dup bool) {
	key := string(m.Chat) + "\x00" + m.ID.String()
	if seq, ok := g.byID[key]; ok {
		return seq, true
	}
	g.seq++
	g.byID[key] = g.seq
	g.msgs = append(g.msgs, adapters.Stored{Seq: g.seq, Inbound: m})
	return g.seq, false
}

// edit changes the text of a stored message, as the store does with an
// edit.
func (g *fakeGateway) edit(chat adapters.JID, id adapters.MessageID, text string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range g.msgs {
		if g.msgs[i].Chat == chat && g.msgs[i].ID == id {
			g.msgs[i].Text = text
		}
	}
}

// reply does what the gateway does with a bot reply: Send, store the
// message under the returned id, then Stored.
func (g *fakeGateway) reply(t *testing.T, a *Adapter, chat adapters.JID, text string) int64 {
	t.Helper()
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: text})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	g.mu.Lock()
	seq, _ := g.store(adapters.Inbound{Chat: chat, ID: id, Sender: "web:bot", SenderName: "", Text: text, Time: time.Now(), FromBot: true})
	g.mu.Unlock()
	a.Stored(chat, seq)
	return seq
}

// seed stores a user message directly, without waking anyone.
func (g *fakeGateway) seed(room, sender, text string) int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	seq, _ := g.store(adapters.Inbound{
		Chat: chatJID(room), ID: adapters.MessageID("seed-" + text), Sender: senderJID(sender), SenderName: sender,
		Text: text, Time: time.Date(2026, 3, 1, 12, 30, 5, 123456789, time.UTC), Verb: adapters.VerbMention,
	})
	return seq
}

func (g *fakeGateway) deliverCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

func (g *fakeGateway) stored() []adapters.Stored {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]adapters.Stored(nil), g.msgs...)
}

// server is an adapter running on a real loopback listener.
type server struct {
	a      *Adapter
	g      *fakeGateway
	host   *adaptertest.Host
	base   string // "http://127.0.0.1:port"
	client *http.Client
	cancel context.CancelFunc
	done   chan error // Run's result
}

// start runs an adapter on 127.0.0.1:0; tweak adjusts it before Run. The
// cleanup stops it and fails the test if Run does not return nil.
func start(t *testing.T, tweak func(*Adapter)) *server {
	t.Helper()
	g := newFakeGateway()
	return startOn(t, g, &adaptertest.Host{DeliverFunc: g.deliver}, tweak)
}

// startOn is start with the gateway and host given: a restart keeps them.
func startOn(t *testing.T, g *fakeGateway, host *adaptertest.Host, tweak func(*Adapter)) *server {
	t.Helper()
	a := New(Options{Listen: "127.0.0.1:0", BotName: "sb", History: g})
	g.watcher = a
	if tweak != nil {
		tweak(a)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{a: a, g: g, host: host, cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}}
	go func() { s.done <- a.Run(ctx, host) }()
	select {
	case <-a.Ready():
	case err := <-s.done:
		t.Fatalf("run: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("adapter not listening after 5s")
	}
	s.base = "http://" + a.Addr()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels Run and waits for it; it may be called more than once.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case err, ok := <-s.done:
		if ok && err != nil {
			t.Errorf("run returned %v, want nil after cancel", err)
		}
		if ok {
			close(s.done)
		}
	case <-time.After(10 * time.Second):
		t.Error("run did not return within 10s of cancel")
	}
	s.client.CloseIdleConnections()
}

// do sends a request and returns the status and body.
func (s *server) do(t *testing.T, method, path, contentType, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read %s %s: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

func (s *server) post(t *testing.T, room, body string) (int, string) {
	t.Helper()
	return s.do(t, http.MethodPost, "/api/rooms/"+room+"/messages", "application/json", body)
}

// count is the number of open event-stream subscriptions.
func (h *hub) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, subs := range h.rooms {
		n += len(subs)
	}
	return n
}

// pendingDrafts is the number of draft events the open streams have not
// taken yet.
func (h *hub) pendingDrafts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, subs := range h.rooms {
		for s := range subs {
			n += len(s.drafts)
		}
	}
	return n
}
