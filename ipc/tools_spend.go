package ipc

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/mark3labs/mcp-go/mcp"
)

// Spend records what turns cost and caps it per group.
type Spend interface {
	// ReportUsage adds u to folder's running turn; false when folder runs
	// no turn.
	ReportUsage(folder string, u UsageReport) bool
}

// UsageReport is what an agent says one turn cost it so far (the
// arguments of report_usage). Figures add up over several calls.
type UsageReport struct {
	CostUSD             float64
	InputTokens         int64
	OutputTokens        int64
	CacheCreationTokens int64
	CacheReadTokens     int64
	NumTurns            int64
	APIMS               int64
}

func spendTools() []*toolDef {
	return []*toolDef{
		{tool: newTool("report_usage", "Report what this turn cost",
			"Add to the cost of your running turn: the dollars and tokens your model calls used. Call it once at the end of a "+
				"turn, or after each model call with that call's figures (they add up). Switchboard shows it per turn and counts "+
				"it against the group's budget. Agents whose output Switchboard reads already (Claude Code with output "+
				"claude-json) need not call it. Returns {\"ok\": true}.",
			additive,
			mcp.WithNumber("cost_usd", mcp.Min(0), mcp.Description("US dollars spent.")),
			mcp.WithInteger("input_tokens", mcp.Min(0), mcp.Description("Input (prompt) tokens, not counting cache reads and writes.")),
			mcp.WithInteger("output_tokens", mcp.Min(0), mcp.Description("Output tokens.")),
			mcp.WithInteger("cache_creation_input_tokens", mcp.Min(0), mcp.Description("Tokens written to the prompt cache.")),
			mcp.WithInteger("cache_read_input_tokens", mcp.Min(0), mcp.Description("Tokens read from the prompt cache.")),
			mcp.WithInteger("num_turns", mcp.Min(0), mcp.Description("Model round trips.")),
			mcp.WithInteger("duration_api_ms", mcp.Min(0), mcp.Description("Milliseconds spent waiting on the model's API.")),
		), run: runReportUsage},
	}
}

// errNoTurn: report_usage outside a turn has nothing to add to.
var errNoTurn = errors.New("your group runs no turn now; report usage from within a turn")

// usageParams are report_usage's params; all are figures that cannot be negative.
var usageParams = []string{"cost_usd", "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
	"num_turns", "duration_api_ms"}

func runReportUsage(_ context.Context, c *call) (any, error) {
	for _, k := range usageParams {
		if f, _ := c.args[k].(float64); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: %v is not a figure a turn can report; want 0 or more", k, c.args[k])
		}
	}
	u := UsageReport{CostUSD: c.float("cost_usd"), InputTokens: int64(c.int("input_tokens", 0)),
		OutputTokens: int64(c.int("output_tokens", 0)), CacheCreationTokens: int64(c.int("cache_creation_input_tokens", 0)),
		CacheReadTokens: int64(c.int("cache_read_input_tokens", 0)), NumTurns: int64(c.int("num_turns", 0)),
		APIMS: int64(c.int("duration_api_ms", 0))}
	if u.CostUSD > 1e6 {
		return nil, errors.New("cost_usd: more than a million dollars in one report is not believable; report dollars, not cents")
	}
	if !c.b.ReportUsage(c.folder, u) {
		return nil, errNoTurn
	}
	return ok, nil
}

// float is a number param (0 when absent, negative or not finite).
func (c *call) float(k string) float64 {
	f, _ := c.args[k].(float64)
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0
	}
	return f
}
