package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
)

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// ID names the worker in outcomes, the workers bucket, its subject and
	// its consumer: the worker of its credentials (Creds.Worker), which
	// the NATS server lets use only that id's subjects. Made subject-safe
	// (subjectSafe). Required.
	ID    string
	Slots int // turns at once (≥ 1)
	// Prepare turns a job's command (agent.command as the gateway has it
	// configured) into the spec to run it with on this machine: argv[0]
	// resolved, the sandbox. The worker fills in the rest from the job.
	Prepare func(command []string) (agent.Spec, error)
	// Drain is how long running turns may go on after ctx ends; then they
	// are cancelled. Default 30 s.
	Drain time.Duration
	// Poll is how long one fetch waits for a job on the server; a stopping
	// worker waits for its fetches to end. Default 5 s.
	Poll   time.Duration
	Logger *slog.Logger
	// Dir is the worker's data directory: its copies of group folders
	// live in Dir/folders (worker_folders.go). Required.
	Dir string
	// AllowEnv are the names this worker's own agent.env allows: of a
	// job's environment the agent gets only these and SWITCHBOARD_* names
	// (jobEnv); every other entry is dropped and counted (DroppedEnv).
	AllowEnv []string
	// WorkerTTL, SnapshotExclude and MaxFolderMB: as in RunnerOptions.
	WorkerTTL       time.Duration
	SnapshotExclude []string
	MaxFolderMB     int
}

// Worker pulls the jobs the gateway gives it from the turns stream (its
// own subject, through its own durable consumer) and runs them.
type Worker struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	opt     WorkerOptions
	log     *slog.Logger
	host    string
	started time.Time
	busy    atomic.Int32
	// finished counts the turns finished (WorkerInfo.Finished): raised
	// before busy drops, and a report reads busy first, so a report never
	// leaves out of Busy a turn it does not count finished.
	finished atomic.Int64
	dropped  atomic.Int64 // job environment entries dropped (jobEnv)
	folders  *workerFolders
	stop     atomic.Bool // draining: reported in the heartbeat
	consMu   sync.Mutex
	cons     jetstream.Consumer // nil: (re)create it
	stops    workerStops        // stop.go
}

// NewWorker binds to the workers bucket and the folder object store,
// waiting for the gateway to create them. nc is connected with the
// worker's credentials (Creds.Options).
func NewWorker(ctx context.Context, nc *nats.Conn, opt WorkerOptions) (*Worker, error) {
	if opt.Slots < 1 {
		return nil, fmt.Errorf("--slots %d: want at least 1", opt.Slots)
	}
	if opt.Prepare == nil {
		return nil, errors.New("remote.NewWorker: no Prepare")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Drain <= 0 {
		opt.Drain = 30 * time.Second
	}
	if opt.Poll <= 0 {
		opt.Poll = 5 * time.Second
	}
	if opt.WorkerTTL <= 0 {
		opt.WorkerTTL = workerTTL
	}
	if opt.Dir == "" {
		return nil, errors.New("remote.NewWorker: no Dir (the worker's data directory)")
	}
	if opt.ID == "" {
		return nil, errors.New("remote.NewWorker: no ID (the worker of its NATS credentials)")
	}
	if subjectSafe(opt.ID) != opt.ID {
		// The server's permissions name this id: a rewritten one would only
		// show later as permission violations on every subject.
		return nil, fmt.Errorf("worker id %q has characters outside [A-Za-z0-9_-]; it must be the name its NATS credentials were minted for (switchboard nats worker add NAME)", opt.ID)
	}
	host, _ := os.Hostname()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	kv, obs, err := bindWorker(ctx, js, opt.Logger)
	if err != nil {
		return nil, err
	}
	folders, err := newWorkerFoldersIn(obs, opt)
	if err != nil {
		return nil, err
	}
	return &Worker{nc: nc, js: js, kv: kv, opt: opt, log: opt.Logger, host: host, started: time.Now(), folders: folders}, nil
}

// Run pulls and runs jobs until ctx ends, then lets running turns finish
// (up to Drain) and publish their outcomes.
func (w *Worker) Run(ctx context.Context) error {
	// The consumer exists before the first heartbeat: the gateway gives
	// turns only to workers it sees in the workers bucket.
	if _, err := w.consumer(ctx); err != nil {
		return err
	}
	stops, err := w.listenStops()
	if err != nil {
		return fmt.Errorf("subscribe to the stops of this worker's turns: %w", err)
	}
	defer func() { _ = stops.Unsubscribe() }()
	turnCtx, cancelTurns := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelTurns()
	stopDrain := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(w.opt.Drain, cancelTurns)
		context.AfterFunc(turnCtx, func() { t.Stop() })
	})
	defer stopDrain()
	w.heartbeat(ctx)
	w.log.Info("worker pulling turns", "worker", w.opt.ID, "slots", w.opt.Slots)
	var slots sync.WaitGroup
	for range w.opt.Slots {
		slots.Go(func() { w.slot(ctx, turnCtx) })
	}
	hb := time.NewTicker(w.opt.WorkerTTL / 3)
	defer hb.Stop()
	done := make(chan struct{})
	go func() { slots.Wait(); close(done) }()
	stopping := ctx.Done()
	for {
		select {
		case <-stopping:
			// Tell the gateway at once: it gives a draining worker no turn.
			stopping = nil
			w.stop.Store(true)
			w.heartbeat(context.WithoutCancel(ctx))
		case <-hb.C:
			// Also while draining: the gateway fails the turns of a worker
			// that stops reporting.
			w.heartbeat(context.WithoutCancel(ctx))
		case <-done:
			// Gone from the bucket: the gateway fails the turns still
			// queued for this worker at once and retries them elsewhere.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = w.kv.Delete(dctx, w.opt.ID)
			_ = w.js.DeleteConsumer(dctx, TurnsStream, workerConsumer(w.opt.ID))
			cancel()
			return nil
		}
	}
}

