package config

import (
	"fmt"
	"math"

	"switchboard/agent"
	"switchboard/groups"
	"switchboard/ops"
)

// BudgetSeed is a group's budget set at start unless the group has one
// already (config budgets:).
type BudgetSeed struct {
	Folder     groups.Folder `yaml:"folder"`
	DailyUSD   float64       `yaml:"daily_usd"`
	MonthlyUSD float64       `yaml:"monthly_usd"`
}

// PriceConfig is agent.price: US dollars per million tokens, charged for
// turns whose agent reports tokens and no cost (Codex). All 0: none.
type PriceConfig struct {
	InputPerMTok       float64 `yaml:"input_per_mtok"`
	CachedInputPerMTok float64 `yaml:"cached_input_per_mtok"` // 0: cache reads at input_per_mtok
	OutputPerMTok      float64 `yaml:"output_per_mtok"`
}

// AgentPrice is the price in agent's terms.
func (p PriceConfig) AgentPrice() agent.Price {
	return agent.Price{InputPerMTok: p.InputPerMTok, CachedInputPerMTok: p.CachedInputPerMTok, OutputPerMTok: p.OutputPerMTok}
}

// maxPerMTok bounds agent.price: far above any model's price, so that a
// price in the wrong unit (per token, not per million) is caught.
const maxPerMTok = 1000

func (c *Config) validateBudgets(bad func(string, string, ...any)) {
	if v := c.Agent.MaxTurnUSD; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		bad("agent.max_turn_usd", "%v: want US dollars, 0 (no cap) or more", v)
	}
	p := c.Agent.Price
	for _, f := range []struct {
		key string
		v   float64
	}{{"input_per_mtok", p.InputPerMTok}, {"cached_input_per_mtok", p.CachedInputPerMTok}, {"output_per_mtok", p.OutputPerMTok}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 || f.v > maxPerMTok {
			bad("agent.price."+f.key, "%v: want US dollars per million tokens, 0 to %d (e.g. 1.25)", f.v, maxPerMTok)
		}
	}
	if p != (PriceConfig{}) && (p.InputPerMTok == 0 || p.OutputPerMTok == 0) {
		bad("agent.price", "set both input_per_mtok and output_per_mtok, or neither (no price)")
	}
	first := map[groups.Folder]int{}
	for i, b := range c.Budgets {
		key := fmt.Sprintf("budgets[%d]", i)
		if err := b.Folder.Validate(); err != nil {
			bad(key+".folder", "%v", err)
		} else if j, dup := first[b.Folder]; dup {
			bad(key+".folder", "%q has a budget already (budgets[%d]); one entry per group: remove one of them", b.Folder, j)
		} else {
			first[b.Folder] = i
		}
		if err := ops.CheckBudget(b.DailyUSD, b.MonthlyUSD); err != nil {
			bad(key, "%v (daily_usd, monthly_usd)", err)
		}
	}
}
