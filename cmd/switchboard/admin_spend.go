package main

import (
	"context"
	"fmt"
	"time"

	"switchboard/ops"
	"switchboard/store"
)

// The status page's spend panel: each group's spend today and this month
// against its caps (ops.SpendReport), and a chart of the last 24 hours,
// one pair of bars per hour (turns, spend), drawn as SVG on the server.

// Chart colours; the browser test looks for them in a screenshot.
const (
	chartTurnsColor = "#2563eb" // turns per hour
	chartSpendColor = "#f59e0b" // dollars per hour
)

type spendChart struct {
	Width, Height, Base int // the SVG's size and the bars' baseline (y)
	Bars                []chartBar
	Labels              []chartLabel
	MaxTurns            int
	MaxCost             string
	Turns               int    // in the 24 hours
	Cost                string // in the 24 hours
	TurnsColor          string
	SpendColor          string
}

type chartBar struct {
	X, W           int
	TurnsY, TurnsH int
	SpendX         int
	SpendY, SpendH int
	Title          string
}

type chartLabel struct {
	X    int
	Text string
}

const (
	chartHours  = 24
	chartSlot   = 30  // px per hour
	chartPlot   = 140 // px of the tallest bar
	chartTop    = 10
	chartLabels = 20 // px under the baseline for the hour labels
)

// buildSpendChart reads the turns and spend per hour of the 24 hours up to
// now and lays out the bars, each series scaled to its own maximum.
func buildSpendChart(ctx context.Context, st *store.Store, now time.Time) (*spendChart, error) {
	buckets, err := st.SpendPerHour(ctx, now, chartHours)
	if err != nil {
		return nil, err
	}
	c := &spendChart{Width: chartHours * chartSlot, Base: chartTop + chartPlot, TurnsColor: chartTurnsColor, SpendColor: chartSpendColor}
	c.Height = c.Base + chartLabels
	maxCost, total := 0.0, 0.0
	for _, b := range buckets {
		c.MaxTurns = max(c.MaxTurns, b.Turns)
		maxCost = max(maxCost, b.CostUSD)
		c.Turns += b.Turns
		total += b.CostUSD
	}
	c.MaxCost, c.Cost = usd(maxCost), usd(total)
	for i, b := range buckets {
		x := i * chartSlot
		bar := chartBar{X: x + 3, W: 11, SpendX: x + 15,
			Title: fmt.Sprintf("%s: %d turns, %s", b.Start.In(now.Location()).Format("15:04"), b.Turns, usd(b.CostUSD))}
		if c.MaxTurns > 0 {
			bar.TurnsH = b.Turns * chartPlot / c.MaxTurns
		}
		if maxCost > 0 {
			bar.SpendH = int(b.CostUSD / maxCost * chartPlot)
		}
		if b.Turns > 0 && bar.TurnsH == 0 {
			bar.TurnsH = 1
		}
		if b.CostUSD > 0 && bar.SpendH == 0 {
			bar.SpendH = 1
		}
		bar.TurnsY, bar.SpendY = c.Base-bar.TurnsH, c.Base-bar.SpendH
		c.Bars = append(c.Bars, bar)
		if i%3 == 0 {
			c.Labels = append(c.Labels, chartLabel{X: x + 2, Text: b.Start.In(now.Location()).Format("15:04")})
		}
	}
	return c, nil
}

// spendPanel is what the status page shows about spend.
type spendPanel struct {
	Zone   string
	Groups []ops.GroupSpend
	Chart  *spendChart
}

func readSpendPanel(ctx context.Context, st *store.Store, loc *time.Location) (*spendPanel, error) {
	folders, err := st.Groups(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now().In(loc)
	groups, err := ops.SpendReport(ctx, st, folders, now)
	if err != nil {
		return nil, err
	}
	chart, err := buildSpendChart(ctx, st, now)
	if err != nil {
		return nil, err
	}
	return &spendPanel{Zone: loc.String(), Groups: groups, Chart: chart}, nil
}
