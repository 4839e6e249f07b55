package gateway

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// errDiskFull is what SQLite answers a write on a full disk.
var errDiskFull = errors.New("commit: database or disk is full")

// refusingOutbox is the outbox's store on a disk that fills up: while
// refuseClaim (refuseSent) is set, claiming an item (recording its
// delivery) fails.
type refusingOutbox struct {
	outboxStore
	refuseClaim, refuseSent atomic.Bool
	claims, sents           atomic.Int64
}

func (r *refusingOutbox) ClaimOutbox(ctx context.Context, id int64) (bool, error) {
	r.claims.Add(1)
	if r.refuseClaim.Load() {
		return false, errDiskFull
	}
	return r.outboxStore.ClaimOutbox(ctx, id)
}

func (r *refusingOutbox) OutboxSent(ctx context.Context, id int64, platformID adapters.MessageID, bot *store.Message) error {
	r.sents.Add(1)
	if r.refuseSent.Load() {
		return errDiskFull
	}
	return r.outboxStore.OutboxSent(ctx, id, platformID, bot)
}

func refusingHarness(t *testing.T) (*harness, *refusingOutbox) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"), noStart: true})
	r := &refusingOutbox{outboxStore: h.g.outbox.st}
	h.g.outbox.st = r
	h.start()
	return h, r
}

// A reply the platform took while the store could not record it (the
// disk filled up) is recorded once the store takes writes again, without
// a restart: left "sending", it was never settled and every later reply
// to its chat waited behind it until the next start.
func TestOutboxRecordsDeliveryOnceStoreRecovers(t *testing.T) {
	h, r := refusingHarness(t)
	r.refuseSent.Store(true)
	h.send(testChat, "a", "first", "")
	testwait.For(t, 10*time.Second, "the delivery's record refused", func() bool { return r.sents.Load() > 0 })
	h.send(testChat, "b", "second", "")
	r.refuseSent.Store(false) // the operator freed space
	got := h.waitSent(testChat, 2)
	if got[0].Key != "a" || got[1].Key != "b" {
		t.Fatalf("chat received %s, %s; want a, b", got[0].Key, got[1].Key)
	}
	testwait.For(t, 10*time.Second, "both recorded sent", func() bool {
		return h.outboxItem("a").Status == store.OutboxSent && h.outboxItem("b").Status == store.OutboxSent
	})
	if n := len(h.fa.triesOf("a")); n != 1 {
		t.Errorf("a sent %d times; want once (the platform had it)", n)
	}
}

// While the store refuses to claim a due item, the outbox waits between
// tries instead of spinning on it (it retried, and logged an error, some
// ten thousand times a second), and sends it once the store recovers.
func TestOutboxWaitsWhileStoreRefusesClaims(t *testing.T) {
	h, r := refusingHarness(t)
	r.refuseClaim.Store(true)
	h.send(testChat, "a", "first", "")
	testwait.For(t, 10*time.Second, "a claim refused", func() bool { return r.claims.Load() > 0 })
	// Not a wait for something: a spinning outbox makes thousands of
	// claims in this time; one that waits makes one or two.
	time.Sleep(300 * time.Millisecond)
	if n := r.claims.Load(); n > 20 {
		t.Errorf("%d claims within 300 ms of a refused one: the outbox spins on the store's refusal", n)
	}
	r.refuseClaim.Store(false)
	if got := h.waitSent(testChat, 1); got[0].Key != "a" {
		t.Fatalf("chat received %s; want a", got[0].Key)
	}
}
