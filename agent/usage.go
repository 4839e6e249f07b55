package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
)

// Usage is what a turn cost, as the agent reported it: Claude Code's JSON
// (output: claude-json), the usage trailer of a text agent, or the MCP
// tool report_usage. Zero fields were not reported. Every report passes
// Checked before anyone counts it.
type Usage struct {
	CostUSD             float64
	InputTokens         int64
	OutputTokens        int64
	CacheCreationTokens int64
	CacheReadTokens     int64
	NumTurns            int64         // model round trips (Claude Code's num_turns)
	APIDuration         time.Duration // time spent waiting on the model's API
	// SessionCost is Claude Code's total_cost_usd as printed. On a resumed
	// session Claude Code reports the session's cumulative cost there
	// (2.1.x), so CostUSD of a claude-json turn is this figure minus the
	// one the session's previous turn reported: see Usage.Since.
	SessionCost float64
	// MaxBudgetHit: Claude Code stopped the run at --max-budget-usd
	// (subtype error_max_budget_usd). Running it again would spend as much
	// again, so the gateway does not retry it.
	MaxBudgetHit bool
	// SessionTotal: the token figures are the session's running total
	// (Codex prints its thread's): the gateway charges the turn what they
	// grew since the session's earlier turns (TokensSince).
	SessionTotal bool `json:",omitempty"`
	// Refused says why Checked refused the reported figures (then all
	// zero): a worker's refusal travels to the gateway, which logs it.
	Refused string `json:",omitempty"`
}

// Ceilings of one turn's report: a figure above them is not believed
// (a forged result, or cents reported as dollars) and the whole report is
// refused, like a negative or non-finite one.
const (
	MaxTurnCostUSD = 10_000              // US dollars, also of a session's running total
	MaxTurnTokens  = 1_000_000_000_000   // of each kind of token, and model round trips
	MaxAPIDuration = 30 * 24 * time.Hour // time spent waiting on the model's API
)

// Checked is u, or, when one of its figures is negative, not finite or
// over a ceiling (MaxTurnCostUSD, MaxTurnTokens, MaxAPIDuration), u with
// every figure zero and Refused saying which. MaxBudgetHit stays. It is
// the one check of reported usage: the agent's output, report_usage and
// a worker's outcome read from NATS all pass it.
func (u Usage) Checked() Usage {
	why := u.Refused
	for _, f := range []struct {
		name string
		v    float64
	}{{"cost_usd", u.CostUSD}, {"session cost_usd", u.SessionCost}} {
		if why == "" && (math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > MaxTurnCostUSD) {
			why = fmt.Sprintf("%s %v is not between 0 and %d US dollars", f.name, f.v, MaxTurnCostUSD)
		}
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"input_tokens", u.InputTokens}, {"output_tokens", u.OutputTokens}, {"cache_creation_input_tokens", u.CacheCreationTokens},
		{"cache_read_input_tokens", u.CacheReadTokens}, {"num_turns", u.NumTurns}} {
		if why == "" && (n.v < 0 || n.v > MaxTurnTokens) {
			why = fmt.Sprintf("%s %d is not between 0 and %d", n.name, n.v, int64(MaxTurnTokens))
		}
	}
	if why == "" && (u.APIDuration < 0 || u.APIDuration > MaxAPIDuration) {
		why = fmt.Sprintf("duration_api_ms %d is not between 0 and %d", u.APIDuration.Milliseconds(), MaxAPIDuration.Milliseconds())
	}
	if why == "" {
		return u
	}
	return Usage{MaxBudgetHit: u.MaxBudgetHit, SessionTotal: u.SessionTotal, Refused: why}
}

// IsZero reports whether nothing was reported (a refused report has
// nothing to count either).
func (u Usage) IsZero() bool {
	u.Refused, u.SessionTotal = "", false
	return u == Usage{}
}

// Add sums two reports (a turn's output and its report_usage calls).
func (u Usage) Add(o Usage) Usage {
	return Usage{
		CostUSD: u.CostUSD + o.CostUSD, InputTokens: u.InputTokens + o.InputTokens, OutputTokens: u.OutputTokens + o.OutputTokens,
		CacheCreationTokens: u.CacheCreationTokens + o.CacheCreationTokens, CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens,
		NumTurns: u.NumTurns + o.NumTurns, APIDuration: u.APIDuration + o.APIDuration, SessionCost: u.SessionCost + o.SessionCost,
		MaxBudgetHit: u.MaxBudgetHit || o.MaxBudgetHit, SessionTotal: u.SessionTotal, Refused: joinReasons(u.Refused, o.Refused),
	}
}

