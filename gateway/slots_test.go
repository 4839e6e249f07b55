package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// newTestTurns is the turn lifecycle over st and runner with nothing else
// configured (no guards, no live replies); wake is the outbox's wake-up.
func newTestTurns(t *testing.T, st *store.Store, runner agent.Runner, wake func()) *turns {
	t.Helper()
	met := newMetrics(newAdapterStates(), st, runner)
	layout := groups.Layout{DataDir: t.TempDir()}
	return &turns{st: st, runner: runner, agent: agent.Spec{Command: []string{"x"}, Output: "text"}, retryDelays: []time.Duration{time.Millisecond},
		operator: "root", layout: layout, socket: func(groups.Folder) string { return "" }, tokens: noTokens{}, guards: turnGuards{log: discard},
		files: &fetcher{adapters: adapterSet{}, layout: layout, log: discard}, adapters: adapterSet{}, active: &activeTurns{},
		notices: &noticeLimiter{last: map[adapters.JID]time.Time{}, every: time.Minute, now: time.Now}, metrics: met, spend: newSpend(met.reg),
		wakeOutbox: wake, kickAfter: func(groups.Folder, time.Duration) {}, log: discard}
}

// slowRecord holds one batch for each of its folders and runs turns whose
// agents exit at once and whose outcome takes until recorded closes to
// record (a store write queued behind the intake's commits under load).
// Like the store, it hands a folder's batch out again (NextBatch only
// reads) until that batch's turn is recorded.
type slowRecord struct {
	recorded chan struct{}
	mu       sync.Mutex
	pending  map[groups.Folder]bool // batches not yet recorded
	ran      []groups.Folder
	// waited, when set, is closed once the other folder waits for the
	// slot; the first turn's agent exits only then.
	waited chan struct{}
}

func (l *slowRecord) NextBatch(_ context.Context, folder groups.Folder, _ int) (store.Batch, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.pending[folder] {
		return store.Batch{}, false, nil
	}
	return messageBatch(folder, "test:room/"+string(folder), "test:user/ann"), true, nil
}

func (l *slowRecord) nextInterrupted(groups.Folder) (store.Interrupted, bool) {
	return store.Interrupted{}, false
}
func (l *slowRecord) awaitTurn(context.Context, store.Interrupted) time.Duration { return 0 }
func (l *slowRecord) runTurn(_ context.Context, b store.Batch, release func()) time.Duration {
	l.mu.Lock()
	l.ran = append(l.ran, b.Folder)
	first := len(l.ran) == 1
	l.mu.Unlock()
	if first && l.waited != nil {
		<-l.waited
	}
	release() // the agent exited
	<-l.recorded
	l.mu.Lock()
	delete(l.pending, b.Folder)
	l.mu.Unlock()
	return 0
}

func (l *slowRecord) started() []groups.Folder {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]groups.Folder(nil), l.ran...)
}

// With one turn slot, a folder whose agent has exited but whose turn is
// still being recorded does not hold the slot: another folder's turn
// starts meanwhile (under load the record waits behind the intake, and
// the slots sat idle for it). The other folder found the slot taken and
// waited for it, then looked for its batch again and still found it.
func TestSlotFreeWhileTurnRecords(t *testing.T) {
	life := &slowRecord{recorded: make(chan struct{}), pending: map[groups.Folder]bool{"a": true, "b": true}, waited: make(chan struct{})}
	var once sync.Once
	ws := newWorkers(1, life, &testHooks{slotWait: func(groups.Folder) { once.Do(func() { close(life.waited) }) }}, discard)
	ws.turns = life
	ws.kick("a")
	ws.kick("b")
	testwait.For(t, 10*time.Second, "both folders' turns started while the first still records", func() bool {
		return len(life.started()) == 2
	})
	close(life.recorded)
	if !ws.drain(10 * time.Second) {
		t.Fatal("drain timed out")
	}
	if got := life.started(); len(got) != 2 {
		t.Errorf("turns started %v, want one for a and one for b", got)
	}
}

// runnerAt runs every turn by calling run, and answers.
type runnerAt struct{ run func() }

func (r runnerAt) Run(context.Context, agent.Spec, agent.Input) (agent.Result, error) {
	r.run()
	return agent.Result{Reply: "done", SessionID: "s1"}, nil
}

// A turn gives its slot back once its agent has exited and before its
// outcome is recorded, and then records it: the turn, its reply.
func TestTurnReleasesSlotBeforeRecord(t *testing.T) {
	st := openTestStore(t, "main")
	ctx := context.Background()
	b := claimHi(t, st)
	ran, released := false, 0
	var recordedAtRelease int
	tn := newTestTurns(t, st, runnerAt{run: func() { ran = true }}, func() {})
	tn.runTurn(ctx, b, func() {
		released++
		if !ran {
			t.Error("the slot was released before the agent ran")
		}
		ts, err := st.Turns(ctx, "main", 10)
		if err != nil {
			t.Error(err)
		}
		recordedAtRelease = len(ts)
	})
	if released != 1 || recordedAtRelease != 0 {
		t.Errorf("released %d times, with %d turns recorded; want once, before the record", released, recordedAtRelease)
	}
	ts, err := st.Turns(ctx, "main", 10)
	if err != nil || len(ts) != 1 || ts[0].Status != store.TurnSucceeded {
		t.Fatalf("turns %+v %v", ts, err)
	}
	if it, err := st.OutboxByKey(ctx, ts[0].ID+"/reply"); err != nil || it.Text != "done" {
		t.Errorf("reply %+v %v", it, err)
	}
}
