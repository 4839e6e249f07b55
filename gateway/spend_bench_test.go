package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"switchboard/groups"
	"switchboard/store"
)

// BenchmarkBudgetCheck is the check that runs at the start of every turn
// (budgetGuard.check → budgetGuard.hold): with no budget (no query), and with
// daily and monthly caps on a group and its parent, over a month of 2,000
// and of 20,000 turns: the cost must not grow with the turns recorded (the
// store reads running totals). It does not run in Deliver; compare with
// BenchmarkDeliver.
func BenchmarkBudgetCheck(b *testing.B) {
	for _, turns := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) { benchBudgetCheck(b, turns) })
	}
}

func benchBudgetCheck(b *testing.B, turns int) {
	h := newHarness(b, harnessConfig{agent: blockedAgent(b), groups: []string{"main/a", "main/a/b"},
		modify: func(o *Options) { o.DrainTimeout = 10 * time.Millisecond }})
	ctx := context.Background()
	now := time.Now()
	step := 30 * 24 * time.Hour / time.Duration(turns)
	for i := range turns {
		f := []groups.Folder{"main", "main/a", "main/a/b", "root"}[i%4]
		turn := store.Turn{ID: fmt.Sprintf("t-%d", i), Folder: f, ChatJID: testChat, Trigger: store.TriggerMessage, Attempt: 1,
			Started: now.Add(-time.Duration(i) * step), Status: store.TurnSucceeded, Usage: store.Usage{CostUSD: 0.001}}
		if err := h.st.FinishBatch(ctx, store.Batch{Folder: f, ChatJID: testChat}, turn, nil, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("no budgets", func(b *testing.B) {
		for b.Loop() {
			if _, err := h.g.budget.hold(ctx, "main/a/b", now); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, bu := range []store.Budget{{Folder: "main", DailyUSD: 100, MonthlyUSD: 1000}, {Folder: "main/a", DailyUSD: 100, MonthlyUSD: 1000}} {
		if err := h.st.SetBudget(ctx, bu); err != nil {
			b.Fatal(err)
		}
	}
	if err := h.g.budget.load(ctx); err != nil {
		b.Fatal(err)
	}
	b.Run("two budgets above", func(b *testing.B) {
		for b.Loop() {
			if hold, err := h.g.budget.hold(ctx, "main/a/b", now); err != nil || hold != nil {
				b.Fatal(hold, err)
			}
		}
	})
}