func joinReasons(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// Since turns a resumed Claude Code session's cumulative figures into this
// turn's: prev is the session cost its previous turn reported. A figure
// below prev (a session Claude Code did not carry over) stands as it is.
func (u Usage) Since(prev float64) Usage {
	if u.SessionCost > 0 && prev > 0 && u.SessionCost >= prev {
		u.CostUSD = u.SessionCost - prev
	}
	return u
}

// TokensSince turns a session's running token totals into this turn's:
// prev is what the session's earlier turns recorded. Totals below prev
// (a session the agent did not carry over) stand as they are.
func (u Usage) TokensSince(prev Usage) Usage {
	if u.InputTokens < prev.InputTokens || u.OutputTokens < prev.OutputTokens ||
		u.CacheCreationTokens < prev.CacheCreationTokens || u.CacheReadTokens < prev.CacheReadTokens {
		return u
	}
	u.InputTokens -= prev.InputTokens
	u.OutputTokens -= prev.OutputTokens
	u.CacheCreationTokens -= prev.CacheCreationTokens
	u.CacheReadTokens -= prev.CacheReadTokens
	return u
}

// Price is what the model charges, in US dollars per million tokens
// (config agent.price). Zero is no price.
type Price struct {
	InputPerMTok float64 // input tokens, cache writes included
	// CachedInputPerMTok is for cache reads; 0 charges them at InputPerMTok.
	CachedInputPerMTok float64
	OutputPerMTok      float64
}

// Charge sets u's cost from its tokens at p when the agent reported
// tokens and no cost (Codex); otherwise u stands.
func (p Price) Charge(u Usage) Usage {
	if u.CostUSD != 0 || p == (Price{}) {
		return u
	}
	cached := p.CachedInputPerMTok
	if cached == 0 {
		cached = p.InputPerMTok
	}
	u.CostUSD = (float64(u.InputTokens+u.CacheCreationTokens)*p.InputPerMTok + float64(u.CacheReadTokens)*cached +
		float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
	return u
}

// claudeUsage is the part of Claude Code's result object that says what
// the run cost (see testdata/claude-json).
type claudeUsage struct {
	Subtype       string  `json:"subtype"`
	TotalCostUSD  float64 `json:"total_cost_usd"`
	NumTurns      int64   `json:"num_turns"`
	DurationAPIMS int64   `json:"duration_api_ms"`
	Usage         struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

// parseClaudeUsage reads the usage of Claude Code's JSON output, whether
// the run succeeded or not (a run stopped by --max-budget-usd reports
// is_error with what it spent). Output that is not Claude Code JSON has none.
func parseClaudeUsage(out []byte) Usage {
	raw, _ := findClaudeObject(out)
	var cu claudeUsage
	if raw == nil || json.Unmarshal(raw, &cu) != nil {
		return Usage{}
	}
	return Usage{
		CostUSD: cu.TotalCostUSD, SessionCost: cu.TotalCostUSD,
		InputTokens: cu.Usage.InputTokens, OutputTokens: cu.Usage.OutputTokens,
		CacheCreationTokens: cu.Usage.CacheCreationInputTokens, CacheReadTokens: cu.Usage.CacheReadInputTokens,
		NumTurns: cu.NumTurns, APIDuration: apiDuration(cu.DurationAPIMS),
		MaxBudgetHit: cu.Subtype == "error_max_budget_usd",
	}.Checked()
}

// apiDuration is a count of milliseconds as a Duration; one out of
// Checked's range stays out of it (-1 ms, or just over MaxAPIDuration)
// instead of wrapping around.
func apiDuration(ms int64) time.Duration {
	return time.Duration(min(max(ms, -1), MaxAPIDuration.Milliseconds()+1)) * time.Millisecond
}

// TrailerKey is the key of the usage trailer a text agent may print as the
// last line of its stdout:
//
//	{"switchboard_usage": {"cost_usd": 0.01, "input_tokens": 1200, "output_tokens": 80}}
//
// The line is taken off the reply. Other keys: cache_creation_input_tokens,
// cache_read_input_tokens, num_turns, duration_api_ms.
const TrailerKey = "switchboard_usage"

// Report is the JSON shape of a usage report: the trailer's object and
// the arguments of the MCP tool report_usage.
type Report struct {
	CostUSD                  float64 `json:"cost_usd"`
	InputTokens              int64   `json:"input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	NumTurns                 int64   `json:"num_turns"`
	DurationAPIMS            int64   `json:"duration_api_ms"`
}

// Usage converts a report (Checked: a negative, non-finite or absurd
// figure refuses it).
func (r Report) Usage() Usage {
	return Usage{
		CostUSD: r.CostUSD, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
		CacheCreationTokens: r.CacheCreationInputTokens, CacheReadTokens: r.CacheReadInputTokens,
		NumTurns: r.NumTurns, APIDuration: apiDuration(r.DurationAPIMS),
	}.Checked()
}

// splitTrailer takes the usage trailer off a text agent's stdout: when the
// last non-blank line is a JSON object whose only key is TrailerKey, it
// returns the output before that line and the usage. Anything else is
// left alone (an agent that happens to print JSON keeps its reply).
func splitTrailer(out []byte) ([]byte, Usage) {
	trimmed := bytes.TrimRight(out, " \t\r\n")
	i := bytes.LastIndexByte(trimmed, '\n')
	line := bytes.TrimSpace(trimmed[i+1:])
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(TrailerKey)) {
		return out, Usage{}
	}
	var t map[string]json.RawMessage
	if json.Unmarshal(line, &t) != nil || len(t) != 1 || t[TrailerKey] == nil {
		return out, Usage{}
	}
	var r Report
	if json.Unmarshal(t[TrailerKey], &r) != nil {
		return out, Usage{}
	}
	return trimmed[:i+1], r.Usage()
}

// textReply is a text agent's reply and usage trailer.
func textReply(out []byte) (string, Usage) {
	body, u := splitTrailer(out)
	return strings.TrimSpace(strings.ToValidUTF8(string(body), "\uFFFD")), u
}

// stdoutUsage is the usage an agent's stdout reports, by output kind.
func stdoutUsage(o Output, out []byte) Usage {
	switch o {
	case OutputClaudeJSON:
		return parseClaudeUsage(out)
	case OutputCodexJSON:
		return readCodexEvents(out).Usage.usage()
	case OutputNone:
		return Usage{}
	}
	_, u := splitTrailer(out)
	return u
}
