package control

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

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

// GroupSpend is what a group's subtree spent today and this month, and its
// caps (0: none).
type GroupSpend struct {
	Folder     string  `json:"folder"`
	TodayUSD   float64 `json:"today_usd"`
	MonthUSD   float64 `json:"month_usd"`
	DailyUSD   float64 `json:"daily_usd,omitempty"`
	MonthlyUSD float64 `json:"monthly_usd,omitempty"`
}

// Over reports whether a cap is used up.
func (g GroupSpend) Over() bool {
	return (g.DailyUSD > 0 && g.TodayUSD >= g.DailyUSD) || (g.MonthlyUSD > 0 && g.MonthUSD >= g.MonthlyUSD)
}

// SpendReport lists, for each of folders, its subtree's spend in the
// windows around now and its budget.
func SpendReport(ctx context.Context, st *store.Store, folders []string, now time.Time) ([]GroupSpend, error) {
	bs, err := st.Budgets(ctx)
	if err != nil {
		return nil, err
	}
	caps := map[string]store.Budget{}
	for _, b := range bs {
		caps[b.Folder] = b
	}
	dayStart, _, monthStart, _ := Windows(now)
	out := make([]GroupSpend, 0, len(folders))
	for _, f := range folders {
		g := GroupSpend{Folder: f, DailyUSD: caps[f].DailyUSD, MonthlyUSD: caps[f].MonthlyUSD}
		if g.TodayUSD, err = st.Spent(ctx, f, dayStart); err != nil {
			return nil, err
		}
		if g.MonthUSD, err = st.Spent(ctx, f, monthStart); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// ErrBadBudget is a budget whose caps make no sense.
var ErrBadBudget = errors.New("bad budget")

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
