package ops

import (
	"context"
	"fmt"
	"math"
	"time"

	"switchboard/groups"
	"switchboard/store"
)

// Windows are the budget windows around now, in now's location (the
// operator's zone, config timezone): today and this month.
func Windows(now time.Time) (dayStart, dayEnd, monthStart, monthEnd time.Time) {
	y, m, d := now.Date()
	loc := now.Location()
	return time.Date(y, m, d, 0, 0, 0, 0, loc), time.Date(y, m, d+1, 0, 0, 0, 0, loc),
		time.Date(y, m, 1, 0, 0, 0, 0, loc), time.Date(y, m+1, 1, 0, 0, 0, 0, loc)
}

// Hold is a budget that stops a group's turns: whose, which window,
// until when.
type Hold struct {
	Owner    groups.Folder // the folder whose budget it is (the group or an ancestor)
	Window   string        // daily | monthly
	CapUSD   float64       // the cap
	SpentUSD float64       // spent in the window by Owner's subtree
	Until    time.Time
}

// SpentFunc sums the cost of folder's subtree's turns since a time
// (store.Store.Spent).
type SpentFunc func(ctx context.Context, folder groups.Folder, since time.Time) (float64, error)

// BudgetHold reports the budget, of folder or an ancestor, that is used up
// at now (in the operator's zone), a monthly one first; nil when none is.
// It is the one budget evaluator: the gateway holds turns by it, and
// reports show it. Groups without budgets above them cost no query.
func BudgetHold(ctx context.Context, spent SpentFunc, budgets map[groups.Folder]store.Budget, folder groups.Folder, now time.Time) (*Hold, error) {
	if len(budgets) == 0 {
		return nil, nil
	}
	dayStart, dayEnd, monthStart, monthEnd := Windows(now)
	var found *Hold
	for owner := folder; owner != ""; owner = owner.Parent() {
		b, ok := budgets[owner]
		if !ok {
			continue
		}
		if b.MonthlyUSD > 0 {
			s, err := spent(ctx, owner, monthStart)
			if err != nil {
				return nil, err
			}
			if s >= b.MonthlyUSD {
				return &Hold{Owner: owner, Window: "monthly", CapUSD: b.MonthlyUSD, SpentUSD: s, Until: monthEnd}, nil
			}
		}
		if b.DailyUSD > 0 && found == nil {
			s, err := spent(ctx, owner, dayStart)
			if err != nil {
				return nil, err
			}
			if s >= b.DailyUSD {
				found = &Hold{Owner: owner, Window: "daily", CapUSD: b.DailyUSD, SpentUSD: s, Until: dayEnd}
			}
		}
	}
	return found, nil
}

// GroupSpend is what a group's subtree spent today and this month, its
// caps (0: none), and the folder whose used-up budget holds its turns.
type GroupSpend struct {
	Folder     groups.Folder `json:"folder"`
	TodayUSD   float64       `json:"today_usd"`
	MonthUSD   float64       `json:"month_usd"`
	DailyUSD   float64       `json:"daily_usd,omitempty"`
	MonthlyUSD float64       `json:"monthly_usd,omitempty"`
	// HeldBy is the group (this one or an ancestor) whose used-up budget
	// holds this group's turns now; "" when none does.
	HeldBy groups.Folder `json:"held_by,omitempty"`
}

// Over reports whether a budget, the group's own or an ancestor's, is
// used up: no new turn of the group starts.
func (g GroupSpend) Over() bool { return g.HeldBy != "" }

// SpendReport lists, for each of folders, its subtree's spend in the
// windows around now, its budget, and whether a budget holds it
// (BudgetHold).
func SpendReport(ctx context.Context, st *store.Store, folders []groups.Folder, now time.Time) ([]GroupSpend, error) {
	bs, err := st.Budgets(ctx)
	if err != nil {
		return nil, err
	}
	caps := map[groups.Folder]store.Budget{}
	for _, b := range bs {
		caps[b.Folder] = b
	}
	dayStart, _, monthStart, _ := Windows(now)
	// Every subtree's sums come from one read of the running totals.
	sums, err := st.SpendBySubtree(ctx, dayStart, monthStart)
	if err != nil {
		return nil, err
	}
	spent := func(_ context.Context, f groups.Folder, since time.Time) (float64, error) {
		switch {
		case since.Equal(dayStart):
			return sums[f].Day, nil
		case since.Equal(monthStart):
			return sums[f].Month, nil
		}
		return st.Spent(ctx, f, since)
	}
	out := make([]GroupSpend, 0, len(folders))
	for _, f := range folders {
		g := GroupSpend{Folder: f, DailyUSD: caps[f].DailyUSD, MonthlyUSD: caps[f].MonthlyUSD, TodayUSD: sums[f].Day, MonthUSD: sums[f].Month}
		h, err := BudgetHold(ctx, spent, caps, f, now)
		if err != nil {
			return nil, err
		}
		if h != nil {
			g.HeldBy = h.Owner
		}
		out = append(out, g)
	}
	return out, nil
}

// CheckBudget validates caps in US dollars: finite, not negative, and at
// least one of them set.
func CheckBudget(daily, monthly float64) error {
	for name, v := range map[string]float64{"daily": daily, "monthly": monthly} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("%w: %s cap %v; want US dollars, 0 or more", ErrBadBudget, name, v)
		}
	}
	if daily == 0 && monthly == 0 {
		return fmt.Errorf("%w: neither a daily nor a monthly cap; set one (to remove a budget use budget rm)", ErrBadBudget)
	}
	return nil
}
