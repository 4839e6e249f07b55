package ipc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// TestReportUsage: a tier-2 group granted report_usage (below tier 1 it is
// not a default) reports its running turn's cost over MCP in two calls;
// the turn record and inspect_session carry the sum, and outside a turn
// the call is refused.
func TestReportUsage(t *testing.T) {
	agent, gate := blockingAgent(t)
	h := newHarnessAgent(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme/eng", []string{"report_usage"})
	}, agent)
	h.waitStarted(t)
	c := h.connect(t, "acme/eng", true)
	if r := call(t, c, "report_usage", map[string]any{"cost_usd": 0.5}); !r.IsError || !strings.Contains(r.Text, "runs no turn") {
		t.Errorf("report_usage with no turn running: %+v", r)
	}
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: "web:eng", ID: "m1", Sender: "web:user/ann",
		Text: "question", Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "turn of acme/eng/ops running", func() bool {
		return call(t, c, "report_usage", map[string]any{"cost_usd": 0.25, "input_tokens": 1000, "output_tokens": 50}).IsError == false
	})
	if r := call(t, c, "report_usage", map[string]any{"cost_usd": 0.125, "output_tokens": 30, "cache_read_input_tokens": 7}); r.IsError {
		t.Fatalf("second report: %+v", r)
	}
	for _, args := range []map[string]any{{"cost_usd": -1}, {"cost_usd": 1e308}, {"cost_usd": 20000}, {"output_tokens": 1e13}} {
		if r := call(t, c, "report_usage", args); !r.IsError || !strings.Contains(r.Text, "is not between") && !strings.Contains(r.Text, "not a figure") {
			t.Errorf("report_usage %v was accepted: %+v", args, r)
		}
	}
	mustWrite(t, gate, "")
	waitTurn(t, h.st, "acme/eng", store.TriggerMessage)
	turns, err := h.st.Turns(context.Background(), "acme/eng", 1)
	if err != nil {
		t.Fatal(err)
	}
	u := turns[0].Usage
	if u.CostUSD != 0.375 || u.InputTokens != 1000 || u.OutputTokens != 80 || u.CacheReadTokens != 7 {
		t.Errorf("turn usage %+v, want the two reports added up: $0.375, 1000 in, 80 out, 7 cache reads", u)
	}
	var seen struct {
		Turns []struct {
			CostUSD      float64 `json:"cost_usd"`
			InputTokens  int64   `json:"input_tokens"`
			OutputTokens int64   `json:"output_tokens"`
		} `json:"turns"`
	}
	call(t, c, "inspect_session", nil).decode(t, &seen)
	if len(seen.Turns) != 1 || seen.Turns[0].CostUSD != 0.375 || seen.Turns[0].OutputTokens != 80 {
		t.Errorf("inspect_session turns %+v, want the turn with its cost $0.375 and 80 output tokens", seen.Turns)
	}
}

// TestBudgetTools: a tier-1 group sets a budget below it and lists its
// subtree's; it cannot set its own or another tree's, and tier 2 does not
// see the tools.
func TestBudgetTools(t *testing.T) {
	h := newHarness(t, nil)
	acme := h.connect(t, "acme", true)
	if r := call(t, acme, "set_budget", map[string]any{"folder": "acme/eng", "daily_usd": 5, "monthly_usd": 50}); r.IsError {
		t.Fatalf("set_budget: %+v", r)
	}
	bs, err := h.st.Budgets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Folder != "acme/eng" || bs[0].DailyUSD != 5 || bs[0].MonthlyUSD != 50 {
		t.Errorf("stored budgets %+v", bs)
	}
	for _, f := range []string{"acme", "root", "acmex"} {
		if r := call(t, acme, "set_budget", map[string]any{"folder": f, "daily_usd": 100}); !r.IsError {
			t.Errorf("acme set the budget of %s: %+v", f, r)
		}
	}
	var list struct {
		Budgets []struct {
			Folder   string  `json:"folder"`
			DailyUSD float64 `json:"daily_usd"`
		} `json:"budgets"`
	}
	call(t, acme, "list_budgets", nil).decode(t, &list)
	var folders []string
	for _, b := range list.Budgets {
		folders = append(folders, b.Folder)
	}
	if strings.Join(folders, ",") != "acme,acme/eng,acme/eng/ops" || list.Budgets[1].DailyUSD != 5 {
		t.Errorf("list_budgets of acme: %+v", list.Budgets)
	}
	if r := call(t, h.connect(t, "acme/eng", true), "list_budgets", nil); !r.refused() {
		t.Errorf("tier 2 list_budgets: %+v", r)
	}
	if r := call(t, acme, "set_budget", map[string]any{"folder": "acme/eng"}); r.IsError {
		t.Fatalf("remove: %+v", r)
	}
	if bs, _ := h.st.Budgets(context.Background()); len(bs) != 0 {
		t.Errorf("after set_budget with no caps: %+v, want the budget removed", bs)
	}
}

// TestListBudgetsUsedUpByAncestor: a group without a budget of its own
// whose parent's budget is used up is shown used up (its turns are held
// by the parent's cap), as the gateway holds it.
func TestListBudgetsUsedUpByAncestor(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	if err := h.st.SetBudget(ctx, store.Budget{Folder: "acme", DailyUSD: 1}); err != nil {
		t.Fatal(err)
	}
	turn := store.Turn{ID: "t-eng", Folder: "acme/eng", ChatJID: "web:lobby", Trigger: store.TriggerMessage, Attempt: 1,
		Started: time.Now(), Status: store.TurnSucceeded, Usage: store.Usage{CostUSD: 2}}
	if err := h.st.FinishBatch(ctx, store.Batch{Folder: "acme/eng", ChatJID: "web:lobby"}, turn, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Budgets []struct {
			Folder string `json:"folder"`
			UsedUp bool   `json:"used_up"`
		} `json:"budgets"`
	}
	call(t, h.connect(t, "acme", true), "list_budgets", nil).decode(t, &list)
	got := map[string]bool{}
	for _, b := range list.Budgets {
		got[b.Folder] = b.UsedUp
	}
	if !got["acme"] || !got["acme/eng"] || !got["acme/eng/ops"] {
		t.Errorf("list_budgets with acme's daily $1 spent by acme/eng: used_up %v; want acme and everything below it used up", got)
	}
}

// TestListBudgetsWithoutFloatNoise: three turns of $0.80 are 2.4 in
// list_budgets, not 2.4000000000000004.
func TestListBudgetsWithoutFloatNoise(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	for i := range 3 {
		turn := store.Turn{ID: fmt.Sprint("t-", i), Folder: "acme", ChatJID: "web:lobby", Trigger: store.TriggerMessage, Attempt: 1,
			Started: time.Now(), Status: store.TurnSucceeded, Usage: store.Usage{CostUSD: 0.8}}
		if err := h.st.FinishBatch(ctx, store.Batch{Folder: "acme", ChatJID: "web:lobby"}, turn, nil, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	r := call(t, h.connect(t, "acme", true), "list_budgets", nil)
	if r.IsError || !strings.Contains(r.Text, `"today_usd":2.4,`) || !strings.Contains(r.Text, `"month_usd":2.4,`) {
		t.Errorf("list_budgets: %s; want acme's today_usd and month_usd 2.4", r.Text)
	}
}
