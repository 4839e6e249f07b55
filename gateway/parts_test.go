package gateway

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/internal/testwait"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/scheduler"
	"switchboard/store"
)

// Each part of the gateway built on its own, from fakes or a bare store:
// no Gateway, nothing running but the part.

var discard = slog.New(slog.DiscardHandler)

func openTestStore(t *testing.T, folders ...groups.Folder) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, f := range folders {
		if _, err := st.EnsureGroup(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// kicks records the folders woken.
type kicks struct {
	mu sync.Mutex
	f  []string
}

func (k *kicks) kick(folder groups.Folder) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.f = append(k.f, string(folder))
}

func (k *kicks) list() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.f...)
}

type noRoomGuard struct{}

func (noRoomGuard) refuse(context.Context, adapters.Inbound, []store.WorkItem) error { return nil }
func (noRoomGuard) arrived(store.Message, []store.WorkItem, bool)                    {}

type noFloodWatch struct{}

func (noFloodWatch) arrived(context.Context, store.Message, []store.WorkItem) {}

// intake stores a routed message with its work and wakes the folder; an
// unrouted one is stored, counted and wakes nobody.
func TestIntakeAlone(t *testing.T) {
	st := openTestStore(t, "main")
	table, err := routing.New([]routing.Route{(routing.Route{ID: 1, Match: map[string]string{"chat_jid": "test:room/1"}, Target: "main"}).Normalize()})
	if err != nil {
		t.Fatal(err)
	}
	var k kicks
	m := newMetrics(newAdapterStates(), st, nil)
	in := &intake{st: st, commits: &committer{st: st, stored: func(adapters.JID, int64) {}, kick: k.kick}, table: func() *routing.Table { return table },
		adapters: adapterSet{}, engage: &engagements{m: map[engageKey]engagement{}, now: time.Now}, now: time.Now,
		loop: noRoomGuard{}, flood: noFloodWatch{}, kick: k.kick, inbound: m.inbound, log: discard}
	ctx := context.Background()
	msg := func(chat, id string) adapters.Inbound {
		return adapters.Inbound{Chat: adapters.JID(chat), ID: adapters.MessageID(id), Sender: "test:user/ann", Text: "hi",
			Time: time.Now(), Verb: adapters.VerbMessage}
	}
	if seq, err := in.deliver(ctx, msg("test:room/1", "m1")); err != nil || seq == 0 {
		t.Fatalf("deliver: %d %v", seq, err)
	}
	if _, err := in.deliver(ctx, msg("test:room/2", "m2")); err != nil {
		t.Fatal(err)
	}
	if got := k.list(); len(got) != 1 || got[0] != "main" || in.unroutedCount() != 1 {
		t.Errorf("kicked %v, unrouted %d", got, in.unroutedCount())
	}
	if b, ok, err := st.NextBatch(ctx, "main", maxBatch); err != nil || !ok || b.Messages[0].ID != "m1" {
		t.Errorf("main's batch %+v %v %v", b, ok, err)
	}
}

// batchFake hands out n batches of folder f.
type batchFake struct {
	mu sync.Mutex
	n  int
}

func (b *batchFake) NextBatch(_ context.Context, folder groups.Folder, _ int) (store.Batch, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.n == 0 {
		return store.Batch{}, false, nil
	}
	b.n--
	return messageBatch(folder, "test:room/1", "test:user/ann"), true, nil
}

// lifecycleFake runs turns by counting them.
type lifecycleFake struct {
	mu  sync.Mutex
	ran int
}

func (l *lifecycleFake) nextInterrupted(groups.Folder) (store.Interrupted, bool) {
	return store.Interrupted{}, false
}
func (l *lifecycleFake) awaitTurn(context.Context, store.Interrupted) time.Duration {
	return 0
}
func (l *lifecycleFake) runTurn(context.Context, store.Batch, func()) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ran++
	return 0
}

func (l *lifecycleFake) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ran
}

// A kicked folder's worker runs every batch the store has, then stops;
// after drain nothing runs.
func TestWorkersAlone(t *testing.T) {
	bs := &batchFake{n: 3}
	life := &lifecycleFake{}
	ws := newWorkers(1, bs, &testHooks{}, discard)
	ws.turns = life
	ws.kick("main")
	testwait.For(t, 10*time.Second, "three turns", func() bool { return life.count() == 3 })
	if !ws.drain(10 * time.Second) {
		t.Fatal("drain timed out")
	}
	bs.mu.Lock()
	bs.n = 1
	bs.mu.Unlock()
	ws.kick("main")
	ws.wait()
	if life.count() != 3 {
		t.Errorf("%d turns after drain", life.count()-3)
	}
}

