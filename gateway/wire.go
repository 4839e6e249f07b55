package gateway

import (
	"context"
	"log/slog"
	"runtime/debug"
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

// wire builds the parts and connects them: each gets what it works with,
// never the Gateway. The workers and the turns point at each other (a
// worker runs turns, a failed turn wakes its folder later), so the workers
// are made first and given the turns last.
func (g *Gateway) wire() error {
	opt, st, log := g.opt, g.st, g.log
	g.states = newAdapterStates()
	g.status = statusWriter{sink: storeStatus{st}, states: g.states, adapters: g.adapters.names(), warning: opt.Warning, log: log}
	g.metrics = newMetrics(g.states, st, opt.Runner)
	g.active = &activeTurns{}
	engage := &engagements{m: map[engageKey]engagement{}, now: opt.Now}
	g.engage = engage
	g.workers = newWorkers(opt.MaxConcurrent, st, &g.hooks, log)
	live := &liveStarter{adapters: g.adapters, st: st, streams: opt.Streams, progress: opt.Progress, log: log.With("component", "live")}
	g.outbox = newOutbox(outboxDeps{st: st, adapters: g.adapters, layout: g.layout, live: live, hooks: &g.hooks, log: log,
		queue: func(ctx context.Context, req ops.SendRequest) (store.OutboxItem, error) {
			return ops.QueueSend(ctx, st, req)
		},
		spoke: func(chat adapters.JID, topic string, folder groups.Folder) {
			engage.start(chat, topic, folder, opt.EngageTTL)
		},
		deliveries: g.metrics.outbox, rateLimits: g.metrics.rateLimitWaits})
	g.live, live.storePart = live, g.outbox.storeLivePart
	g.sched = scheduler.NewLoop(st, g, scheduler.SystemClock(), log.With("component", "scheduler"))

	holder := chatHolder{st: st, send: g.outbox.send, kickAfter: g.workers.kickAfter, log: log}
	g.budget = &budgetGuard{st: st, now: opt.Now, zone: g.zone, holder: holder, kick: g.workers.kick, log: log}
	flood := newFloodGuard(opt.Limits, opt.Now)
	flood.st, flood.holder, flood.kick, flood.zone, flood.log = st, holder, g.workers.kick, g.zone, log
	loop := newLoopGuard(opt.LoopGuard, opt.Now)
	loop.st, loop.active, loop.holder, loop.send, loop.zone, loop.log = st, g.active, holder, g.outbox.send, g.zone, log
	notices := &noticeLimiter{last: map[adapters.JID]time.Time{}, every: noticeEvery, now: opt.Now}
	chain := chainGuard{maxChain: opt.Limits.MaxChain, st: st, notices: notices, turns: g.metrics.turns, wakeOutbox: g.outbox.wake, log: log}

	g.config = &liveConfig{st: st, layout: g.layout, exe: opt.Exe, loadBudgets: g.budget.load, wakeScheduler: g.sched.Wake, log: log}
	running := &stoppable{}
	g.stops = &stopper{running: running, by: opt.StopBy, table: g.config.Table, send: g.outbox.send,
		log: log.With("component", "stop")}
	owner := ownerGuard{st: st, table: g.config.Table, operator: opt.Operator, log: log}
	guards := turnGuards{list: []turnGuard{owner, chain, g.budget, flood, loop}, log: log} // the order matters: guards.go
	mid := &midTurns{st: st, running: running, stops: g.stops, def: opt.MidTurn, canSteer: opt.Agent.Input == agent.InputStreamJSON,
		guards: guards, kick: g.workers.kick, stored: g.adapters.notifyStored, now: opt.Now, log: log.With("component", "mid_turn")}
	commits := &committer{st: st, stored: g.adapters.notifyStored, kick: g.workers.kick, batches: g.metrics.commitBatch}
	g.intake = &intake{st: st, commits: commits, table: g.config.Table, adapters: g.adapters, engage: engage, engageTTL: opt.EngageTTL,
		now: opt.Now, loop: loop, flood: flood, stops: g.stops, mid: mid, kick: g.workers.kick, inbound: g.metrics.inbound, unroutedMetric: g.metrics.unrouted, log: log,
		storeInject: func(ctx context.Context, t *routing.Table, req ops.InjectRequest) (store.Message, groups.Folder, error) {
			return ops.Inject(ctx, st, t, req)
		}}

	g.approvals = newApprovals(st, g.adapters, g.active, g.outbox.send, opt.Approvals, g.metrics.reg, log.With("component", "approvals"))
	g.stops.isApprover = g.approvals.isApprover
	g.press = pressHandler{approvals: g.approvals, stops: g.stops}
	g.intake.approvalCommand = g.approvals.command
	g.backend = newMCPBackend(&mcpDeps{st: st, adapters: g.adapters, table: g.config.Table, reload: g.config.reload, outbox: g.outbox,
		active: g.active, intake: g.intake, engage: engage, engageTTL: opt.EngageTTL, kick: g.workers.kick, wakeScheduler: g.sched.Wake,
		layout: g.layout, exe: opt.Exe, timezone: opt.Timezone, zone: g.zone, now: opt.Now, log: log}, g.approvals)
	mcp, err := newMCP(g.layout, opt.Operator, g.backend, len(opt.Approvals.AgentTools) > 0, g.metrics.mcpCall, log)
	if err != nil {
		return err
	}
	g.mcp, g.config.mcp = mcp, mcp
	g.endpoint = &mcpEndpoint{cfg: opt.MCPHTTP, st: st, server: mcp, agentTimeout: opt.Agent.Timeout, log: log}

	g.turns = &turns{st: st, runner: opt.Runner, agent: opt.Agent, price: opt.Price, retryDelays: opt.RetryDelays, operator: opt.Operator,
		layout: g.layout, socket: mcp.SocketPath, tokens: g.endpoint, adapters: g.adapters, active: g.active, notices: notices,
		guards:  guards,
		files:   &fetcher{adapters: g.adapters, layout: g.layout, maxDownload: opt.MaxDownload, log: log},
		buttons: &stopButtons{adapters: g.adapters, st: st, streams: opt.Streams, delay: stopButtonDelay, log: log},
		metrics: g.metrics, spend: newSpend(g.metrics.reg), live: live, running: running, wakeOutbox: g.outbox.wake, kickAfter: g.workers.kickAfter, hooks: &g.hooks, log: log}
	g.workers.turns = g.turns
	return nil
}

// newMCP builds the MCP server; its sockets appear at the first reload.
func newMCP(layout groups.Layout, operator groups.Folder, backend ipc.Backend, approveTool bool, onCall func(tool, outcome string), log *slog.Logger) (*ipc.Server, error) {
	version := "dev"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		version = bi.Main.Version
	}
	return ipc.New(ipc.Options{Layout: layout, Operator: operator, Backend: backend,
		Logger: log.With("component", "mcp"), Version: version, OnCall: onCall, ApproveTool: approveTool})
}
