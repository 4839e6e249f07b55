// Package gateway is the pipeline: inbound → store → route → per-folder workers
// → agent turn → outbox → adapter. It holds no platform code, no SQL and no
// MCP tool bodies; it wires the packages that do.
//
// The Gateway is made of parts, each owning one job and given what it
// works with as a small struct of narrow interfaces and funcs (never the
// Gateway): intake (intake.go, commit.go), the live configuration
// (reload.go), the workers (workers.go) and the turn lifecycle
// (lifecycle.go, reattach.go) with its guards (guards.go, guard_*.go), the
// outbox (outbox.go), the MCP backend (mcpbackend.go, mcp_tasks.go) and
// endpoint (mcphttp.go), the status writer (status.go) and the metrics
// (metrics.go). New wires them (wire.go); Run starts and stops them in
// order.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/scheduler"
	"switchboard/store"
)

// Options configure a Gateway. Store and Agent are required.
type Options struct {
	Store    *store.Store
	Adapters []adapters.Adapter
	Agent    agent.Spec
	// Price charges turns whose agent reports tokens and no cost (Codex):
	// agent.price. Zero: such turns cost nothing.
	Price agent.Price
	// Runner runs the turns (agent.runner); nil: agent.Local, on this machine.
	Runner        agent.Runner
	DataDir       string
	Operator      groups.Folder // the tier-0 folder
	EngageTTL     time.Duration // follow-ups trigger without a mention this long after the bot spoke
	MaxConcurrent int           // turns at once, all folders together
	Exe           string        // this binary, for the groups' .mcp.json
	Timezone      string        // IANA zone: tasks scheduled over MCP by default, budget days and months, notices' clock times ("": UTC); New refuses an unknown one
	Logger        *slog.Logger
	// PollInterval is how often changes made by other processes (the CLI)
	// are picked up. Default 1s.
	PollInterval time.Duration
	// RetryDelays are the waits before the second and third attempt of a
	// failed batch. Default 2s, 10s.
	RetryDelays []time.Duration
	// RestartBackoff is the first and the longest wait before an adapter
	// whose Run failed is started again (doubling, with jitter). Default
	// 1s and 2m.
	RestartBackoff [2]time.Duration
	// DrainTimeout bounds how long shutdown waits for running turns. Default 30s.
	DrainTimeout time.Duration
	// Warning is shown by `switchboard status` while this gateway runs
	// (for example that agents are not sandboxed).
	Warning string
	// MaxDownload caps one attachment fetched into a group folder, in bytes.
	// Default 25 MiB.
	MaxDownload int64
	// Now is the clock of the gateway's decisions that compare times: when
	// an engagement ends, whether a failure notice is rate-limited, whether a
	// backfilled message is old enough to be context only, which turns the
	// flood limits' windows still count. Waits (retry
	// delays, rate-limit pauses, timeouts) run on real time. Default time.Now;
	// tests advance their own clock instead of sleeping.
	Now func() time.Time
	// LoopGuard pauses a web room its agent keeps re-triggering from its
	// own turns. Zero fields take the defaults.
	LoopGuard LoopGuard
	// Limits are the flood limits (off unless set; cmd sets the config's
	// defaults) and the chain guard (MaxChain, default 8). Flood windows
	// are decided on Now; a held chat waits by the store's clock
	// (store.SetClock: tests give it the same clock).
	Limits Limits
	// MCPHTTP is the MCP Streamable HTTP endpoint (mcp.*); zero: none.
	MCPHTTP MCPHTTP
	// Streams are the live-reply settings by platform (adapters.<name>.stream,
	// stream_interval); a platform missing here streams nothing (StreamOff).
	Streams map[string]Stream
	// Progress shows a line while the agent runs a tool in a live reply
	// (agent.progress).
	Progress bool
	// Approvals are the approvals settings (approvals:, groups[].approvals).
	Approvals ApprovalOptions
	// StopBy says who may stop a chat's running turn (limits.stop_by):
	// StopByAnyone (the default) or StopByApprovers (the group's
	// approvers, Approvals).
	StopBy StopBy
	// MidTurn is what a message does that arrives while its folder's turn
	// runs in its chat (agent.mid_turn; a group's own, set with `switchboard
	// group set --mid-turn`, wins). Default MidTurnQueue. Steering needs
	// Agent.Input agent.InputStreamJSON; without it steer queues.
	MidTurn MidTurn
}

