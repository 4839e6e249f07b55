package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/store"
)

func (h *harness) send(chat, key, text string, folder groups.Folder) {
	h.t.Helper()
	if _, err := h.g.outbox.send(context.Background(), ops.SendRequest{Chat: adapters.JID(chat), Text: text, Key: key, Folder: folder}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) outboxItem(key string) store.OutboxItem {
	h.t.Helper()
	it, err := h.st.OutboxByKey(context.Background(), key)
	if err != nil {
		h.t.Fatal(err)
	}
	return it
}

// Replies to one chat arrive in order; a rate limit (honoured to the
// letter) pauses every send of that adapter, other chats included, and
// nothing is dropped.
func TestOutboxOrderAndRateLimit(t *testing.T) {
	// c is sent once the pause holds: sent earlier, it could go out while
	// the 429 is on its way back, as it would on the platform too.
	limited := make(chan struct{})
	var once sync.Once
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"),
		hooks: testHooks{paused: func(string) { once.Do(func() { close(limited) }) }}})
	const wait = 300 * time.Millisecond
	h.fa.setFail(func(m adapters.Outbound, attempt int) error {
		if m.Key == "a" && attempt == 1 {
			return &adapters.RetryAfterError{Wait: wait}
		}
		return nil
	})
	h.send(testChat, "a", "first", "")
	h.send(testChat, "b", "second", "")
	<-limited
	h.send("test:room/2", "c", "other chat", "")
	got := h.waitSent(testChat, 2)
	if got[0].Key != "a" || got[1].Key != "b" {
		t.Fatalf("chat received %s, %s; want a, b", got[0].Key, got[1].Key)
	}
	tries := h.fa.triesOf("a")
	if len(tries) != 2 {
		t.Fatalf("a tried %d times", len(tries))
	}
	if d := tries[1].At.Sub(tries[0].At); d < wait-5*time.Millisecond {
		t.Errorf("retried after %s; the platform asked for %s", d, wait)
	}
	if b := h.fa.triesOf("b"); len(b) != 1 || b[0].At.Before(got[0].At) {
		t.Errorf("b was tried before a was delivered: %+v", b)
	}
	c := h.waitSent("test:room/2", 1)
	if d := c[0].At.Sub(tries[0].At); d < wait-5*time.Millisecond {
		t.Errorf("another chat of the rate-limited adapter was sent %s after the 429; want the whole adapter paused %s", d, wait)
	}
	if it := h.outboxItem("c"); it.Attempts != 1 {
		t.Errorf("the paused chat's item counted %d attempts; a pause is not an attempt", it.Attempts)
	}
}

// A dead chat fails permanently, at once, without blocking other chats; the
// failures reach the sending folder's next prompt as <delivery_failed>.
func TestOutboxDeadChat(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	const dead = "test:dead/1"
	h.fa.setFail(func(m adapters.Outbound, _ int) error {
		if string(m.Chat) == dead {
			return fmt.Errorf("bot was kicked: %w", adapters.ErrPermanent)
		}
		return nil
	})
	for i := range 3 {
		h.send(dead, fmt.Sprint("d", i), fmt.Sprint("lost <reply> ", i), "main")
	}
	h.send(testChat, "live", "hello", "main")
	h.waitSent(testChat, 1)
	testwait.For(t, 10*time.Second, "dead chat's items failed", func() bool {
		for i := range 3 {
			if h.outboxItem(fmt.Sprint("d", i)).Status != "failed" {
				return false
			}
		}
		return true
	})
	for i := range 3 {
		if n := h.fa.attemptsOf(fmt.Sprint("d", i)); n != 1 {
			t.Errorf("permanent failure tried %d times", n)
		}
	}
	h.post(testChat, "m1", "hi")
	h.waitSent(testChat, 2)
	h.post(testChat, "m2", "hi again")
	h.waitSent(testChat, 3)
	ps := rec.prompts(t)
	if n := strings.Count(ps[0], "<delivery_failed "); n != 3 {
		t.Fatalf("next prompt has %d delivery_failed notices; want 3:\n%s", n, ps[0])
	}
	if !strings.Contains(ps[0], `chat="`+dead+`"`) || !strings.Contains(ps[0], "lost &lt;reply&gt; 0") || !strings.Contains(ps[0], "bot was kicked") {
		t.Errorf("notice lacks chat, text or error:\n%s", ps[0])
	}
	if strings.Contains(ps[1], "<delivery_failed") {
		t.Errorf("notices shown twice:\n%s", ps[1])
	}
}

