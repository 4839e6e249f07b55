package remote

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

// holdAgent answers with the name of the worker it ran on; a prompt
// "hold:NAME" first waits for the file $GATES/NAME.
const holdAgent = `p=$(cat); case "$p" in hold:*) while [ ! -e "$GATES/${p#hold:}" ]; do sleep 0.02; done;; esac; echo "$WORKER"`

// namedWorker runs a real Worker whose agents see WORKER=id; stop stops it
// (running turns get drain) and waits for it.
func namedWorker(t *testing.T, nc *nats.Conn, id string, slots int, drain time.Duration) (stop func()) {
	t.Helper()
	prepare := func(command []string) (agent.Spec, error) {
		return agent.Spec{Command: []string{"/bin/sh", "-c", "WORKER=" + id + "; " + strings.Join(command, " ")}}, nil
	}
	_, stop = stoppableWorker(t, nc, WorkerOptions{ID: id, Slots: slots, Prepare: prepare, Drain: drain})
	return stop
}

// dispatchFixture is a Runner with holdAgent and the folders of one test.
type dispatchFixture struct {
	t     *testing.T
	r     *Runner
	root  string
	gates string
	logs  *testlog.Buffer // the Runner's log
}

func newDispatchFixture(t *testing.T, nc *nats.Conn) *dispatchFixture {
	logs := &testlog.Buffer{}
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{holdAgent}, Check: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	f := &dispatchFixture{t: t, r: r, root: t.TempDir(), gates: t.TempDir(), logs: logs}
	t.Setenv("GATES", f.gates)
	return f
}

type turnOut struct {
	worker string
	err    error
}

// start runs a turn of folder with prompt; the channel gets the worker
// that answered.
func (f *dispatchFixture) start(folder, turn, prompt string, timeout time.Duration) <-chan turnOut {
	out := make(chan turnOut, 1)
	in := agent.Input{TurnID: agent.TurnID(turn), Dir: filepath.Join(f.root, "groups", folder), Prompt: prompt,
		Env: []string{"SWITCHBOARD_FOLDER=" + folder}}
	go func() {
		res, err := f.r.Run(context.Background(), agent.Spec{Timeout: timeout, Env: []string{"GATES"}}, in)
		out <- turnOut{res.Reply, err}
	}()
	return out
}

// run runs a turn that does not hold and returns the worker that ran it.
func (f *dispatchFixture) run(folder, turn string) string {
	f.t.Helper()
	o := <-f.start(folder, turn, "go", 20*time.Second)
	if o.err != nil {
		f.t.Fatalf("turn %s of folder %s: %v", turn, folder, o.err)
	}
	return o.worker
}