// Gateway runs the pipeline. Create with New, start with Run.
type Gateway struct {
	opt      Options
	zone     *time.Location // opt.Timezone, loaded once (budget windows, notices' clock times)
	st       *store.Store
	log      *slog.Logger
	layout   groups.Layout
	adapters adapterSet

	// The parts (wire.go).
	config    *liveConfig
	live      *liveStarter
	states    *adapterStates // each adapter's connection state
	probe     storeProbe     // the store's writability, for /readyz
	status    statusWriter
	metrics   *metrics
	intake    *intake
	engage    *engagements // where the bot spoke lately: follow-ups trigger
	active    *activeTurns
	stops     *stopper
	budget    *budgetGuard
	turns     *turns
	workers   *workers
	outbox    *outbox
	mcp       *ipc.Server  // the groups' MCP sockets
	endpoint  *mcpEndpoint // the MCP HTTP endpoint
	backend   mcpBackend
	approvals *approvals   // asks people about calls (approvals.go)
	press     pressHandler // button presses (press.go)
	sched     *scheduler.Loop

	hooks testHooks
}

// testHooks are the points of the pipeline a test waits on instead of
// sleeping: the moments after which something it checks must not have
// happened. A test sets them between New and Run; in production they are nil.
type testHooks struct {
	// slotWait is called when folder's worker holds a batch and every turn
	// slot is busy (MaxConcurrent).
	slotWait func(folder groups.Folder)
	// senderWait is called when the outbox has a due item and every sender
	// is busy; nothing more is claimed until one is free.
	senderWait func()
	// paused is called once a rate limit from platform holds its sends.
	paused func(platform string)
	// awaitStart is called when a folder's worker takes turn (a turn a
	// stopped gateway left running on a worker) to await it.
	awaitStart func(turn string)
	// awaitRead is called when a folder's worker, registered to await
	// turn (a turn a stopped gateway left running on a worker), is about
	// to read its batch.
	awaitRead func(turn string)
}

// New checks options and builds a Gateway; nothing runs until Run.
func New(opt Options) (*Gateway, error) {
	if opt.Store == nil {
		return nil, errors.New("gateway: no store")
	}
	if len(opt.Agent.Command) == 0 {
		return nil, errors.New("gateway: agent.command is empty")
	}
	opt = opt.withDefaults()
	zone, err := scheduler.LoadZone(opt.Timezone)
	if err != nil {
		return nil, fmt.Errorf("gateway: timezone: %w", err)
	}
	g := &Gateway{opt: opt, zone: zone, st: opt.Store, log: opt.Logger, layout: groups.Layout{DataDir: opt.DataDir},
		adapters: adapterSet{}}
	for _, a := range opt.Adapters {
		if _, dup := g.adapters[a.Name()]; dup {
			return nil, fmt.Errorf("gateway: two adapters named %q", a.Name())
		}
		g.adapters[a.Name()] = a
	}
	if err := g.wire(); err != nil {
		return nil, err
	}
	return g, nil
}