// consumer is the worker's durable pull consumer on TurnsStream, filtered
// to its own subject, created when missing: at start, and after the server
// removed it (no fetch for workerInactive, e.g. all slots busy with long
// turns). Jobs wait in the stream meanwhile. MaxDeliver 1: a job is never
// redelivered. The worker acknowledges it when it takes it; a worker that
// dies leaves its turns to the gateway, which fails them when the worker
// stops reporting (or at their deadline) and applies its own retry policy.
func (w *Worker) consumer(ctx context.Context) (jetstream.Consumer, error) {
	w.consMu.Lock()
	defer w.consMu.Unlock()
	if w.cons != nil {
		return w.cons, nil
	}
	name := workerConsumer(w.opt.ID)
	cons, err := w.js.CreateOrUpdateConsumer(ctx, TurnsStream, jetstream.ConsumerConfig{
		Durable: name, FilterSubject: workerSubject(w.opt.ID), AckPolicy: jetstream.AckExplicitPolicy,
		MaxDeliver: 1, AckWait: 30 * time.Second, MaxAckPending: -1, MaxWaiting: 4096, InactiveThreshold: workerInactive,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s on %s: %w", name, TurnsStream, err)
	}
	w.cons = cons
	return cons, nil
}

// lostConsumer makes the next consumer call create it again.
func (w *Worker) lostConsumer(cons jetstream.Consumer) {
	w.consMu.Lock()
	defer w.consMu.Unlock()
	if w.cons == cons {
		w.cons = nil
	}
}

// slot is one turn at a time: it fetches a job only when the previous one
// is done.
func (w *Worker) slot(ctx, turnCtx context.Context) {
	for ctx.Err() == nil {
		cons, err := w.consumer(ctx)
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("fetch turn", "err", err)
				sleep(ctx, time.Second)
			}
			continue
		}
		// A long poll that the server ends (after Poll). Not a context: a
		// fetch abandoned by the client while the server delivers a job
		// would lose it (it is never redelivered), so a job that arrives
		// while the worker stops is still run.
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(w.opt.Poll))
		if err != nil {
			if ctx.Err() == nil {
				w.log.Warn("fetch turn", "err", err)
				w.lostConsumer(cons)
				sleep(ctx, time.Second)
			}
			continue
		}
		for m := range batch.Messages() {
			w.take(context.WithoutCancel(ctx), turnCtx, m)
		}
		if err := batch.Error(); err != nil && ctx.Err() == nil && !errors.Is(err, nats.ErrTimeout) {
			w.log.Warn("fetch turn", "err", err)
			w.lostConsumer(cons)
			sleep(ctx, time.Second)
		}
	}
}

