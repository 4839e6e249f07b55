package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/config"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// recordTurn stores a finished turn of folder with usage, as the gateway does.
func recordTurn(t *testing.T, dir, folder string, started time.Time, u store.Usage) {
	t.Helper()
	mustSB(t, dir, "group", "list") // creates the database
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	turn := store.Turn{ID: "t-" + started.Format("150405.000000") + folder, Folder: groups.Folder(folder), ChatJID: "web:lobby", Trigger: store.TriggerMessage,
		Attempt: 1, Started: started, Duration: 2 * time.Second, Status: store.TurnSucceeded, Usage: u}
	if err := st.FinishBatch(context.Background(), store.Batch{Folder: groups.Folder(folder), ChatJID: "web:lobby"}, turn, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
}

func TestTurnsShowsUsage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	recordTurn(t, dir, "main", time.Now(), store.Usage{CostUSD: 0.016656, InputTokens: 1234, OutputTokens: 56, CacheReadTokens: 3000, CacheCreationTokens: 2000})
	out := mustSB(t, dir, "turns")
	if !strings.Contains(out, "$0.0167") || !strings.Contains(out, "1234/56/5000") {
		t.Errorf("switchboard turns:\n%s\nwant the cost $0.0167 and tokens 1234/56/5000", out)
	}
	var lines []turnLine
	if err := json.Unmarshal([]byte(mustSB(t, dir, "--json", "turns", "--folder", "main")), &lines); err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].CostUSD != 0.016656 || lines[0].OutputTokens != 56 {
		t.Errorf("turns --json: %+v", lines)
	}
}

