package main

import (
	"encoding/json"
	"testing"
)

// TestE2EAbsurdUsage: an agent that reports $1e308 twice (which summed to
// +Inf: budget list --json and status --json failed with "json:
// unsupported value" and every ancestor read used up) gets its usage
// refused, logged with the turn id; the reports stay finite and nothing
// is held.
func TestE2EAbsurdUsage(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: `cat >/dev/null; echo ok; echo '{"switchboard_usage": {"cost_usd": 1e308}}'`})
	g := startGW(t, dir)
	g.mustCLI("budget", "set", "root", "--daily", "5")
	g.mustPost("lobby", "ann", "one")
	g.waitBot("lobby", 1)
	g.mustPost("lobby", "ann", "two")
	g.waitBot("lobby", 2)
	var list []struct {
		Folder   string  `json:"folder"`
		TodayUSD float64 `json:"today_usd"`
		HeldBy   string  `json:"held_by"`
	}
	if err := json.Unmarshal([]byte(g.mustCLI("--json", "budget", "list")), &list); err != nil {
		t.Fatalf("budget list --json: %v", err)
	}
	for _, b := range list {
		if b.TodayUSD != 0 || b.HeldBy != "" {
			t.Errorf("budget list: %+v, want nothing spent or held", b)
		}
	}
	var st struct {
		Spend []struct {
			TodayUSD float64 `json:"today_usd"`
		} `json:"spend"`
	}
	if err := json.Unmarshal([]byte(g.mustCLI("--json", "status")), &st); err != nil || len(st.Spend) == 0 {
		t.Fatalf("status --json: %v, %+v", err, st)
	}
	refused := g.records("usage refused", "folder", "main")
	if len(refused) != 2 || refused[0]["turn_id"] == "" || refused[0]["reason"] != "cost_usd 1e+308 is not between 0 and 10000 US dollars" {
		t.Errorf("usage refused logs: %v, want one per turn with its id and reason", refused)
	}
}
