package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
)

// DefaultGrace is how long after a turn's deadline the gateway still
// waits for its outcome: the worker's kill of a timed-out agent (SIGTERM,
// then SIGKILL 2 s later), the end of its output, and the trip back.
const DefaultGrace = 5 * time.Second

// RunnerOptions configure a Runner.
type RunnerOptions struct {
	// Command is agent.command as configured ("switchboard" and relative
	// names are resolved by each worker).
	Command []string
	Grace   time.Duration // default DefaultGrace
	// Check is how often a waiting turn checks that the worker it was
	// given still reports, and how often a turn waiting for a worker
	// looks for one (default 2 s).
	Check  time.Duration
	Logger *slog.Logger
	// WorkerTTL is how long a worker's entry outlives its last heartbeat
	// (default 15 s; the same on the gateway and its workers).
	WorkerTTL time.Duration
	// SnapshotExclude (nats.snapshot_exclude) are globs never snapshotted
	// besides DefaultSnapshotExclude; MaxFolderMB (nats.max_folder_mb,
	// default DefaultMaxFolderMB) caps a snapshotted folder.
	SnapshotExclude []string
	MaxFolderMB     int
	// FoldersRoot is where the group folders live (<data_dir>/groups),
	// announced to workers in each job (Job.Root): a worker runs only
	// folders strictly inside it. Default: each folder's parent directory.
	FoldersRoot string
	// StateDir (<data_dir>/remote-turns) keeps each published turn's
	// folder and worker until the turn is over, so that a restarted
	// gateway applies the outcome of a turn it reattaches to (Await) only
	// from that worker and to that folder. "": not kept (Await then has
	// nothing to reattach to).
	StateDir string
}

// Runner is the gateway's agent.Runner for agent.runner: nats.
type Runner struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	opt   RunnerOptions
	log   *slog.Logger
	stop  jetstream.ConsumeContext
	taken *nats.Subscription
	mu    sync.Mutex
	waits map[string]*pending // turn id → its waiting Run or Await (accept.go)
	// ended: turns no longer awaited, oldest first in endedOrder (at most
	// maxEnded), whose late outcomes are refused as stale.
	ended      map[string]turnRecord
	endedOrder []string
	refused    atomic.Int64 // outcomes refused by acceptOutcome
	// applying: folder → done when the last outcome deliver queued for it
	// is applied (the next one waits for it).
	applying map[string]chan struct{}
	by       map[string]string // turn id → the worker it was given (or that says it took it: a hint)
	fold     *folders
	d        *dispatcher
}

