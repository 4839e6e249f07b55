package ipc

import (
	"context"
	"fmt"
	"math"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/groups"
)

// Spend records what turns cost and caps it per group.
type Spend interface {
	// ReportUsage adds u to folder's running turn. Its error, shown to the
	// agent, says why not: ErrNoTurn, or figures over what one turn can
	// report (the one check of every usage, agent.Usage.Checked).
	ReportUsage(folder groups.Folder, u UsageReport) error
	// Budgets lists the spend and caps of folder's subtree ("": every
	// group), today and this month in the operator's zone.
	Budgets(ctx context.Context, folder groups.Folder) ([]BudgetInfo, error)
	// SetBudget sets folder's caps in US dollars; both 0 removes its
	// budget. A running gateway applies it at once.
	SetBudget(ctx context.Context, folder groups.Folder, dailyUSD, monthlyUSD float64) error
}

// BudgetInfo is a group's spend (its subtree's) and caps (0: none).
type BudgetInfo struct {
	Folder     groups.Folder `json:"folder"`
	TodayUSD   float64       `json:"today_usd"`
	MonthUSD   float64       `json:"month_usd"`
	DailyUSD   float64       `json:"daily_usd"`
	MonthlyUSD float64       `json:"monthly_usd"`
	UsedUp     bool          `json:"used_up"` // its own or an ancestor's cap is reached: no new turn of it starts
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
		{tool: newTool("list_budgets", "List budgets and spend",
			"Show what your group and each group below it spent today and this month (in the operator's time zone; a group's "+
				"figures include its subgroups) against its daily and monthly caps in US dollars (0: none). When a cap is used "+
				"up, no new turn of that group starts until the window ends or the cap is raised. Returns {\"budgets\"}.",
			readOnly,
		), run: runListBudgets},
		{tool: newTool("set_budget", "Set a subgroup's budget",
			"Cap what a group below yours (and its subgroups) may spend per day and per month, in US dollars. Your own "+
				"group's cap is set by the group above you. Omitted or 0 means no cap of that kind; both 0 removes the budget. "+
				"Takes effect at once: a raised cap lets held messages be answered. Returns {\"ok\": true}.",
			destructive,
			mcp.WithString("folder", mcp.Required(), mcp.Description("A group below yours, e.g. acme/eng.")),
			mcp.WithNumber("daily_usd", mcp.Min(0), mcp.Description("US dollars per day; 0 or omitted: no daily cap.")),
			mcp.WithNumber("monthly_usd", mcp.Min(0), mcp.Description("US dollars per month; 0 or omitted: no monthly cap.")),
		), run: runSetBudget},
	}
}

func runListBudgets(ctx context.Context, c *call) (any, error) {
	scope := c.folder
	if c.tier == 0 {
		scope = ""
	}
	bs, err := c.b.Budgets(ctx, scope)
	if err != nil {
		return nil, err
	}
	if bs == nil {
		bs = []BudgetInfo{}
	}
	return map[string]any{"budgets": bs}, nil
}

func runSetBudget(ctx context.Context, c *call) (any, error) {
	folder, err := c.folderParam("folder")
	if err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	if c.tier != 0 && (folder == c.folder || !c.folder.Contains(folder)) {
		return nil, fmt.Errorf("folder %s: a group sets the budgets of the groups below it only (yours is set by the group above you)", folder)
	}
	for _, k := range []string{"daily_usd", "monthly_usd"} {
		if f, _ := c.args[k].(float64); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: %v; want US dollars, 0 or more", k, c.args[k])
		}
	}
	if err := c.b.SetBudget(ctx, folder, c.float("daily_usd"), c.float("monthly_usd")); err != nil {
		return nil, err
	}
	return ok, nil
}

// usageParams are report_usage's params; all are figures that cannot be negative.
var usageParams = []string{"cost_usd", "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
	"num_turns", "duration_api_ms"}

// runReportUsage checks that each figure is a number, 0 or more; whether
// a turn can have spent that much is the gateway's one check
// (Spend.ReportUsage).
func runReportUsage(_ context.Context, c *call) (any, error) {
	for _, k := range usageParams {
		if f, _ := c.args[k].(float64); f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%s: %v is not a figure a turn can report; want a number, 0 or more", k, c.args[k])
		}
	}
	u := UsageReport{CostUSD: c.float("cost_usd"), InputTokens: c.count("input_tokens"),
		OutputTokens: c.count("output_tokens"), CacheCreationTokens: c.count("cache_creation_input_tokens"),
		CacheReadTokens: c.count("cache_read_input_tokens"), NumTurns: c.count("num_turns"), APIMS: c.count("duration_api_ms")}
	if err := c.b.ReportUsage(c.folder, u); err != nil {
		return nil, err
	}
	return ok, nil
}

// count is a count param, 0 when absent; a number too large for an int64
// stays too large (1<<62) for the check that refuses it.
func (c *call) count(k string) int64 {
	f, _ := c.args[k].(float64)
	return int64(min(f, 1<<62))
}

// float is a number param (0 when absent, negative or not finite).
func (c *call) float(k string) float64 {
	f, _ := c.args[k].(float64)
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		return 0
	}
	return f
}