func (f *dispatchFixture) open(gate string) {
	if err := os.WriteFile(filepath.Join(f.gates, gate), nil, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// busy waits until the workers report these busy slots.
func (f *dispatchFixture) busy(want map[string]int) {
	f.t.Helper()
	testwait.For(f.t, 10*time.Second, "workers busy", func() bool {
		ws, err := f.r.Workers(f.t.Context())
		if err != nil {
			return false
		}
		n := 0
		for _, w := range ws {
			if b, ok := want[w.ID]; ok && w.Busy == b {
				n++
			}
		}
		return n == len(want)
	})
}

func other(w, a, b string) string {
	if w == a {
		return b
	}
	return a
}

// A folder's turns run on the worker that ran it last while it has a free
// slot; another folder goes to the idle worker; when the folder's worker
// is busy and another is free, the turn moves there.
func TestDispatchStickyFolders(t *testing.T) {
	nc := natsConn(t)
	namedWorker(t, nc, "w1", 1, 0)
	namedWorker(t, nc, "w2", 1, 0)
	f := newDispatchFixture(t, nc)

	x := f.run("a", "a-1")
	y := other(x, "w1", "w2")
	for _, turn := range []string{"a-2", "a-3"} {
		if w := f.run("a", turn); w != x {
			t.Errorf("turn %s of folder a ran on %s; want %s, where it ran before", turn, w, x)
		}
	}
	// While a's turn runs on x, folders b and c go to the idle y.
	a4 := f.start("a", "a-4", "hold:a4", 20*time.Second)
	f.busy(map[string]int{x: 1})
	if w := f.run("b", "b-1"); w != y {
		t.Errorf("folder b ran on %s while %s was busy; want the idle %s", w, x, y)
	}
	if w := f.run("c", "c-1"); w != y {
		t.Errorf("folder c ran on %s while %s was busy; want the idle %s", w, x, y)
	}
	// b holds y; x comes free: c's sticky y is busy, so c moves to x.
	b2 := f.start("b", "b-2", "hold:b2", 20*time.Second)
	f.busy(map[string]int{x: 1, y: 1})
	f.open("a4")
	if o := <-a4; o.err != nil || o.worker != x {
		t.Fatalf("a-4: worker %q err %v; want %s", o.worker, o.err, x)
	}
	if w := f.run("c", "c-2"); w != x {
		t.Errorf("folder c ran on %s while its worker %s was busy and %s free; want %s", w, y, x, x)
	}
	// And stays there.
	f.open("b2")
	if o := <-b2; o.err != nil || o.worker != y {
		t.Fatalf("b-2: worker %q err %v; want %s", o.worker, o.err, y)
	}
	if w := f.run("c", "c-3"); w != x {
		t.Errorf("folder c ran on %s; want %s, where it ran last", w, x)
	}
}

// A turn queued on a worker that stops fails as soon as the worker is gone
// (not at its deadline, an hour away); its retry runs on the other worker.
func TestDispatchQueuedOnStoppedWorker(t *testing.T) {
	nc := natsConn(t)
	stop := map[string]func(){
		"w1": namedWorker(t, nc, "w1", 1, 10*time.Millisecond),
		"w2": namedWorker(t, nc, "w2", 1, 10*time.Millisecond),
	}
	f := newDispatchFixture(t, nc)
	x := f.run("a", "a-1")
	y := other(x, "w1", "w2")
	// Both workers busy: a's next turn waits in x's queue.
	h1 := f.start("h1", "h-1", "hold:h", 20*time.Second)
	f.busy(map[string]int{y: 1}) // x has folder a: a new folder goes to y
	h2 := f.start("h2", "h-2", "hold:h", 20*time.Second)
	f.busy(map[string]int{x: 1, y: 1})
	a2 := f.start("a", "a-2", "go", time.Hour)
	testwait.For(t, 10*time.Second, "a-2 given to "+x, func() bool {
		f.r.d.mu.Lock()
		defer f.r.d.mu.Unlock()
		return f.r.d.turns["a-2"].worker == x
	})
	stop[x]()
	select {
	case o := <-a2:
		if !errors.Is(o.err, agent.ErrFailed) || !strings.Contains(o.err.Error(), "worker "+x+" stopped reporting") {
			t.Fatalf("a-2: worker %q err %v; want the turn failed naming the stopped worker %s", o.worker, o.err, x)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("a-2, queued on the stopped %s, still waits (its deadline is an hour away)", x)
	}
	f.open("h")
	<-h1
	<-h2
	if w := f.run("a", "a-3"); w != y {
		t.Errorf("the retry of folder a ran on %s; want %s, the live worker", w, y)
	}
}

// With no live worker a turn waits for one (it is not published for
// nobody), and runs when one starts.
func TestRemoteTurnWaitsForWorker(t *testing.T) {
	nc := natsConn(t)
	f := newDispatchFixture(t, nc)
	out := f.start("a", "a-1", "go", 20*time.Second)
	// The operator is told why the turn does not start; the worker
	// starts only once the turn waits for one.
	testwait.For(t, 10*time.Second, "the turn waiting for a worker", func() bool {
		return strings.Contains(f.logs.String(), "remote turn waits for a worker") && strings.Contains(f.logs.String(), "turn=a-1")
	})
	namedWorker(t, nc, "late", 1, 0)
	if o := <-out; o.err != nil || o.worker != "late" {
		t.Fatalf("worker %q err %v; want the turn run by the worker that started", o.worker, o.err)
	}
}

// Worker ids become subject tokens: a name whose dots would split the
// worker's subjects gets no credentials.
func TestWorkerIDSubjectSafe(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []string{"host.example.com-12", "w>", "a*b", "", strings.Repeat("x", 65)} {
		if _, err := AddWorker(dir, id, ""); !errors.Is(err, ErrWorkerName) {
			t.Errorf("AddWorker %q: err %v; want ErrWorkerName", id, err)
		}
	}
	if _, err := AddWorker(dir, "host_example_com-12", ""); err != nil {
		t.Fatal(err)
	}
	// NewWorker refuses such an id rather than rewriting it: the server's
	// permissions name the credentials' exact id.
	_, err := NewWorker(t.Context(), natsConn(t), WorkerOptions{ID: "host.example.com-12", Slots: 1, Dir: t.TempDir(),
		Prepare: func([]string) (agent.Spec, error) { return agent.Spec{}, nil }})
	if err == nil || !strings.Contains(err.Error(), "nats worker add") {
		t.Errorf("NewWorker with id host.example.com-12: %v; want it refused, saying how ids are made", err)
	}
}

// A turns stream made when all workers shared one subject and one
// consumer (an earlier version) is moved to per-worker subjects: turns run.
func TestUpgradeSharedTurnsStream(t *testing.T) {
	nc := natsConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(t.Context(), jetstream.StreamConfig{Name: TurnsStream, Subjects: []string{TurnsSubject},
		Retention: jetstream.WorkQueuePolicy, MaxAge: keep, Duplicates: keep}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(t.Context(), TurnsStream, jetstream.ConsumerConfig{Durable: legacyConsumer,
		AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 1}); err != nil {
		t.Fatal(err)
	}
	namedWorker(t, nc, "w1", 1, 0)
	f := newDispatchFixture(t, nc)
	if w := f.run("a", "a-1"); w != "w1" {
		t.Errorf("worker %q; want w1", w)
	}
}

// A worker whose slots were all busy for longer than its consumer's
// InactiveThreshold (the server removed the consumer) creates it again and
// runs the jobs that waited for it meanwhile.
func TestWorkerConsumerRemovedWhileBusy(t *testing.T) {
	defer func(d time.Duration) { workerInactive = d }(workerInactive)
	workerInactive = time.Second
	nc := natsConn(t)
	namedWorker(t, nc, "w1", 1, 0)
	f := newDispatchFixture(t, nc)
	held := f.start("a", "a-1", "hold:a1", 20*time.Second)
	f.busy(map[string]int{"w1": 1})
	queued := f.start("b", "b-1", "go", 20*time.Second)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the busy worker's consumer removed by the server", func() bool {
		_, err := js.Consumer(t.Context(), TurnsStream, workerConsumer("w1"))
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
	f.open("a1")
	for _, out := range []<-chan turnOut{held, queued} {
		if o := <-out; o.err != nil || o.worker != "w1" {
			t.Errorf("worker %q err %v; want the turn run by w1", o.worker, o.err)
		}
	}
}

// A gateway that restarted counts the turns it gives each worker from
// zero; a worker still running a turn the earlier process gave it reports
// that slot busy, and a new folder goes to the idle worker instead of
// queueing behind it.
func TestDispatchCountsTurnsOfAnEarlierGateway(t *testing.T) {
	nc := natsConn(t)
	namedWorker(t, nc, "w1", 1, time.Second)
	namedWorker(t, nc, "w2", 1, time.Second)
	before := newDispatchFixture(t, nc) // the gateway before the restart
	held := before.start("a", "a-1", "hold:a", 20*time.Second)
	var x string
	testwait.For(t, 10*time.Second, "a-1 given to a worker", func() bool {
		before.r.d.mu.Lock()
		defer before.r.d.mu.Unlock()
		x = before.r.d.turns["a-1"].worker
		return x != ""
	})
	before.busy(map[string]int{x: 1})
	gates := before.gates

	after := newDispatchFixture(t, nc) // the restarted gateway: no count of a-1
	if w := after.run("b", "b-1"); w != other(x, "w1", "w2") {
		t.Errorf("folder b ran on %s, busy with the earlier gateway's turn; want the idle %s", w, other(x, "w1", "w2"))
	}
	if err := os.WriteFile(filepath.Join(gates, "a"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	<-held
}

// A folder's turn goes back to the worker its last turn ran on even when
// that turn's outcome came before the worker's report of the freed slot
// (the report still counting the ended turn): TestDispatchStickyFolders
// saw it go to the other worker when the report came late.
func TestDispatchStickyBeforeTheFreedSlotsReport(t *testing.T) {
	now := time.Now()
	d := &dispatcher{workers: map[string]seenWorker{
		"w1": {info: WorkerInfo{ID: "w1", Slots: 1}, seen: now},
		"w2": {info: WorkerInfo{ID: "w2", Slots: 1}, seen: now},
	}, turns: map[string]assignment{}, load: map[string]int{}, last: map[string]string{}, news: make(chan struct{}), ttl: time.Minute}
	first := d.pick("a-1", "/f/a")
	d.ran("a-1", first)
	// The worker reports the turn running (its report at the start)...
	w := d.workers[first]
	w.info.Busy = 1
	d.workers[first] = w
	// ...and the outcome comes before its next report.
	d.done("a-1", 1)
	if got := d.pick("a-2", "/f/a"); got != first {
		t.Errorf("a-2 went to %s; want %s, where a-1 ran and whose slot is free", got, first)
	}
	// A worker still running a turn of an earlier gateway stays counted.
	d.done("a-2", 0) // no outcome came
	d.workers["w2"] = seenWorker{info: WorkerInfo{ID: "w2", Slots: 1, Busy: 1}, seen: now}
	if got := d.pick("b-1", "/f/b"); got != first {
		t.Errorf("b-1 went to %s; want %s, the worker with a free slot", got, first)
	}
}

// A worker reports its freed slot before it sends the turn's outcome, and
// the report may well come first: the ended turn is then discounted once,
// not twice, so a turn an earlier gateway gave the worker, still running,
// stays counted; a report that counts an ended turn finished stops
// discounting it, and a restarted worker (another Started) starts over.
func TestDispatchDiscountsAnEndedTurnOnce(t *testing.T) {
	now := time.Now()
	started := now.Add(-time.Hour)
	report := func(d *dispatcher, busy int, finished int64, started time.Time) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.report("w1", WorkerInfo{ID: "w1", Slots: 2, Busy: busy, Finished: finished, Started: started}, now)
	}
	used := func(d *dispatcher) int { return d.used(d.workers["w1"].info) }
	newD := func() *dispatcher {
		d := &dispatcher{workers: map[string]seenWorker{}, turns: map[string]assignment{}, load: map[string]int{}, last: map[string]string{},
			news: make(chan struct{}), ttl: time.Minute}
		report(d, 1, 0, started) // a turn of an earlier gateway process runs
		return d
	}

	d := newD()
	d.pick("a-1", "/f/a")
	report(d, 2, 0, started)
	report(d, 1, 1, started) // the freed slot first...
	d.done("a-1", 1)         // ...then the outcome
	if got := used(d); got != 1 {
		t.Errorf("report first: %d slots used; want 1, the earlier gateway's turn", got)
	}

	d = newD()
	d.pick("a-1", "/f/a")
	report(d, 2, 0, started)
	d.done("a-1", 1) // the outcome first...
	if got := used(d); got != 1 {
		t.Errorf("outcome first: %d slots used; want 1", got)
	}
	report(d, 2, 0, started) // a report put before the turn ended comes late: it still counts the turn
	if got := used(d); got != 1 {
		t.Errorf("outcome, then a stale report: %d slots used; want 1", got)
	}
	report(d, 1, 1, started) // ...then the report, which counts it finished
	if got := used(d); got != 1 {
		t.Errorf("outcome, then report: %d slots used; want 1", got)
	}

	d = newD()
	d.pick("a-1", "/f/a")
	report(d, 2, 0, started)
	d.done("a-1", 1)
	report(d, 2, 0, now) // the worker restarted: its Busy is its own
	if got := used(d); got != 2 {
		t.Errorf("restarted worker: %d slots used; want its report's 2", got)
	}
}