// NewRunner creates the streams when missing and starts reading outcomes.
// Close stops it.
func NewRunner(ctx context.Context, nc *nats.Conn, opt RunnerOptions) (*Runner, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Grace <= 0 {
		opt.Grace = DefaultGrace
	}
	if opt.Check <= 0 {
		opt.Check = 2 * time.Second
	}
	if opt.WorkerTTL <= 0 {
		opt.WorkerTTL = workerTTL
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	kv, err := ensureStreams(ctx, js, opt.WorkerTTL)
	if err != nil {
		return nil, err
	}
	fold, err := newFolders(ctx, js, opt.SnapshotExclude, opt.MaxFolderMB, opt.Logger)
	if err != nil {
		return nil, err
	}
	r := &Runner{nc: nc, js: js, kv: kv, opt: opt, log: opt.Logger, waits: map[string]*pending{}, ended: map[string]turnRecord{}, by: map[string]string{},
		applying: map[string]chan struct{}{}, fold: fold}
	if err := r.pruneRecords(); err != nil {
		return nil, fmt.Errorf("remote turns' state dir %s: %w", opt.StateDir, err)
	}
	if r.d, err = newDispatcher(ctx, kv, opt.WorkerTTL); err != nil {
		return nil, fmt.Errorf("watch bucket %s: %w", workersBucket, err)
	}
	// Which worker took which turn: a hint (core NATS, not stored) that
	// lets a turn fail as soon as its worker stops reporting, not only at
	// its deadline.
	if r.taken, err = nc.Subscribe(takenPrefix+"*.*", r.noteTaken); err != nil {
		r.d.stop()
		return nil, fmt.Errorf("subscribe %s: %w", takenPrefix+"*.*", err)
	}
	// Outcomes published from now on; one of a turn nobody waits for (its
	// deadline passed, or an earlier gateway published it) is dropped.
	cons, err := js.OrderedConsumer(ctx, ResultsStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	if err != nil {
		r.d.stop()
		_ = r.taken.Unsubscribe()
		return nil, fmt.Errorf("read stream %s: %w", ResultsStream, err)
	}
	if r.stop, err = cons.Consume(r.deliver); err != nil {
		r.d.stop()
		_ = r.taken.Unsubscribe()
		return nil, fmt.Errorf("read stream %s: %w", ResultsStream, err)
	}
	return r, nil
}

// Close stops reading outcomes; Runs still waiting end at their deadline.
func (r *Runner) Close() {
	r.stop.Stop()
	_ = r.taken.Unsubscribe()
	r.d.stop()
}

// noteTaken records that the worker a turn was given took it. The worker
// is the subject's (only it may publish there); a note from another is
// ignored.
func (r *Runner) noteTaken(m *nats.Msg) {
	worker, turn, ok := strings.Cut(strings.TrimPrefix(m.Subject, takenPrefix), ".")
	if !ok {
		return
	}
	r.mu.Lock()
	given := r.by[turn]
	r.mu.Unlock()
	if given == worker {
		r.d.ran(turn, worker)
	}
}

// workerGone reports the worker given turn when it no longer reports
// (its last heartbeat is older than WorkerTTL, or its entry was deleted),
// as the dispatcher's watch of the workers bucket sees it: no round trip
// to NATS per waiting turn and check.
func (r *Runner) workerGone(turn string) (string, bool) {
	r.mu.Lock()
	w := r.by[turn]
	r.mu.Unlock()
	if w == "" {
		return "", false
	}
	return w, !r.d.reports(w)
}

// deliver hands an outcome to the Run or Await waiting for it, once,
// after its folder changes are applied: only an outcome acceptOutcome
// accepts changes anything. Applying (a download) runs beside the
// stream's reader, in the stream's order for each folder, so that it
// holds up no other folder's outcome.
func (r *Runner) deliver(m jetstream.Msg) {
	var o Outcome
	if err := json.Unmarshal(m.Data(), &o); err != nil || o.TurnID == "" {
		r.log.Warn("remote outcome unreadable; dropped", "subject", m.Subject(), "err", err)
		return
	}
	if !r.fromSubject(m.Subject(), o) || !r.acceptOutcome(o) {
		return
	}
	if o.Folder == nil {
		r.handOver(o)
		return
	}
	dir := o.Folder.Dir
	done := make(chan struct{})
	r.mu.Lock()
	prev := r.applying[dir]
	r.applying[dir] = done
	r.mu.Unlock()
	go func() {
		if prev != nil {
			<-prev
		}
		r.applyFolder(o)
		close(done)
		r.mu.Lock()
		if r.applying[dir] == done {
			delete(r.applying, dir)
		}
		r.mu.Unlock()
		r.handOver(o)
	}()
}

// handOver gives o, accepted, to the Run or Await waiting for it, if it
// still waits.
func (r *Runner) handOver(o Outcome) {
	r.mu.Lock()
	p, ok := r.waits[o.TurnID]
	r.mu.Unlock()
	r.d.ran(o.TurnID, o.Worker)
	if !ok {
		r.log.Info("remote outcome of a turn no longer waited for; dropped", "turn", o.TurnID, "worker", o.Worker)
		return
	}
	p.ch <- o // buffered, and sent once (acceptOutcome): never blocks
}

// Run gives the turn to a worker (see dispatcher.pick; while no worker is
// live it waits for one until the turn's deadline), publishes it on that
// worker's subject and waits for its outcome until its deadline
// (spec.Timeout from now) plus Grace. A turn without an outcome by then
// failed as timed out: the gateway counts it as an attempt; so does one
// whose worker stops reporting first. in.TurnID must be well formed.
func (r *Runner) Run(ctx context.Context, spec agent.Spec, in agent.Input) (agent.Result, error) {
	res := agent.Result{SessionID: in.SessionID, ExitCode: -1}
	started := time.Now()
	job, err := r.job(spec, in, started)
	if err != nil {
		res.NotStarted = true
		return res, err
	}
	job.Events = in.OnEvent != nil
	if job.Folder, err = r.publishFolder(ctx, job); err != nil {
		res.NotStarted = true
		return res, err
	}
	data, err := json.Marshal(job)
	if err != nil {
		res.NotStarted = true
		return res, agent.Failed("encode remote turn: " + err.Error())
	}
	ch, forget := r.expect(job.TurnID, job.Dir, "")
	defer forget()
	worker, wres, err := r.d.assign(ctx, job.TurnID, job.Dir, time.UnixMilli(job.DeadlineMs), r.opt.Check, r.log)
	var finished int64 // the outcome's Finished
	defer func() { r.d.done(job.TurnID, finished) }()
	if err != nil {
		wres.SessionID, wres.Duration = in.SessionID, time.Since(started)
		return wres, err
	}
	// Given before it is published: a turn still queued on a worker that
	// dies fails as one that worker took; only that worker's outcome is
	// accepted. Recorded until the turn is over, also when the gateway
	// stops meanwhile (ctx ends): a restarted gateway reattaches to it.
	r.setWorker(job.TurnID, worker)
	rec := turnRecord{Dir: job.Dir, Worker: worker, DeadlineMs: job.DeadlineMs}
	if err := r.record(job.TurnID, rec); err != nil {
		r.log.Warn("record a remote turn for a restarted gateway", "turn", job.TurnID, "err", err)
	}
	defer func() {
		if ctx.Err() == nil || agent.StopRequested(ctx) { // a stopped turn is over
			r.unrecord(job.TurnID)
		}
	}()
	relay := r.followEvents(worker, job.TurnID, in.OnEvent)
	defer relay.close()
	// Published without the turn's cancellation, for at most
	// publishTimeout: a stop (or shutdown) that comes while the job is on
	// its way would otherwise leave it stored in the worker's queue with
	// no sequence to take it out by, and the worker would run it later.
	// A turn stopped meanwhile is stopped below as any published one.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	ack, err := r.js.Publish(pctx, workerSubject(worker), data, jetstream.WithMsgID(job.TurnID))
	cancel()
	if err != nil {
		res.NotStarted = true
		if agent.StopRequested(ctx) {
			// Perhaps stored all the same: the worker that takes it
			// remembers the stop and does not run it.
			r.sendStop(worker, job.TurnID)
			return res, agent.Ended(ctx)
		}
		if ctx.Err() != nil {
			return res, agent.Cancelled(ctx.Err())
		}
		return res, agent.Failed(fmt.Sprintf("publish the turn to NATS stream %s: %v; check nats.url and that the NATS server has JetStream", TurnsStream, err))
	}
	// With the job's place in the stream: a restarted gateway that stops
	// the turn takes it out of the worker's queue as Run does (dropJob).
	rec.Seq = ack.Sequence
	if err := r.record(job.TurnID, rec); err != nil {
		r.log.Warn("record a remote turn for a restarted gateway", "turn", job.TurnID, "err", err)
	}
	if in.Steer != nil && spec.Steers() {
		defer r.forwardInputs(in.Steer, worker, job.TurnID)()
	}
	if from := r.d.moved(job.TurnID); from != "" {
		// The folder's copy on the new worker may be stale: this turn
		// moves bytes. Logged so that operators see how often it happens.
		r.log.Info("remote turn moves folder to another worker", "turn", job.TurnID, "dir", job.Dir, "from", from, "worker", worker)
	}
	r.log.Debug("remote turn published", "turn", job.TurnID, "dir", job.Dir, "worker", worker, "folder_version", job.Folder.Version)
	wait := time.NewTimer(time.Until(time.UnixMilli(job.DeadlineMs)) + r.opt.Grace)
	defer wait.Stop()
	check := time.NewTicker(r.opt.Check)
	defer check.Stop()
	for {
		select {
		case o := <-ch:
			finished = o.Finished
			in.Steer.Settle(o.Steered)
			if o.NotStarted && o.Error != "" {
				// Perhaps the worker could not fetch the folder's version:
				// the next turn checks that its objects still exist.
				r.fold.doubt(job.Dir)
			}
			relay.wait(o.Events, r.opt.Grace)
			return outcomeResult(o, in.SessionID)
		case <-ctx.Done():
			res.Duration = time.Since(started)
			if agent.StopRequested(ctx) {
				o, came, unrun := r.stopOnWorker(ctx, worker, job.TurnID, ack.Sequence, ch)
				res.NotStarted = unrun // taken out of the worker's queue
				if came {
					finished = o.Finished
					in.Steer.Settle(o.Steered)
					relay.wait(o.Events, r.opt.Grace)
				}
				return stoppedResult(ctx, o, came, res)
			}
			return res, agent.Cancelled(ctx.Err())
		case <-check.C:
			if w, gone := r.workerGone(job.TurnID); gone {
				// Should the worker come back, it does not run the turn
				// that is retried elsewhere meanwhile.
				r.dropJob(ctx, worker, job.TurnID, ack.Sequence)
				res.Duration = time.Since(started)
				return res, agent.Failed(fmt.Sprintf("worker %s stopped reporting (for %s) while it had the turn; check that worker's log", w, r.opt.WorkerTTL))
			}
		case <-wait.C:
			res.Duration = time.Since(started)
			res.TimedOut = true
			return res, agent.Failed(fmt.Sprintf("no worker reported the turn's result by its deadline (agent.timeout %s + %s); "+
				"check that `switchboard worker` processes are running and connected to NATS", spec.Timeout, r.opt.Grace))
		}
	}
}

// followEvents relays the events worker publishes for turn to onEvent
// (events.go) until the returned relay is closed; without onEvent, or
// when the subscription fails (the turn then runs without live events,
// which is logged), the relay does nothing.
func (r *Runner) followEvents(worker, turn string, onEvent func(agent.Event)) *eventRelay {
	if onEvent == nil {
		return nil
	}
	relay, err := relayEvents(r.nc, worker, turn, onEvent)
	if err != nil {
		r.log.Warn("follow a remote turn's events; its reply is not shown live", "turn", turn, "worker", worker, "err", err)
		return nil
	}
	return relay
}

// job is the turn as workers get it.
func (r *Runner) job(spec agent.Spec, in agent.Input, now time.Time) (Job, error) {
	dir, err := filepath.Abs(in.Dir)
	if err != nil {
		return Job{}, agent.Failed("group folder: " + err.Error())
	}
	root := r.opt.FoldersRoot
	if root == "" {
		root = filepath.Dir(dir)
	}
	if root, err = filepath.Abs(root); err != nil {
		return Job{}, agent.Failed("group folders root: " + err.Error())
	}
	j := Job{TurnID: string(in.TurnID), Dir: dir, Root: root, Prompt: in.Prompt, SessionID: in.SessionID, Command: r.opt.Command, ResumeArgs: spec.ResumeArgs,
		Output: spec.Output, MaxOutput: spec.MaxOutput, Input: spec.Input}
	if len(j.Command) == 0 {
		j.Command = spec.Command
	}
	for _, kv := range in.Env {
		if strings.HasPrefix(kv, "SWITCHBOARD_MCP_SOCKET=") { // the socket stays on the gateway
			continue
		}
		j.Env = append(j.Env, kv)
	}
	for _, name := range spec.Env {
		if v, ok := os.LookupEnv(name); ok {
			j.Env = append(j.Env, name+"="+v)
		}
	}
	if err := in.TurnID.Validate(); err != nil {
		return j, agent.Failed(fmt.Sprintf("remote turn without a well formed turn id: %v (a bug)", err))
	}
	if spec.Timeout <= 0 {
		return j, agent.Failed("agent.runner nats needs agent.timeout: a turn on a lost worker would wait forever")
	}
	j.DeadlineMs = now.Add(spec.Timeout).UnixMilli()
	return j, nil
}

// outcomeResult is what agent.Run returned on the worker, with the
// steering messages the worker wrote into the agent (for Await: Run
// settles its Steering with them).
func outcomeResult(o Outcome, session string) (agent.Result, error) {
	res := agent.Result{Reply: o.Reply, Replies: o.Replies, SessionID: o.SessionID, Duration: time.Duration(o.DurationMs) * time.Millisecond,
		ExitCode: o.ExitCode, NotStarted: o.NotStarted, TimedOut: o.TimedOut, Truncated: o.Truncated, Stderr: o.Stderr, Steered: o.Steered,
		Usage: o.Usage.Checked()} // read from NATS: not believed before it is checked
	if res.SessionID == "" {
		res.SessionID = session
	}
	if o.Error != "" {
		res.Reply, res.Replies = "", nil
		return res, agent.Failed(o.Error + " (on worker " + o.Worker + ")")
	}
	if o.Stopped {
		// Run that stopped it returns stoppedResult, Await awaitedResult
		// (stopped before the restart); anywhere else it is an attempt
		// that gave no answer.
		res.Reply, res.Replies = "", nil
		return res, agent.Failed("the turn was stopped (on worker " + o.Worker + ")")
	}
	return res, nil
}

// Workers lists the live workers (those that reported within workerTTL).
func (r *Runner) Workers(ctx context.Context) ([]WorkerInfo, error) { return listWorkers(ctx, r.kv) }
