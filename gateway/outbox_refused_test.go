package gateway

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testlog"
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

// refusingFinish is the turns' store on a disk that fills up: while
// refuse is set, recording a turn (FinishBatch) fails.
type refusingFinish struct {
	turnStore
	refuse  atomic.Bool
	refused atomic.Int64
}

func (r *refusingFinish) FinishBatch(ctx context.Context, b store.Batch, t store.Turn, out []store.OutboxItem, retryAt time.Time) error {
	if r.refuse.Load() {
		r.refused.Add(1)
		return errDiskFull
	}
	return r.turnStore.FinishBatch(ctx, b, t, out, retryAt)
}

// A turn whose outcome the store refused to record (a full disk) is
// recorded once the store takes writes again: its agent does not run again
// for the same messages (each second while the store refused, with its
// MCP replies sent again and its cost spent again), and the message is
// answered once.
func TestTurnRecordedOnceStoreRecovers(t *testing.T) {
	runs := filepath.Join(t.TempDir(), "runs")
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `echo run >> "`+runs+`"; echo answer`), noStart: true})
	r := &refusingFinish{turnStore: h.g.turns.st}
	r.refuse.Store(true)
	h.g.turns.st = r
	h.start()
	h.post(testChat, "m1", "hello")
	testwait.For(t, 10*time.Second, "the turn's record refused", func() bool { return r.refused.Load() > 0 })
	// Time for a worker that gave up on the record to pick the batch
	// again (it did after a second): the store keeps refusing meanwhile.
	testwait.Until(1500*time.Millisecond, func() bool { return r.refused.Load() > 3 })
	r.refuse.Store(false)
	got := h.waitSent(testChat, 1)
	if got[0].Text != "answer" {
		t.Fatalf("chat received %q", got[0].Text)
	}
	testwait.For(t, 10*time.Second, "the work done", func() bool {
		p, err := h.st.PendingFolders(context.Background())
		return err == nil && len(p) == 0
	})
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Errorf("the agent ran %d times for one message; want once", n)
	}
	if n := len(h.fa.sentTo(testChat)); n != 1 {
		t.Errorf("%d replies; want 1", n)
	}
}

