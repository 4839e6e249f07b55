package agent

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testagent"
)

// The fixtures under testdata/claude-json are real output of
// `claude -p --output-format json` (Claude Code 2.1.332) against a fake
// Messages API: fresh.json a new session, resumed.json the second turn of
// that session (--resume: total_cost_usd is the session's total so far),
// max_budget.json a run stopped by --max-budget-usd (exit 1, is_error).
func fixture(t *testing.T, name string) []string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("testdata", "claude-json", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatal(err)
	}
	return testagent.Script(t, `cat "$1"`, abs)
}

func TestRunClaudeJSONUsage(t *testing.T) {
	t.Parallel()
	res, err := runAgent(t, Spec{Command: fixture(t, "fresh.json"), Output: OutputClaudeJSON}, Input{})
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{CostUSD: 0.016656, SessionCost: 0.016656, InputTokens: 1234, OutputTokens: 56, CacheCreationTokens: 2000,
		CacheReadTokens: 3000, NumTurns: 1, APIDuration: 273 * time.Millisecond}
	if res.Usage != want || res.Reply != "Hello from the fake API." {
		t.Errorf("usage = %+v, reply %q; want %+v", res.Usage, res.Reply, want)
	}
}

func TestRunClaudeJSONResumedUsageIsCumulative(t *testing.T) {
	t.Parallel()
	res, err := runAgent(t, Spec{Command: fixture(t, "resumed.json"), Output: OutputClaudeJSON}, Input{SessionID: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage.SessionCost != 0.033312 || res.Usage.InputTokens != 1234 {
		t.Fatalf("usage = %+v, want session cost 0.033312 and this run's 1234 input tokens", res.Usage)
	}
	// The first turn of the session reported 0.016656: this turn cost the rest.
	if got := res.Usage.Since(0.016656).CostUSD; got < 0.016655 || got > 0.016657 {
		t.Errorf("cost since the previous turn = %v, want 0.016656", got)
	}
	if got := res.Usage.Since(0.5).CostUSD; got != 0.033312 {
		t.Errorf("cost since a larger figure (a session not carried over) = %v, want the figure as printed", got)
	}
}

func TestRunClaudeJSONBudgetStopKeepsUsage(t *testing.T) {
	t.Parallel()
	abs, _ := filepath.Abs(filepath.Join("testdata", "claude-json", "max_budget.json"))
	cmd := testagent.Script(t, `cat "$1"; exit 1`, abs)
	res, err := runAgent(t, Spec{Command: cmd, Output: OutputClaudeJSON}, Input{})
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("err = %v, want ErrFailed", err)
	}
	if res.Usage.CostUSD != 0.016656 || !res.Usage.MaxBudgetHit {
		t.Errorf("usage of a run stopped by --max-budget-usd = %+v, want its cost 0.016656 recorded", res.Usage)
	}
}

func TestRunTextUsageTrailer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stdout, reply string
		usage               Usage
	}{
		{"trailer taken off the reply", "Hi there.\n{\"switchboard_usage\": {\"cost_usd\": 0.25, \"input_tokens\": 1200, \"output_tokens\": 80, \"duration_api_ms\": 900}}\n",
			"Hi there.", Usage{CostUSD: 0.25, InputTokens: 1200, OutputTokens: 80, APIDuration: 900 * time.Millisecond}},
		{"no trailer", "Hi there.\n", "Hi there.", Usage{}},
		{"other JSON stays the reply", "Result:\n{\"switchboard_usage\": 1, \"other\": 2}", "Result:\n{\"switchboard_usage\": 1, \"other\": 2}", Usage{}},
		{"negative figures refuse the report", "ok\n{\"switchboard_usage\": {\"cost_usd\": -3, \"output_tokens\": 5}}", "ok",
			Usage{Refused: "cost_usd -3 is not between 0 and 10000 US dollars"}},
		{"an absurd cost refuses the report", "ok\n{\"switchboard_usage\": {\"cost_usd\": 1e308, \"output_tokens\": 5}}", "ok",
			Usage{Refused: "cost_usd 1e+308 is not between 0 and 10000 US dollars"}},
		{"trailer only", "{\"switchboard_usage\": {\"cost_usd\": 1}}", "", Usage{CostUSD: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := runAgent(t, Spec{Command: printingAgent(t, tt.stdout)}, Input{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reply != tt.reply || res.Usage != tt.usage {
				t.Errorf("reply %q usage %+v; want %q %+v", res.Reply, res.Usage, tt.reply, tt.usage)
			}
		})
	}
}

// TestUsageChecked: negative, non-finite and absurd figures refuse the
// whole report (all figures zero, the reason kept); sane ones pass as
// they are.
func TestUsageChecked(t *testing.T) {
	t.Parallel()
	sane := Usage{CostUSD: 2.5, SessionCost: 7, InputTokens: 1200, OutputTokens: 80, CacheCreationTokens: 9, CacheReadTokens: 3000,
		NumTurns: 3, APIDuration: 2 * time.Second}
	tests := []struct {
		name    string
		in      Usage
		refused string // "" : in passes unchanged
	}{
		{"sane", sane, ""},
		{"at the ceilings", Usage{CostUSD: MaxTurnCostUSD, InputTokens: MaxTurnTokens, APIDuration: MaxAPIDuration}, ""},
		{"negative cost", Usage{CostUSD: -0.01, OutputTokens: 5}, "cost_usd -0.01 is not between 0 and 10000 US dollars"},
		{"NaN cost", Usage{CostUSD: math.NaN()}, "cost_usd NaN is not between"},
		{"+Inf cost", Usage{CostUSD: math.Inf(1)}, "cost_usd +Inf is not between"},
		{"1e308 cost", Usage{CostUSD: 1e308}, "cost_usd 1e+308 is not between"},
		{"cost over the ceiling", Usage{CostUSD: MaxTurnCostUSD + 0.01}, "cost_usd 10000.01 is not between"},
		{"absurd session total", Usage{CostUSD: 1, SessionCost: 1e20}, "session cost_usd 1e+20 is not between"},
		{"negative tokens", Usage{CostUSD: 1, CacheReadTokens: -1}, "cache_read_input_tokens -1 is not between 0 and 1000000000000"},
		{"tokens over the ceiling", Usage{OutputTokens: MaxTurnTokens + 1}, "output_tokens 1000000000001 is not between"},
		{"negative round trips", Usage{NumTurns: -2}, "num_turns -2 is not between"},
		{"negative API time", Usage{APIDuration: -time.Millisecond}, "duration_api_ms -1 is not between"},
		{"a refusal from elsewhere (a worker's)", Usage{CostUSD: 1, Refused: "cost_usd -1 is not between"}, "cost_usd -1 is not between"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			in.MaxBudgetHit = true
			got := in.Checked()
			if tt.refused == "" {
				if got != in {
					t.Errorf("Checked(%+v) = %+v, want it unchanged", in, got)
				}
				return
			}
			if !strings.HasPrefix(got.Refused, tt.refused) || got != (Usage{MaxBudgetHit: true, Refused: got.Refused}) {
				t.Errorf("Checked(%+v) = %+v, want every figure zero, MaxBudgetHit kept and Refused %q", in, got, tt.refused)
			}
		})
	}
}