func TestOutboxNoAdapterForPlatform(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok")})
	h.send("nowhere:room", "x", "hello", "")
	testwait.For(t, 10*time.Second, "item failed", func() bool { return h.outboxItem("x").Status == "failed" })
	if it := h.outboxItem("x"); !strings.Contains(it.Error, "nowhere") {
		t.Errorf("error %q does not name the platform", it.Error)
	}
}

// A reply left in "sending" by a crash may have reached the platform: it is
// not sent again (at most once) and the folder hears about it.
func TestOutboxInterruptedSendNotResent(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv, noStart: true})
	ctx := context.Background()
	it, err := h.st.AddOutbox(ctx, store.OutboxItem{Key: "k1", Kind: "reply", Folder: "main", ChatJID: testChat, Text: "maybe delivered"})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := h.st.ClaimOutbox(ctx, it.ID); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	h.start()
	h.post(testChat, "m1", "hi")
	sent := h.waitSent(testChat, 1)
	if len(sent) != 1 || sent[0].Key == "k1" || h.fa.attemptsOf("k1") != 0 {
		t.Fatalf("interrupted reply was sent again: %+v", sent)
	}
	if st := h.outboxItem("k1").Status; st != "failed" {
		t.Errorf("interrupted item status %q; want failed", st)
	}
	if p := rec.prompts(t)[0]; !strings.Contains(p, "<delivery_failed ") || !strings.Contains(p, "maybe delivered") {
		t.Errorf("prompt lacks the notice:\n%s", p)
	}
}

// blockingAdapter holds every Send until release is closed.
type blockingAdapter struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingAdapter) Name() string { return "block" }

func (b *blockingAdapter) Run(ctx context.Context, _ adapters.Host) error {
	<-ctx.Done()
	return nil
}

func (b *blockingAdapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	b.entered <- struct{}{}
	select {
	case <-b.release:
		return "", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// The outbox claims a row only when a sender is free to send it: a row
// left "sending" by a crash is never resent, so claiming more than is being
// sent would turn a crash into lost replies that were never tried.
func TestOutboxClaimsOnlyWhatItSends(t *testing.T) {
	ba := &blockingAdapter{entered: make(chan struct{}, 64), release: make(chan struct{})}
	waiting := make(chan struct{}, 1)
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"),
		modify: func(o *Options) { o.Adapters = append(o.Adapters, ba) },
		hooks: testHooks{senderWait: func() {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}}})
	const n = sendConcurrency + 4
	for i := range n {
		h.send(fmt.Sprintf("block:c/%d", i), fmt.Sprint("k", i), "hello", "")
	}
	// Every sender is busy and the outbox holds a due item it cannot send:
	// a wrong claim would have happened by now.
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the outbox never waited for a free sender")
	}
	var c int
	if err := h.st.Read().QueryRow(`SELECT count(*) FROM outbox WHERE status = 'sending'`).Scan(&c); err != nil {
		t.Fatal(err)
	}
	if c != sendConcurrency {
		t.Fatalf("%d rows claimed with %d senders busy; want one per sender", c, sendConcurrency)
	}
	close(ba.release)
	testwait.For(t, 10*time.Second, "every item sent", func() bool {
		for i := range n {
			if h.outboxItem(fmt.Sprint("k", i)).Status != "sent" {
				return false
			}
		}
		return true
	})
}

// TestMCPSendsLeaveNoWaiters: every send an agent makes over MCP waits for
// the platform's answer; once it has it, nothing of the wait is kept. A
// gateway that runs for months makes millions of them.
func TestMCPSendsLeaveNoWaiters(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "cat >/dev/null; echo ran")})
	ctx := context.Background()
	const n = 50
	for i := range n {
		sent, err := h.g.backend.Send(ctx, "main", ipc.Outgoing{Chat: testChat, Text: fmt.Sprintf("note %d", i), Kind: store.OutboxSend})
		if err != nil || sent.Status != ipc.SentOK {
			t.Fatalf("send %d: %+v %v", i, sent, err)
		}
	}
	h.g.outbox.mu.Lock()
	left := len(h.g.outbox.waiters)
	h.g.outbox.mu.Unlock()
	if left != 0 {
		t.Errorf("%d waits kept after %d sends that were all delivered; want 0", left, n)
	}
}