// The outbox sends what is queued through the chat's adapter, records it
// as the bot's message and engages the folder.
func TestOutboxAlone(t *testing.T) {
	st := openTestStore(t, "main")
	fa := newFakeAdapter("test")
	m := newMetrics(newAdapterStates(), st, nil)
	var spoke []string
	var mu sync.Mutex
	o := newOutbox(outboxDeps{st: st, adapters: adapterSet{"test": fa}, layout: groups.Layout{DataDir: t.TempDir()}, hooks: &testHooks{}, log: discard,
		queue: func(ctx context.Context, r ops.SendRequest) (store.OutboxItem, error) {
			return ops.QueueSend(ctx, st, r)
		},
		spoke: func(_ adapters.JID, _ string, folder groups.Folder) {
			mu.Lock()
			spoke = append(spoke, string(folder))
			mu.Unlock()
		},
		deliveries: m.outbox, rateLimits: m.rateLimitWaits})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { o.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	if _, err := o.send(ctx, ops.SendRequest{Chat: testChat, Text: "hello", Folder: "main", Key: "k1"}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "sent", func() bool { return len(fa.sentTo(testChat)) == 1 })
	testwait.For(t, 10*time.Second, "recorded", func() bool {
		it, err := st.OutboxByKey(context.Background(), "k1")
		return err == nil && it.Status == store.OutboxSent
	})
	mu.Lock()
	defer mu.Unlock()
	if len(spoke) != 1 || spoke[0] != "main" {
		t.Errorf("engaged %v", spoke)
	}
}

// runnerFake answers every turn with reply.
type runnerFake struct{ reply string }

func (r runnerFake) Run(context.Context, agent.Spec, agent.Input) (agent.Result, error) {
	return agent.Result{Reply: r.reply, SessionID: "s1"}, nil
}

type noTokens struct{}

func (noTokens) turnTokenEnv(context.Context, groups.Folder, string) []string { return nil }
func (noTokens) endTurnToken(string)                                          {}

// claimHi stores a message "hi" from ann in testChat that triggers main,
// and claims main's batch of it.
func claimHi(t *testing.T, st *store.Store) store.Batch {
	t.Helper()
	ctx := context.Background()
	m := store.Message{ChatJID: testChat, ID: "m1", Sender: "test:user/ann", Text: "hi", Time: time.Now(), Verb: adapters.VerbMessage}
	if _, err := st.EnqueueMessage(ctx, &m, []store.WorkItem{{Folder: "main", ChatJID: testChat, Mode: "trigger", Trigger: store.TriggerMessage}}); err != nil {
		t.Fatal(err)
	}
	b, ok, err := st.NextBatch(ctx, "main", maxBatch)
	if err != nil || !ok {
		t.Fatalf("batch: %v %v", ok, err)
	}
	return b
}

// The turn lifecycle runs a batch through the runner and records it: the
// turn, its reply queued, the session saved, the outbox woken.
func TestTurnsAlone(t *testing.T) {
	st := openTestStore(t, "main")
	ctx := context.Background()
	b := claimHi(t, st)
	woken := 0
	tn := newTestTurns(t, st, runnerFake{reply: "hello ann"}, func() { woken++ })
	if backoff := tn.runTurn(ctx, b, func() {}); backoff != 0 {
		t.Fatalf("backoff %v", backoff)
	}
	turns, err := st.Turns(ctx, "main", 10)
	if err != nil || len(turns) != 1 || turns[0].Status != store.TurnSucceeded {
		t.Fatalf("turns %+v %v", turns, err)
	}
	if it, err := st.OutboxByKey(ctx, turns[0].ID+"/reply"); err != nil || it.Text != "hello ann" || woken != 1 {
		t.Errorf("reply %+v %v, woken %d", it, err, woken)
	}
	if s, _ := st.Session(ctx, "main", testChat, ""); s != "s1" {
		t.Errorf("session %q", s)
	}
}

// statusFake records what the status writer persists.
type statusFake struct {
	adapters []string
	beats    []ops.Heartbeat
}

func (s *statusFake) WriteAdapterStatus(_ context.Context, name string, _ ops.AdapterStatus) error {
	s.adapters = append(s.adapters, name)
	return nil
}

func (s *statusFake) WriteHeartbeat(_ context.Context, h ops.Heartbeat) error {
	s.beats = append(s.beats, h)
	return nil
}

// The status writer persists adapter states only when they changed, a
// heartbeat when asked, and a stopped heartbeat at the end.
func TestStatusWriterAlone(t *testing.T) {
	sink := &statusFake{}
	states := newAdapterStates()
	w := statusWriter{sink: sink, states: states, adapters: []string{"test"}, warning: "careful", log: discard}
	ctx := context.Background()
	states.set("test", adapters.StateConnected, nil)
	w.persist(ctx, false)
	w.persist(ctx, true)
	w.stopped(ctx)
	if len(sink.adapters) != 1 || len(sink.beats) != 2 || sink.beats[0].Stopped || !sink.beats[1].Stopped || sink.beats[1].Warning != "careful" {
		t.Errorf("adapters %v, beats %+v", sink.adapters, sink.beats)
	}
}

// outboxFake and intakeFake are what the MCP backend sees of those parts.
type outboxFake struct{ sent []ops.SendRequest }

func (o *outboxFake) send(_ context.Context, r ops.SendRequest) (store.OutboxItem, error) {
	o.sent = append(o.sent, r)
	return store.OutboxItem{Key: r.Key, Status: store.OutboxSent}, nil
}
func (o *outboxFake) await(string) (<-chan struct{}, func()) { return make(chan struct{}), func() {} }

type intakeFake struct{}

func (intakeFake) storeFetched(context.Context, adapters.Inbound) (int64, error) { return 0, nil }
func (intakeFake) inject(context.Context, ops.InjectRequest) (store.Message, error) {
	return store.Message{}, nil
}

// The MCP backend queues a delegated prompt one hop deeper than the
// calling folder's running turn and wakes the target; engagements go
// through it; a platform no adapter serves is refused before anything
// is queued.
func TestMCPBackendAlone(t *testing.T) {
	st := openTestStore(t, "main", "other")
	var k kicks
	active := &activeTurns{}
	ob := &outboxFake{}
	b := newMCPBackend(&mcpDeps{st: st, adapters: adapterSet{"test": newFakeAdapter("test")}, outbox: ob, active: active, intake: intakeFake{},
		engage: &engagements{m: map[engageKey]engagement{}, now: time.Now}, engageTTL: time.Minute, kick: k.kick, now: time.Now, log: discard}, nil)
	ctx := context.Background()
	running := messageBatch("main", testChat, "test:user/ann")
	running.Items[0].Chain = 2
	active.started("t-1", running)
	if _, err := b.Enqueue(ctx, store.WorkItem{Folder: "other", ChatJID: testChat, Trigger: store.TriggerDelegate, Prompt: "do it", Origin: "main"}); err != nil {
		t.Fatal(err)
	}
	if got := k.list(); len(got) != 1 || got[0] != "other" {
		t.Errorf("kicked %v", got)
	}
	if nb, ok, err := st.NextBatch(ctx, "other", maxBatch); err != nil || !ok || nb.Items[0].Chain != 3 {
		t.Errorf("queued %+v %v %v", nb.Items, ok, err)
	}
	if _, err := b.Engage(testChat, "", "other"); err != nil {
		t.Fatal(err)
	}
	if folder, ended := b.Disengage(testChat, "", func(groups.Folder) bool { return true }); folder != "other" || !ended {
		t.Errorf("disengaged %q %v", folder, ended)
	}
	if _, err := b.Send(ctx, "main", ipcOutgoing("nowhere:room/1")); err == nil || len(ob.sent) != 0 {
		t.Errorf("send to a platform without adapter: %v, queued %d", err, len(ob.sent))
	}
	if _, err := b.Send(ctx, "main", ipcOutgoing(testChat)); err != nil || len(ob.sent) != 1 {
		t.Errorf("send: %v, queued %d", err, len(ob.sent))
	}
	if _, t1 := active.running("main"); !t1.replied[testChat] {
		t.Error("the running turn is not marked as having replied")
	}
}

// The MCP endpoint gives turns no token while it is off.
func TestMCPEndpointOff(t *testing.T) {
	e := &mcpEndpoint{cfg: MCPHTTP{PassToAgents: true}, log: discard}
	if env := e.turnTokenEnv(context.Background(), "main", "t-1"); env != nil || e.URL() != "" {
		t.Errorf("env %v, url %q", env, e.URL())
	}
	e.endTurnToken("t-1") // touches no store while off
}

func ipcOutgoing(chat adapters.JID) ipc.Outgoing {
	return ipc.Outgoing{Chat: chat, Text: "hi", Kind: store.OutboxSend}
}

// countingRunner counts the turns it runs.
type countingRunner struct{ n *atomic.Int32 }

func (r countingRunner) Run(context.Context, agent.Spec, agent.Input) (agent.Result, error) {
	r.n.Add(1)
	return agent.Result{Reply: "ran the task"}, nil
}

// A task cancelled (cancel_task, task cancel from another process) after
// its folder's worker loaded the run's batch, but before the turn started,
// does not run: the user who cancelled it sees no reply from it, and its
// run stays "skipped" (the turn ran and the run was recorded succeeded).
func TestTurnOfACancelledTaskDoesNotStart(t *testing.T) {
	st := openTestStore(t, "main")
	ctx := context.Background()
	slot := time.Now().Add(-time.Minute).Truncate(time.Second).UTC()
	task, err := st.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: testChat, Prompt: "remind", Spec: "@daily", Kind: scheduler.KindCron,
		Timezone: "UTC", Context: scheduler.ContextGroup, Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: slot})
	if err != nil {
		t.Fatal(err)
	}
	if _, errs, err := st.ClaimAndQueue(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: task.ID, From: slot, Next: slot.Add(24 * time.Hour), HasNext: true}, Slot: slot}}); err != nil || errs[0] != nil {
		t.Fatalf("ClaimAndQueue: %v %v", errs, err)
	}
	b, ok, err := st.NextBatch(ctx, "main", maxBatch)
	if err != nil || !ok {
		t.Fatalf("batch: %v %v", ok, err)
	}
	if err := st.SetTaskStatus(ctx, task.ID, scheduler.StatusCancelled, nil); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	tn := newTestTurns(t, st, countingRunner{&ran}, func() {})
	tn.runTurn(ctx, b, func() {})
	if n := ran.Load(); n != 0 {
		t.Errorf("the cancelled task's turn ran %d times, want none", n)
	}
	runs, err := st.TaskRuns(ctx, task.ID, 10)
	if err != nil || len(runs) != 1 || runs[0].Status != store.RunSkipped {
		t.Errorf("runs %+v %v, want the one run skipped", runs, err)
	}
}

