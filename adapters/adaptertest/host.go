package adaptertest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"switchboard/adapters"
)

// Host is an in-memory adapters.Host for adapter tests: it stores delivered
// events (in order, de-duplicated like the gateway on (chat, id) for new
// messages), keeps values in a map and records state changes. DeliverFunc,
// when set, replaces the built-in delivery (to inject failures).
type Host struct {
	DeliverFunc adapters.DeliverFunc
	Chats       []adapters.ChatCursor // what RoutedChats returns
	// PressFunc, when set, answers presses (else the answer is "pressed
	// <data>"); every press is recorded either way.
	PressFunc func(ctx context.Context, p adapters.Press) (string, error)

	mu      sync.Mutex
	events  []adapters.Inbound
	presses []adapters.Press
	seqs    map[msgKey]int64
	values  map[string]string
	states  []adapters.State
	lastErr error
	changed chan struct{} // closed and replaced on every change
}

var _ adapters.Host = (*Host)(nil)

// NewHost returns an empty Host.
func NewHost() *Host { return &Host{} }

func (h *Host) init() {
	if h.seqs == nil {
		h.seqs = map[msgKey]int64{}
		h.values = map[string]string{}
		h.changed = make(chan struct{})
	}
}

func (h *Host) notify() {
	close(h.changed)
	h.changed = make(chan struct{})
}

// Deliver records m (or calls DeliverFunc) and returns its sequence number.
func (h *Host) Deliver(ctx context.Context, m adapters.Inbound) (int64, error) {
	if h.DeliverFunc != nil {
		seq, err := h.DeliverFunc(ctx, m)
		if err != nil {
			return seq, err
		}
	}
	if m.ID == "" || m.Chat == "" {
		return 0, fmt.Errorf("%w: adaptertest: empty chat or id (the gateway refuses it so too)", adapters.ErrBadMessage)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	key := msgKey{m.Chat, m.ID}
	if seq, ok := h.seqs[key]; ok && m.Kind.Name() == string(adapters.KindMessage) {
		return seq, nil
	}
	h.events = append(h.events, m)
	seq := int64(len(h.events))
	if m.Kind.Name() == string(adapters.KindMessage) {
		h.seqs[key] = seq
	}
	h.notify()
	return seq, nil
}

// SetState records a state change.
func (h *Host) SetState(s adapters.State, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	h.states = append(h.states, s)
	h.lastErr = err
	h.notify()
}

// Value reads a persisted value.
func (h *Host) Value(_ context.Context, key string) (string, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	v, ok := h.values[key]
	return v, ok, nil
}

// SetValue persists a value (ttl is ignored).
func (h *Host) SetValue(_ context.Context, key, value string, _ time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.init()
	h.values[key] = value
	h.notify()
	return nil
}

// RoutedChats returns h.Chats.
func (h *Host) RoutedChats(context.Context) ([]adapters.ChatCursor, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]adapters.ChatCursor(nil), h.Chats...), nil
}

// Press records p and answers it with PressFunc, or "pressed <data>".
func (h *Host) Press(ctx context.Context, p adapters.Press) (string, error) {
	if err := p.Validate(); err != nil {
		return "", err
	}
	h.mu.Lock()
	h.init()
	h.presses = append(h.presses, p)
	h.notify()
	f := h.PressFunc
	h.mu.Unlock()
	if f != nil {
		return f(ctx, p)
	}
	return "pressed " + p.Data, nil
}

// Presses returns the presses so far, in order.
func (h *Host) Presses() []adapters.Press {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]adapters.Press(nil), h.presses...)
}

// Events returns the delivered events so far, in order.
func (h *Host) Events() []adapters.Inbound {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]adapters.Inbound(nil), h.events...)
}

// States returns the reported states so far and the last error.
func (h *Host) States() ([]adapters.State, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]adapters.State(nil), h.states...), h.lastErr
}

// Wait blocks until cond holds for the host (checked after every change) or
// the timeout passes, when it fails the test with what.
func (h *Host) Wait(t TB, timeout time.Duration, what string, cond func(h *Host) bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		h.init()
		ch := h.changed
		h.mu.Unlock()
		if cond(h) {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("adaptertest: timed out after %s waiting for %s", timeout, what)
			return
		}
	}
}

// WaitEvents waits until at least n events were delivered and returns them.
func (h *Host) WaitEvents(t TB, n int) []adapters.Inbound {
	t.Helper()
	h.Wait(t, 10*time.Second, "delivered events", func(h *Host) bool { return len(h.Events()) >= n })
	return h.Events()
}

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Logs is a log sink (for slog handlers) that an adapter's goroutines may
// write while the test reads it.
type Logs struct {
	mu sync.Mutex
	b  []byte
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

// String is everything written so far.
func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// msgKey is a message's identity: ids are unique per chat only.
type msgKey struct {
	chat adapters.JID
	id   adapters.MessageID
}
