package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// Fakes shared by the guards' and parts' unit tests: none needs a Gateway.

// heldChats records what a chatHolder did.
type heldChats struct {
	mu      sync.Mutex
	deferTo map[string]time.Time // folder/chat/topic → until
	sent    []ops.SendRequest
	kicks   []string
	err     error // DeferChat fails with it
}

func (h *heldChats) DeferChat(_ context.Context, folder groups.Folder, chat adapters.JID, topic string, until time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return h.err
	}
	if h.deferTo == nil {
		h.deferTo = map[string]time.Time{}
	}
	h.deferTo[string(folder)+"/"+chat.String()+"/"+topic] = until
	return nil
}

func (h *heldChats) holder() chatHolder {
	return chatHolder{st: h, log: slog.New(slog.DiscardHandler),
		send: func(_ context.Context, r ops.SendRequest) (store.OutboxItem, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.sent = append(h.sent, r)
			return store.OutboxItem{Key: r.Key}, nil
		},
		kickAfter: func(folder groups.Folder, _ time.Duration) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.kicks = append(h.kicks, string(folder))
		}}
}

// fixedClock is a clock tests move by hand.
type fixedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fixedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fixedClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *fixedClock) Now() time.Time { return c.now() }

func messageBatch(folder groups.Folder, chat string, senders ...string) store.Batch {
	b := store.Batch{Folder: folder, ChatJID: adapters.JID(chat)}
	for i, s := range senders {
		seq := int64(i + 1)
		b.Items = append(b.Items, store.WorkItem{Folder: folder, ChatJID: adapters.JID(chat), Seq: seq, Mode: "trigger", Trigger: store.TriggerMessage})
		b.Messages = append(b.Messages, store.Message{Seq: seq, ChatJID: adapters.JID(chat), Sender: adapters.JID(s), Text: "hi"})
	}
	return b
}

// scriptedGuard holds or not, and counts its calls.
type scriptedGuard struct {
	v     verdict
	err   error
	calls *[]string
	name  string
}

func (s scriptedGuard) check(context.Context, turnCandidate) (verdict, error) {
	*s.calls = append(*s.calls, s.name)
	return s.v, s.err
}

// The guards run in order and the first that holds a turn stops the rest;
// an error is logged and its verdict stands.
func TestTurnGuardsOrder(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name   string
		guards []scriptedGuard
		held   bool
		called string
	}{
		{"none holds", []scriptedGuard{{name: "a"}, {name: "b"}, {name: "c"}}, false, "abc"},
		{"the second holds", []scriptedGuard{{name: "a"}, {name: "b", v: verdictHeld}, {name: "c"}}, true, "ab"},
		{"an error that runs goes on", []scriptedGuard{{name: "a", err: boom}, {name: "b"}}, false, "ab"},
		{"an error that holds stops", []scriptedGuard{{name: "a", v: verdictHeld, err: boom}, {name: "b"}}, true, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls []string
			gs := turnGuards{log: slog.New(slog.DiscardHandler)}
			for _, g := range tc.guards {
				g.calls = &calls
				gs.list = append(gs.list, g)
			}
			held := gs.withheld(context.Background(), turnCandidate{batch: messageBatch("main", "test:room/1", "test:user/ann")})
			got := ""
			for _, c := range calls {
				got += c
			}
			if held != tc.held || got != tc.called {
				t.Errorf("held %v after %q, want %v after %q", held, got, tc.held, tc.called)
			}
		})
	}
}

func TestSpell(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Minute: "minute", 10 * time.Minute: "10 minutes", 2 * time.Hour: "2 hours",
		time.Second: "second", 1500 * time.Millisecond: "1.5s"} {
		if got := spell(d); got != want {
			t.Errorf("spell(%s) = %q, want %q", d, got, want)
		}
	}
}
