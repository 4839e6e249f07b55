package gateway

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// budgetFake is the budget guard's store.
type budgetFake struct {
	budgets  []store.Budget
	spent    float64
	pending  []groups.Folder
	released []string
	skipped  []string // batches skipped, by reason
	taskRuns int64    // queued task runs SkipTaskRuns skips
}

func (b *budgetFake) Budgets(context.Context) ([]store.Budget, error)         { return b.budgets, nil }
func (b *budgetFake) PendingFolders(context.Context) ([]groups.Folder, error) { return b.pending, nil }
func (b *budgetFake) ReleaseChats(_ context.Context, folder groups.Folder, _ ...time.Time) (int64, error) {
	b.released = append(b.released, string(folder))
	return 1, nil
}
func (b *budgetFake) Spent(context.Context, groups.Folder, time.Time) (float64, error) {
	return b.spent, nil
}
func (b *budgetFake) SkipBatch(_ context.Context, _ store.Batch, reason string) error {
	b.skipped = append(b.skipped, reason)
	return nil
}
func (b *budgetFake) SkipTaskRuns(context.Context, groups.Folder, string) (int64, error) {
	n := b.taskRuns
	b.taskRuns = 0
	return n, nil
}

func newTestBudgetGuard(st *budgetFake, h *heldChats, kicks *[]string) *budgetGuard {
	clock := &fixedClock{t: time.Date(2030, 1, 15, 12, 0, 0, 0, time.UTC)}
	return &budgetGuard{st: st, now: clock.now, zone: time.UTC, holder: h.holder(), log: slog.New(slog.DiscardHandler),
		kick: func(f groups.Folder) { *kicks = append(*kicks, string(f)) }}
}

// A used-up budget holds a message turn's chat (told once per window, by
// key) and skips a task run; under the cap, or with no budget, turns run.
func TestBudgetGuard(t *testing.T) {
	st := &budgetFake{budgets: []store.Budget{{Folder: "main", DailyUSD: 1}}}
	var h heldChats
	var kicks []string
	bg := newTestBudgetGuard(st, &h, &kicks)
	ctx := context.Background()
	msg := turnCandidate{batch: messageBatch("main/sub", "test:room/1", "test:user/ann")}
	task := turnCandidate{batch: store.Batch{Folder: "main", ChatJID: "test:room/1", Items: []store.WorkItem{{Trigger: store.TriggerTask, TaskID: 7}}}}
	if v, err := bg.check(ctx, msg); v != verdictRun || err != nil {
		t.Fatalf("before load: %v %v", v, err)
	}
	if err := bg.load(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := bg.check(ctx, msg); v != verdictRun {
		t.Fatal("held under the cap")
	}
	st.spent = 1.5
	if v, err := bg.check(ctx, msg); v != verdictHeld || err != nil {
		t.Fatalf("over the cap: %v %v", v, err)
	}
	if _, ok := h.deferTo["main/sub/test:room/1/"]; !ok || len(h.sent) != 1 {
		t.Errorf("holds %v, notices %d", h.deferTo, len(h.sent))
	}
	if v, _ := bg.check(ctx, task); v != verdictHeld || len(st.skipped) != 1 {
		t.Errorf("task run: %v, skipped %v", v, st.skipped)
	}
	// A reload that finds the cap raised lets the held chats run.
	st.pending = []groups.Folder{"main/sub"}
	st.budgets = []store.Budget{{Folder: "main", DailyUSD: 5}}
	if err := bg.load(ctx); err != nil {
		t.Fatal(err)
	}
	if len(st.released) != 1 || len(kicks) != 1 {
		t.Errorf("released %v, kicked %v", st.released, kicks)
	}
}

// spentStore is the store with what was spent fixed.
type spentStore struct {
	*store.Store
	spent float64
}

func (s spentStore) Spent(context.Context, groups.Folder, time.Time) (float64, error) {
	return s.spent, nil
}

// An operator who raises a used-up cap lets the held chats run: also the
// chat whose turn the guard was holding at that moment (decided on the old
// cap, stored after the reload released the holds it found), which
// otherwise stayed silent until the day or month was over.
func TestBudgetRaisedWhileAChatIsHeld(t *testing.T) {
	ctx := context.Background()
	st := openTestStore(t, "main")
	if err := st.SetBudget(ctx, store.Budget{Folder: "main", DailyUSD: 1}); err != nil {
		t.Fatal(err)
	}
	hook := &deferHook{Store: st}
	var k kicks
	bg := &budgetGuard{st: spentStore{Store: st, spent: 2}, now: time.Now, zone: time.UTC, kick: k.kick, log: discard,
		holder: chatHolder{st: hook, log: discard, kickAfter: func(groups.Folder, time.Duration) {},
			send: func(context.Context, ops.SendRequest) (store.OutboxItem, error) { return store.OutboxItem{}, nil }}}
	if err := bg.load(ctx); err != nil {
		t.Fatal(err)
	}
	m := store.Message{ChatJID: testChat, ID: "m1", Sender: "test:user/ann", Text: "hello", Time: time.Now()}
	if _, err := st.EnqueueMessage(ctx, &m, []store.WorkItem{{Folder: "main", ChatJID: testChat, Mode: "trigger", Trigger: store.TriggerMessage}}); err != nil {
		t.Fatal(err)
	}
	b, ok, err := st.NextBatch(ctx, "main", maxBatch)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	hook.before = func() { // the operator raises the cap; the reload runs
		if err := st.SetBudget(ctx, store.Budget{Folder: "main", DailyUSD: 100}); err != nil {
			t.Error(err)
		}
		if err := bg.load(ctx); err != nil {
			t.Error(err)
		}
	}
	if v, err := bg.check(ctx, turnCandidate{batch: b}); v != verdictHeld || err != nil {
		t.Fatalf("check: %v, %v; want it held on the cap it read", v, err)
	}
	if _, ok, err := st.NextBatch(ctx, "main", maxBatch); err != nil || !ok {
		t.Errorf("the message waits for the end of the day after the cap was raised (ready: %v, %v)", ok, err)
	}
	if len(k.list()) == 0 {
		t.Error("the folder was not woken")
	}
}