// A turn whose record the store refuses for good (here a trigger in the
// real database file that aborts every turn's insert: SQLite's CONSTRAINT,
// as a broken constraint answers) is not retried until shutdown, holding
// its worker: recordUntil stops at once, logs one error, and the batch is
// given up with a notice to the chat, its agent run once.
func TestTurnGivenUpWhenStoreRefusesItForGood(t *testing.T) {
	var logs testlog.Buffer
	runs := filepath.Join(t.TempDir(), "runs")
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `echo run >> "`+runs+`"; echo answer`), noStart: true,
		modify: func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) }})
	db, err := sql.Open("sqlite3", filepath.Join(h.dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse_turns BEFORE INSERT ON turns BEGIN SELECT RAISE(ABORT, 'turn refused'); END`); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.post(testChat, "m1", "hello")
	got := h.waitSent(testChat, 1)
	if got[0].Text != unrecordedNotice {
		t.Fatalf("chat received %q; want the notice %q", got[0].Text, unrecordedNotice)
	}
	testwait.For(t, 10*time.Second, "the work given up", func() bool {
		p, err := h.st.PendingFolders(context.Background())
		return err == nil && len(p) == 0
	})
	b, _ := os.ReadFile(runs)
	if n := strings.Count(string(b), "run"); n != 1 {
		t.Errorf("the agent ran %d times for one message; want once", n)
	}
	l := logs.String()
	if strings.Contains(l, "record turn; retrying") || !strings.Contains(l, "record turn; not retried: the store refuses it for good") ||
		!strings.Contains(l, "turn not recorded; its batch is given up") {
		t.Errorf("log: want the refused record logged once, not retried, and the batch given up:\n%s", l)
	}
}

// pacedAdapter is the fake platform with pacing (adapters.Pacer): every
// send waits until next.
type pacedAdapter struct {
	*fakeAdapter
	next atomic.Int64 // unix nanoseconds
}

func (p *pacedAdapter) SendDue(adapters.JID) time.Duration {
	return max(time.Until(time.Unix(0, p.next.Load())), 0)
}

// A reply that must wait for its turn in the adapter's pacing waits queued
// (pending, deferred to its turn, never handed to the adapter) rather than
// claimed: a crash meanwhile leaves it to be sent after the restart instead
// of failing it as "may or may not have arrived".
func TestOutboxClaimsOnlyWhenPaceAllows(t *testing.T) {
	var paced *pacedAdapter
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"), noStart: true,
		modify: func(o *Options) {
			paced = &pacedAdapter{fakeAdapter: o.Adapters[0].(*fakeAdapter)}
			paced.next.Store(time.Now().Add(time.Hour).UnixNano())
			o.Adapters = []adapters.Adapter{paced}
		}})
	h.start()
	h.send(testChat, "a", "first", "")
	testwait.For(t, 10*time.Second, "the reply deferred to its turn", func() bool {
		it := h.outboxItem("a")
		return it.Status == store.OutboxPending && it.NextAttempt.After(time.Now())
	})
	if it := h.outboxItem("a"); it.Attempts != 0 || h.fa.attemptsOf("a") != 0 {
		t.Fatalf("the reply was claimed (%d attempts) or handed to the adapter (%d) before its turn", it.Attempts, h.fa.attemptsOf("a"))
	}
}

// A reply waiting for its turn in the adapter's pacing when the gateway is
// stopped (a Telegram group paces messages and edits ~3 s apart: a reply
// that finishes a live reply just shown waits so) is sent by the shutdown's
// drain, its turn coming within the drain's time. It was left for the next
// start: the chat saw the live reply deleted at shutdown and the reply
// come again as a new message after the restart.
func TestOutboxDrainSendsPacedReply(t *testing.T) {
	var paced *pacedAdapter
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"), noStart: true,
		modify: func(o *Options) {
			paced = &pacedAdapter{fakeAdapter: o.Adapters[0].(*fakeAdapter)}
			o.Adapters = []adapters.Adapter{paced}
		}})
	h.start()
	// Its turn comes within the drain's time, not before the stop.
	paced.next.Store(time.Now().Add(outboxDrainTimeout - time.Second).UnixNano())
	h.send(testChat, "a", "the reply", "")
	testwait.For(t, 10*time.Second, "the reply deferred to its turn", func() bool {
		it := h.outboxItem("a")
		return it.Status == store.OutboxPending && it.NextAttempt.After(time.Now())
	})
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if s := h.fa.sentTo(testChat); len(s) != 1 || s[0].Text != "the reply" {
		t.Fatalf("sent %+v; want the reply delivered before the gateway stopped", s)
	}
	if it := h.outboxItem("a"); it.Status != store.OutboxSent {
		t.Errorf("the reply is %s; want sent", it.Status)
	}
}

// A stopped turn whose record the store refused (a full disk) is recorded
// once the store takes writes again: its agent is not started again on the
// messages of the turn the user stopped, and the chat is told "Stopped."
// once.
func TestStoppedTurnRecordedOnceStoreRecovers(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, harnessConfig{agent: stoppableAgent(t, dir), noStart: true, modify: func(o *Options) {
		o.Agent.Output = agent.OutputClaudeStream
		o.Agent.ResumeArgs = []string{"--resume", "{session}"}
		o.Agent.Timeout = time.Minute
	}})
	r := &refusingFinish{turnStore: h.g.turns.st}
	h.g.turns.st = r
	h.start()
	h.post(testChat, "m1", "a LONG job")
	pid := childPid(t, dir, 1)
	r.refuse.Store(true)
	posted := time.Now()
	h.post(testChat, "m2", "/stop")
	requireStopped(t, pid, posted)
	testwait.For(t, 10*time.Second, "the stopped turn's record refused", func() bool { return r.refused.Load() > 0 })
	// Time for a worker that gave up on the record to pick the batch
	// again (after a second): the store keeps refusing meanwhile.
	testwait.Until(1500*time.Millisecond, func() bool { return r.refused.Load() > 3 })
	r.refuse.Store(false)
	if sent := texts(h.waitSent(testChat, 1)); sent[0] != stopStopped {
		t.Fatalf("the chat got %q; want %q", sent, stopStopped)
	}
	testwait.For(t, 10*time.Second, "the work done", func() bool { return len(h.pending()) == 0 })
	if ts := h.turns("main"); len(ts) != 1 || ts[0].Status != store.TurnStopped {
		t.Errorf("turns %+v; want the one stopped turn", ts)
	}
	if _, err := os.Stat(filepath.Join(dir, "prompt-2")); err == nil {
		t.Errorf("the agent was started again on the stopped turn's messages:\n%s", turnFile(t, dir, "prompt-2", 2))
	}
}