// take acknowledges a job, runs it and publishes its outcome.
func (w *Worker) take(ctx, turnCtx context.Context, m jetstream.Msg) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if err := m.DoubleAck(actx); err != nil {
		// Run it anyway: with MaxDeliver 1 no one else gets it; the
		// stream drops it when it expires.
		w.log.Warn("acknowledge turn; running it anyway", "err", err)
	}
	cancel()
	var j Job
	if err := json.Unmarshal(m.Data(), &j); err != nil || !validTurnID(j.TurnID) {
		// Not answered: its turn id names no results subject.
		w.log.Warn("turn unreadable or without a well formed turn id; dropped", "err", err)
		return
	}
	w.busy.Add(1)
	w.heartbeat(ctx)
	if err := w.nc.Publish(takenPrefix+w.opt.ID+"."+j.TurnID, nil); err != nil {
		w.log.Warn("announce turn taken", "turn", j.TurnID, "err", err)
	}
	o := w.run(turnCtx, j)
	o.Finished = w.finished.Add(1)
	w.busy.Add(-1)
	w.heartbeat(ctx) // the slot is free: status and the dispatch see it now, not at the next beat
	data, _ := json.Marshal(o)
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	// No JetStream message id: the stream de-duplicates ids across its
	// subjects, so another worker that learnt the turn's id could publish
	// one first on its own subject and have this outcome dropped as a
	// duplicate. The gateway takes one outcome per turn itself (accept.go).
	if _, err := w.js.Publish(pctx, resultSubject(w.opt.ID, j.TurnID), data); err != nil {
		w.log.Error("publish turn result", "turn", j.TurnID, "err", err)
		return
	}
	w.log.Info("turn done", "worker", w.opt.ID, "turn", j.TurnID, "dir", j.Dir, "ms", o.DurationMs, "ok", o.Error == "")
}

// run runs a job with agent.Run in its folder (at the gateway's path).
func (w *Worker) run(ctx context.Context, j Job) Outcome {
	o := Outcome{TurnID: j.TurnID, Worker: w.opt.ID, ExitCode: -1, SessionID: j.SessionID}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if !w.stops.begin(j.TurnID, stop) {
		w.log.Info("turn stopped before it ran", "worker", w.opt.ID, "turn", j.TurnID)
		o.NotStarted, o.Stopped = true, true
		return o
	}
	defer w.stops.end(j.TurnID)
	if err := checkJob(j, time.Now()); err != nil {
		w.log.Warn("job refused", "worker", w.opt.ID, "turn", j.TurnID, "reason", err)
		o.NotStarted, o.Error = true, "worker "+w.opt.ID+" refused the job: "+err.Error()
		return o
	}
	left := time.Until(time.UnixMilli(j.DeadlineMs))
	if left <= 0 {
		o.NotStarted, o.Error = true, "the turn's deadline passed before a worker took it"
		return o
	}
	spec, err := w.opt.Prepare(j.Command)
	if err != nil {
		o.NotStarted, o.Error = true, err.Error()
		return o
	}
	spec.ResumeArgs, spec.Output, spec.MaxOutput, spec.Timeout, spec.Input = j.ResumeArgs, j.Output, j.MaxOutput, left, j.Input
	spec.Env = nil // the job carries the values the gateway allowed
	// The worker's copy of the folder at the job's version, seen by a
	// sandboxed agent at the gateway's path (worker_folders.go).
	ft, err := w.folders.prepare(ctx, j.Dir, j.Folder)
	if err != nil {
		o.NotStarted, o.Error = true, err.Error()
		return o
	}
	w.log.Info("turn starting", "worker", w.opt.ID, "turn", j.TurnID, "dir", j.Dir)
	in := agent.Input{TurnID: agent.TurnID(j.TurnID), Dir: ft.copy, At: j.Dir, Env: w.jobEnv(j), SessionID: j.SessionID, Prompt: j.Prompt}
	if spec.Steers() {
		in.Steer = agent.NewSteering()
		defer w.takeInputs(j.TurnID, in.Steer)()
	}
	var events *eventPublisher
	if j.Events {
		events = &eventPublisher{nc: w.nc, subject: eventsSubject(w.opt.ID, j.TurnID)}
		in.OnEvent = events.publish
	}
	res, err := agent.Run(ctx, spec, in)
	o.Steered = in.Steer.Taken()
	if events != nil {
		o.Events = events.seq
		if events.dropped > 0 {
			w.log.Info("turn events not published", "turn", j.TurnID, "dropped", events.dropped, "published", events.seq)
		}
	}
	o.Folder = w.finishFolder(ft, j, &err)
	o.Reply, o.SessionID, o.DurationMs, o.ExitCode = res.Reply, res.SessionID, res.Duration.Milliseconds(), res.ExitCode
	if len(res.Replies) > 1 {
		o.Replies = res.Replies
	}
	o.NotStarted, o.TimedOut, o.Truncated, o.Stderr = res.NotStarted, res.TimedOut, res.Truncated, res.Stderr
	o.Usage = res.Usage
	switch {
	case errors.Is(err, agent.ErrStopped):
		o.Stopped = true
	case err != nil:
		o.Error = err.Error()
	}
	return o
}

