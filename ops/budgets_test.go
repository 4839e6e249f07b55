package ops_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// SetBudget is `budget set` and set_budget: caps are checked, the group
// must exist, and both caps 0 removes the budget.
func TestSetBudget(t *testing.T) {
	for _, c := range []struct {
		name           string
		folder         groups.Folder
		daily, monthly float64
		wantErr        error
		want           *store.Budget // the stored budget after; nil: none
	}{
		{"daily", "acme", 2, 0, nil, &store.Budget{Folder: "acme", DailyUSD: 2}},
		{"both", "acme/eng", 1, 10, nil, &store.Budget{Folder: "acme/eng", DailyUSD: 1, MonthlyUSD: 10}},
		{"both 0 removes", "main", 0, 0, nil, nil},
		{"no such group", "ghost", 1, 0, ops.ErrNoGroup, nil},
		{"negative", "acme", -1, 0, ops.ErrBadBudget, nil},
		{"NaN", "acme", 0, math.NaN(), ops.ErrBadBudget, nil},
		{"infinite", "acme", math.Inf(1), 0, ops.ErrBadBudget, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			if err := f.st.SetBudget(ctx, store.Budget{Folder: "main", DailyUSD: 5}); err != nil {
				t.Fatal(err)
			}
			err := ops.SetBudget(ctx, f.st, c.folder, c.daily, c.monthly)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v; want %v", err, c.wantErr)
			}
			bs, err := f.st.Budgets(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var got *store.Budget
			for _, b := range bs {
				if b.Folder == c.folder {
					got = &b
				}
			}
			switch {
			case c.want == nil && got != nil:
				t.Errorf("budget of %s = %+v; want none", c.folder, *got)
			case c.want != nil && (got == nil || got.DailyUSD != c.want.DailyUSD || got.MonthlyUSD != c.want.MonthlyUSD):
				t.Errorf("budget of %s = %+v; want %+v", c.folder, got, *c.want)
			}
			if c.folder != "main" && len(bs) == 0 {
				t.Error("main's budget went away")
			}
		})
	}
}