// withDefaults fills in the defaults of unset options.
func (opt Options) withDefaults() Options {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Runner == nil {
		opt.Runner = agent.Local{}
	}
	if opt.PollInterval <= 0 {
		opt.PollInterval = time.Second
	}
	if opt.RetryDelays == nil {
		opt.RetryDelays = []time.Duration{2 * time.Second, 10 * time.Second}
	}
	if opt.DrainTimeout <= 0 {
		opt.DrainTimeout = 30 * time.Second
	}
	if opt.RestartBackoff[0] <= 0 {
		opt.RestartBackoff = [2]time.Duration{time.Second, 2 * time.Minute}
	}
	if opt.MaxDownload <= 0 {
		opt.MaxDownload = defaultMaxDownload
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	opt.MaxConcurrent = max(opt.MaxConcurrent, 1)
	opt.Limits = opt.Limits.withDefaults()
	if opt.StopBy == "" {
		opt.StopBy = StopByAnyone
	}
	if opt.MidTurn == "" {
		opt.MidTurn = MidTurnQueue
	}
	return opt
}

// Run serves until ctx is cancelled, then shuts down in order: stop intake,
// drain turns (bounded by DrainTimeout), deliver their replies (bounded),
// stop the outbox. The caller closes the store afterwards.
func (g *Gateway) Run(ctx context.Context) error {
	// Last, after the drain: agents of draining turns keep their tools.
	defer g.mcp.Close()
	// What a crashed gateway left is settled before reload opens the MCP
	// sockets: until then no agent (a leftover one included) can queue work
	// that RecoverStarted would take for a turn the crash interrupted.
	g.reapLeftovers()
	awaited, err := g.turns.recoverStarted(ctx)
	if err != nil {
		return err
	}
	// Before the adapters start: a follow-up to what the bot said just
	// before a restart still reaches its folder.
	spoken, err := g.st.SpokenSince(ctx, g.opt.Now().Add(-g.opt.EngageTTL))
	if err != nil {
		return err
	}
	if n := g.engage.restore(spoken, g.opt.EngageTTL); n > 0 {
		g.log.Info("engagements restored", "count", n)
	}
	// Read before the adapters start: none of this run's live replies.
	leftLive, err := g.live.leftovers(ctx)
	if err != nil {
		return err
	}
	failed, requeued, err := g.st.RecoverOutbox(ctx, g.adapters.storeDelivered()...)
	if err != nil {
		return fmt.Errorf("recover outbox: %w", err)
	}
	if failed > 0 {
		g.log.Warn("outbox replies interrupted by a crash were not resent", "count", failed)
	}
	if requeued > 0 {
		g.log.Info("outbox replies interrupted by a crash before they showed are sent again", "count", requeued)
	}
	// Requests a stopped gateway left pending have no call waiting any
	// more; a press on one is answered "expired". Waits end at shutdown.
	expired, err := g.approvals.expireLeftovers(ctx)
	if err != nil {
		return fmt.Errorf("expire approval requests: %w", err)
	}
	defer context.AfterFunc(ctx, g.approvals.shutdown)()
	stopHTTP, err := g.endpoint.start(ctx, awaited)
	if err != nil {
		return err
	}
	defer stopHTTP() // before the sockets close, after the drain
	if err := g.config.reload(ctx); err != nil {
		return err
	}
	// Turns and deliveries outlive the intake context so they can drain.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	intakeCtx, stopIntake := context.WithCancel(ctx)
	defer stopIntake()

	// The scheduler starts before intake so that a failure here returns
	// with no adapter running (and no port held). It is joined before Run
	// returns: the caller closes the store next.
	var bg sync.WaitGroup
	defer g.status.stopped(ctx) // after bg.Wait: the poll loop writes no heartbeat after it
	defer bg.Wait()
	if err := g.startScheduler(intakeCtx, &bg); err != nil {
		return err
	}
	errc := make(chan error, len(g.adapters))
	var intake sync.WaitGroup
	for name, a := range g.adapters {
		intake.Go(func() {
			if err := g.supervise(intakeCtx, name, a); err != nil {
				errc <- err
			}
		})
	}
	bg.Go(func() { g.outbox.run(workCtx) })
	bg.Go(func() { g.poll(intakeCtx) })
	bg.Go(func() { g.approvals.showExpired(intakeCtx, expired) })
	g.live.recover(intakeCtx, leftLive) // before the interrupted turns run again
	bg.Go(func() { g.probe.run(intakeCtx, g.st.Ping) })
	g.kickPending(ctx)

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	stopIntake()
	intake.Wait()
	g.log.Info("intake stopped; draining turns", "timeout", g.opt.DrainTimeout)
	if !g.workers.drain(g.opt.DrainTimeout) {
		g.log.Warn("turns still running at the drain deadline were stopped; their messages run again at next start")
	}
	if !g.outbox.drain(outboxDrainTimeout) {
		g.log.Warn("replies not delivered by the drain deadline are delivered at next start")
	}
	stopWork()
	g.workers.wait()
	return runErr
}

// pruneEvery is how often observed context beyond what a prompt shows is dropped.
const pruneEvery = 10 * time.Minute

// poll picks up changes other processes made to the store (CLI route, group
// and grant edits, queued sends, injected messages).
func (g *Gateway) poll(ctx context.Context) {
	t := time.NewTicker(g.opt.PollInterval)
	defer t.Stop()
	var pruned, beat time.Time
	g.status.persist(ctx, true)
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.states.changed:
			g.status.persist(ctx, false)
			continue
		case <-t.C:
		}
		now := time.Now()
		g.status.persist(ctx, now.Sub(beat) >= heartbeatEvery)
		if now.Sub(beat) >= heartbeatEvery {
			beat = now
		}
		if time.Since(pruned) > pruneEvery {
			pruned = time.Now()
			if n, err := g.st.PruneObserved(ctx); err != nil && ctx.Err() == nil {
				g.log.Error("prune observed context", "err", err)
			} else if n > 0 {
				g.log.Debug("observed context pruned", "rows", n)
			}
		}
		stale, err := g.config.stale(ctx)
		if stale {
			err = g.config.reload(ctx)
		}
		if err != nil && ctx.Err() == nil {
			g.log.Error("poll store", "err", err)
		}
		g.kickPending(ctx)
		g.outbox.wake()
	}
}

func (g *Gateway) kickPending(ctx context.Context) {
	folders, err := g.st.PendingFolders(ctx)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("list pending work", "err", err)
		}
		return
	}
	for _, f := range folders {
		g.workers.kick(f)
	}
}

// Table is the current route table.
func (g *Gateway) Table() *routing.Table { return g.config.Table() }

// Deliver is the adapters' DeliverFunc (intake.deliver): validate, route,
// and store the event.
func (g *Gateway) Deliver(ctx context.Context, in adapters.Inbound) (int64, error) {
	return g.intake.deliver(ctx, in)
}

// AdapterStates returns each adapter's last reported connection state.
func (g *Gateway) AdapterStates() map[string]ops.AdapterStatus { return g.states.snapshot() }

// Zone is the operator's zone (config timezone): budget days and months,
// and the status page's spend, follow it.
func (g *Gateway) Zone() *time.Location { return g.zone }

// MCPURL is the MCP HTTP endpoint's URL as agents get it ("" when off or
// not started yet).
func (g *Gateway) MCPURL() string { return g.endpoint.URL() }