// TestBudgetCLI: budget set, list (spend of the subtree against the caps,
// also in status) and rm; bad caps are usage errors.
func TestBudgetCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "group", "add", "main/sub")
	recordTurn(t, dir, "main/sub", time.Now(), store.Usage{CostUSD: 6})
	if out := mustSB(t, dir, "budget", "set", "main", "--daily", "5", "--monthly", "50"); !strings.Contains(out, "budget of main: $5.00 a day, $50.00 a month") {
		t.Errorf("budget set: %q", out)
	}
	out := mustSB(t, dir, "budget", "list")
	if !strings.Contains(out, "main      $6.00  $5.00") || !strings.Contains(out, "USED UP") {
		t.Errorf("budget list:\n%s\nwant main's subtree spend $6.00 marked used up", out)
	}
	if out := mustSB(t, dir, "status"); !strings.Contains(out, "main      today $6.00 of $5.00, month $6.00 of $50.00  USED UP") {
		t.Errorf("status:\n%s", out)
	}
	for _, args := range [][]string{{"budget", "set", "main"}, {"budget", "set", "main", "--daily", "-1"}, {"budget", "set", "Bad"}} {
		if _, _, err := sb(t, dir, args...); !isUsage(err) {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
	if _, _, err := sb(t, dir, "budget", "set", "nosuch", "--daily", "1"); err == nil || !strings.Contains(err.Error(), "no group nosuch") {
		t.Errorf("budget set of a missing group: %v", err)
	}
	mustSB(t, dir, "budget", "rm", "main")
	if _, _, err := sb(t, dir, "budget", "rm", "main"); err == nil {
		t.Error("budget rm twice succeeded")
	}
}

func TestConfigBudgets(t *testing.T) {
	cfg, err := config.Parse([]byte("agent:\n  output: claude-json\n  max_turn_usd: 0.5\nbudgets:\n  - {folder: main, daily_usd: 5, monthly_usd: 50}\n"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Budgets) != 1 || cfg.Budgets[0] != (config.BudgetSeed{Folder: "main", DailyUSD: 5, MonthlyUSD: 50}) {
		t.Errorf("budgets %+v", cfg.Budgets)
	}
	if got := cfg.Agent.Price.AgentPrice(); got != (agent.Price{}) {
		t.Errorf("price %+v, want none by default", got)
	}
	cfg.Agent.Command = []string{"/bin/echo"}
	spec, err := agent.NewSpec(t.Context(), (&app{cfg: cfg}).specConfig("", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(spec.Command[1:], " "); got != "--max-budget-usd 0.5" {
		t.Errorf("max_turn_usd args %q", got)
	}
	cfg, err = config.Parse([]byte("agent:\n  output: codex-json\n  price: {input_per_mtok: 1.25, cached_input_per_mtok: 0.125, output_per_mtok: 10}\n"), func(string) string { return "" })
	if err != nil || cfg.Agent.Price.AgentPrice() != (agent.Price{InputPerMTok: 1.25, CachedInputPerMTok: 0.125, OutputPerMTok: 10}) {
		t.Errorf("agent.price: %+v, %v", cfg.Agent.Price, err)
	}
	for yaml, want := range map[string]string{
		"budgets:\n  - {folder: main}\n":                  "budgets[0]: bad budget: neither a daily nor a monthly cap",
		"budgets:\n  - {folder: main, daily_usd: lots}\n": `budgets[0].daily_usd: "lots" is not a number`,
		"budgets:\n  - {folder: ../x, daily_usd: 1}\n":    "budgets[0].folder:",
		"budgets:\n  - {folder: a, daily_usd: 1}\n  - {folder: main, daily_usd: 1}\n  - {folder: main, daily_usd: 2}\n": `budgets[2].folder: "main" has a budget already (budgets[1])`,
		"agent:\n  max_turn_usd: -1\n":                                  "agent.max_turn_usd: -1",
		"agent:\n  price: {input_per_mtok: -1, output_per_mtok: 2}\n":   "agent.price.input_per_mtok: -1: want US dollars per million tokens",
		"agent:\n  price: {input_per_mtok: 1, output_per_mtok: 5000}\n": "agent.price.output_per_mtok: 5000",
		"agent:\n  price: {input_per_mtok: 1}\n":                        "agent.price: set both input_per_mtok and output_per_mtok",
		"agent:\n  price: {input_per_mtok: 1, output: 2}\n":             "agent.price.output: unknown key",
		"budgets:\n  - {folder: main, daily_usd: 1, x: 2}\n":            "budgets[0].x: unknown key",
	} {
		if _, err := config.Parse([]byte(yaml), func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", yaml, err, want)
		}
	}
}

// A cap below a cent reads as itself in budget list and status, not as
// "$0.00" beside "USED UP".
func TestSpendTextSmallCap(t *testing.T) {
	var b strings.Builder
	spendText(&b, []ops.GroupSpend{{Folder: "main", TodayUSD: 0.002, DailyUSD: 0.001, HeldBy: "main"}}, "UTC")
	if out := b.String(); !strings.Contains(out, "main\t$0.0020\t$0.0010\t") || !strings.Contains(out, "USED UP") {
		t.Errorf("budget list line for a $0.001 daily cap:\n%s", out)
	}
}

// TestSpendJSONWithoutFloatNoise: three turns of $0.80 show as 2.4 in
// budget list --json and status --json (sums are exact micro-dollars),
// not 2.4000000000000004.
func TestSpendJSONWithoutFloatNoise(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	now := time.Now()
	for i := range 3 {
		recordTurn(t, dir, "main", now.Add(-time.Duration(i)*time.Millisecond), store.Usage{CostUSD: 0.8})
	}
	mustSB(t, dir, "budget", "set", "main", "--daily", "5")
	for _, args := range [][]string{{"--json", "budget", "list"}, {"--json", "status"}} {
		out := mustSB(t, dir, args...)
		if !strings.Contains(out, `"today_usd": 2.4,`) || !strings.Contains(out, `"month_usd": 2.4,`) {
			t.Errorf("switchboard %s:\n%s\nwant today_usd and month_usd 2.4", strings.Join(args, " "), out)
		}
	}
}

// TestTurnsInConfiguredZone: switchboard turns shows when a turn started
// in the config's timezone, zone named, as the other commands do (it
// printed the host's zone, unnamed); --json carries the offset.
func TestTurnsInConfiguredZone(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	cfg := filepath.Join(base, "switchboard.yaml")
	if err := os.WriteFile(cfg, []byte("timezone: Europe/Berlin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	recordTurn(t, dir, "main", time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC), store.Usage{CostUSD: 0.5})
	if out := mustSB(t, dir, "--config", cfg, "turns"); !strings.Contains(out, "2026-01-15 13:00:00 +01:00 Europe/Berlin") {
		t.Errorf("switchboard turns:\n%s\nwant the start at 13:00 +01:00 Europe/Berlin", out)
	}
	if out := mustSB(t, dir, "--config", cfg, "--json", "turns"); !strings.Contains(out, `"started": "2026-01-15T13:00:00+01:00"`) {
		t.Errorf("switchboard --json turns:\n%s\nwant started in Europe/Berlin's offset", out)
	}
}