// jobEnv is the part of j's environment the agent gets: entries named
// SWITCHBOARD_* or in AllowEnv. Any other (BASH_FUNC_x%%, LD_PRELOAD,
// NODE_OPTIONS: code run by the agent's shell, loader or runtime) is
// dropped, counted, and logged by name, never by value.
func (w *Worker) jobEnv(j Job) []string {
	var env []string
	var dropped []string
	for _, kv := range j.Env {
		name, _, ok := strings.Cut(kv, "=")
		if ok && envName(name) && (strings.HasPrefix(name, "SWITCHBOARD_") || slices.Contains(w.opt.AllowEnv, name)) {
			env = append(env, kv)
			continue
		}
		switch {
		case !ok: // perhaps a bare value: not logged
			name = "(an entry without =)"
		case len(name) > 64:
			name = name[:64] + "…"
		}
		dropped = append(dropped, name)
	}
	if len(dropped) > 0 {
		w.dropped.Add(int64(len(dropped)))
		w.log.Warn("job environment entries dropped: neither SWITCHBOARD_* nor in this worker's agent.env", "turn", j.TurnID,
			"names", dropped)
	}
	return env
}

// envName reports whether name is a plain environment variable name
// ([A-Za-z_][A-Za-z0-9_]*).
func envName(name string) bool {
	for i, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return name != ""
}

// heartbeat records the worker in the workers bucket.
func (w *Worker) heartbeat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info := WorkerInfo{ID: w.opt.ID, Host: w.host, Slots: w.opt.Slots, Busy: int(w.busy.Load()), Finished: w.finished.Load(), Draining: w.stop.Load(),
		Started: w.started, Seen: time.Now()}
	data, _ := json.Marshal(info)
	if _, err := w.kv.Put(ctx, w.opt.ID, data); err != nil && ctx.Err() == nil {
		w.log.Warn("record worker heartbeat", "err", err)
	}
}

// listWorkers reads the workers bucket.
func listWorkers(ctx context.Context, kv jetstream.KeyValue) ([]WorkerInfo, error) {
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", err)
	}
	var out []WorkerInfo
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // expired meanwhile
		}
		var wi WorkerInfo
		if json.Unmarshal(e.Value(), &wi) == nil {
			out = append(out, wi)
		}
	}
	slices.SortFunc(out, func(a, b WorkerInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// ListWorkers lists the live workers known to the NATS server nc talks to.
func ListWorkers(ctx context.Context, nc *nats.Conn) ([]WorkerInfo, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	kv, err := js.KeyValue(ctx, workersBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", workersBucket, err)
	}
	return listWorkers(ctx, kv)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