// goneDuringCommit is the store whose transactions see their callers go
// away (gone) as they commit.
type goneDuringCommit struct {
	*store.Store
	gone func()
}

func (s goneDuringCommit) EnqueueMessages(ctx context.Context, es []store.Enqueue) error {
	s.gone()
	return s.Store.EnqueueMessages(ctx, es)
}

// A /stop whose sender goes away while it is stored (the web chat's page
// closed, a platform's request timed out) is acted on as it is stored: a
// redelivery is a duplicate and acts on nothing. With nothing running, the
// chat is told so.
func TestStopActedOnWhenItsSenderGoes(t *testing.T) {
	st := openTestStore(t, "main")
	table, err := routing.New([]routing.Route{(routing.Route{ID: 1, Match: map[string]string{"chat_jid": "test:room/1"}, Target: "main"}).Normalize()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &stoppable{}
	stops := &stopper{running: r, table: func() *routing.Table { return table }, log: discard,
		send: func(ctx context.Context, req ops.SendRequest) (store.OutboxItem, error) {
			return ops.QueueSend(ctx, st, req)
		}}
	m := newMetrics(newAdapterStates(), st, nil)
	in := &intake{st: st, commits: &committer{st: goneDuringCommit{Store: st, gone: cancel}, stored: func(adapters.JID, int64) {}, kick: func(groups.Folder) {}},
		table: func() *routing.Table { return table }, adapters: adapterSet{}, engage: &engagements{m: map[engageKey]engagement{}, now: time.Now},
		now: time.Now, loop: noRoomGuard{}, flood: noFloodWatch{}, stops: stops, inbound: m.inbound, log: discard}
	if _, err := in.deliver(ctx, adapters.Inbound{Chat: testChat, ID: "s1", Sender: "test:user/ann", Text: "/stop", Time: time.Now(),
		Verb: adapters.VerbMessage}); err != nil {
		t.Fatalf("deliver: %v; the /stop was stored", err)
	}
	if it, err := st.OutboxByKey(context.Background(), "stop/"+testChat+"/s1"); err != nil || it.Text != stopNothingRunning {
		t.Errorf("the answer to /stop: %+v, %v; want %q", it, err, stopNothingRunning)
	}
}
