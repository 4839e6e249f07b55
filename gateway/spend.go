package gateway

import (
	"context"
	"math"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/agent"
	"switchboard/groups"
	"switchboard/store"
)

// spend is what the gateway keeps about the cost of turns: the usage
// counters, labelled by tier only; per-folder figures are read from the
// store by the status page and the CLI. The groups' budgets are the
// budget guard's (guard_budget.go).
type spend struct {
	cost   *prometheus.CounterVec
	tokens *prometheus.CounterVec
}

func newSpend(reg prometheus.Registerer) *spend {
	s := &spend{}
	s.cost = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_turn_cost_usd_total",
		Help: "US dollars agent turns reported spending, by the folder's tier (0-3)."}, []string{"folder_tier"})
	s.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchboard_turn_tokens_total",
		Help: "Tokens agent turns reported, by the folder's tier (0-3) and kind (input, output, cache_creation, cache_read)."},
		[]string{"folder_tier", "kind"})
	reg.MustRegister(s.cost, s.tokens)
	return s
}

// recordUsage sets turn's usage from what the agent printed and what it
// reported over MCP during the turn, priced at agent.price when it
// reported tokens and no cost.
func (t *turns) recordUsage(ctx context.Context, turn *store.Turn, session string, res agent.Result) {
	u := res.Usage
	if session != "" && res.SessionID == session {
		u = t.sinceSession(ctx, turn.Folder, session, u)
	}
	if res.SessionID != "" {
		turn.SessionID = res.SessionID // also on a failed turn: its running total counts for the next one
	}
	// Each report was Checked where it was read (a worker's outcome on
	// NATS included); the sum, priced, is checked again.
	u = t.price.Charge(u.Add(t.active.reported(turn.ID))).Checked()
	if u.Refused != "" {
		t.log.Warn("usage refused", "turn_id", turn.ID, "folder", turn.Folder, "reason", u.Refused)
	}
	turn.Usage = store.Usage{CostUSD: u.CostUSD, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheCreationTokens: u.CacheCreationTokens, CacheReadTokens: u.CacheReadTokens, NumTurns: u.NumTurns,
		APIDuration: u.APIDuration, SessionCost: u.SessionCost}
	if u.IsZero() {
		return
	}
	tier := strconv.Itoa(min(max(t.tierOf(turn.Folder), 0), 3))
	addCount(t.spend.cost.WithLabelValues(tier), u.CostUSD)
	for kind, n := range map[string]int64{"input": u.InputTokens, "output": u.OutputTokens,
		"cache_creation": u.CacheCreationTokens, "cache_read": u.CacheReadTokens} {
		addCount(t.spend.tokens.WithLabelValues(tier, kind), float64(n))
	}
}

// addCount adds v to c unless it is negative or not finite: a Prometheus
// counter panics on a negative Add, and one +Inf would stick for good.
// Usage is Checked before it gets here; this is the second line.
func addCount(c prometheus.Counter, v float64) {
	if v > 0 && !math.IsInf(v, 0) {
		c.Add(v)
	}
}

// sinceSession is what u, printed by a turn of a resumed session, adds to
// the session's earlier turns: a resumed Claude Code session prints its
// running total cost, a resumed Codex thread its running token totals.
func (t *turns) sinceSession(ctx context.Context, folder groups.Folder, session string, u agent.Usage) agent.Usage {
	if u.SessionCost > 0 {
		prev, err := t.st.SessionCost(ctx, folder, session)
		if err != nil && ctx.Err() == nil {
			t.log.Warn("read the session's previous cost; the turn is charged the session's total", "folder", folder, "err", err)
		}
		u = u.Since(prev)
	}
	if u.SessionTotal {
		prev, err := t.st.SessionTokens(ctx, folder, session)
		if err != nil && ctx.Err() == nil {
			t.log.Warn("read the session's earlier tokens; the turn is charged the session's total", "folder", folder, "err", err)
		}
		u = u.TokensSince(agent.Usage{InputTokens: prev.InputTokens, OutputTokens: prev.OutputTokens,
			CacheCreationTokens: prev.CacheCreationTokens, CacheReadTokens: prev.CacheReadTokens})
	}
	return u
}
