package gateway

import (
	"path/filepath"
	"strings"
	"testing"

	"switchboard/agent"
	"switchboard/internal/testagent"
)

// TestTurnUsageFromClaudeJSON: a turn's cost and tokens come from Claude
// Code's JSON; a resumed session's running total is turned into what the
// turn added; Prometheus counts dollars and tokens by tier only.
func TestTurnUsageFromClaudeJSON(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "agent", "testdata", "claude-json"))
	script := testagent.Script(t, `cat >/dev/null; if [ "$2" = "--resume" ]; then cat "$1/resumed.json"; else cat "$1/fresh.json"; fi`, dir)
	h := newHarness(t, harnessConfig{agent: script, modify: func(o *Options) {
		o.Agent.Output = agent.OutputClaudeJSON
		o.Agent.ResumeArgs = []string{"--resume", "{session}"}
	}})
	h.post(testChat, "m1", "hello")
	h.waitSent(testChat, 1)
	h.post(testChat, "m2", "again")
	h.waitSent(testChat, 2)
	ts := h.turns("main")
	if len(ts) != 2 {
		t.Fatalf("turns %+v", ts)
	}
	first, second := ts[0].Usage, ts[1].Usage
	if first.CostUSD != 0.016656 || first.InputTokens != 1234 || first.OutputTokens != 56 || first.CacheCreationTokens != 2000 ||
		first.CacheReadTokens != 3000 || first.NumTurns != 1 || first.APIDuration.Milliseconds() != 273 {
		t.Errorf("first turn usage %+v, want Claude Code's figures", first)
	}
	if d := second.CostUSD - 0.016656; d > 1e-9 || d < -1e-9 || second.SessionCost != 0.033312 {
		t.Errorf("resumed turn usage %+v, want cost 0.016656 (the session's total 0.033312 minus the first turn's)", second)
	}
	m := scrape(t, h.g)
	for _, want := range []string{`switchboard_turn_cost_usd_total{folder_tier="1"} 0.033312`, `switchboard_turn_tokens_total{folder_tier="1",kind="input"} 2468`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestTurnUsageFromTextTrailer: a text agent's usage trailer is recorded
// and is not part of the reply.
func TestTurnUsageFromTextTrailer(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; echo 'the answer'; echo '{"switchboard_usage": {"cost_usd": 0.02, "output_tokens": 9}}'`)})
	h.post(testChat, "m1", "hello")
	if got := h.waitSent(testChat, 1)[0].Text; got != "the answer" {
		t.Errorf("reply %q, want the text without its usage trailer", got)
	}
	if u := h.turns("main")[0].Usage; u.CostUSD != 0.02 || u.OutputTokens != 9 {
		t.Errorf("usage %+v, want $0.02 and 9 output tokens", u)
	}
}
