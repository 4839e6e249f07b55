package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// seedBudgets sets the config's budgets of groups that have none stored:
// what budget set changed later stays. A budget of a folder that is no
// group (after the config's groups were created) is an error naming it,
// as budget set refuses it, and then none is set.
func (a *app) seedBudgets(ctx context.Context, st *store.Store) error {
	for i, b := range a.cfg.Budgets {
		ok, err := st.GroupExists(ctx, b.Folder)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("budgets[%d].folder: no group %s; add it to groups: (or switchboard group add %s), or remove this budget", i, b.Folder, b.Folder)
		}
	}
	for _, b := range a.cfg.Budgets {
		created, err := st.SeedBudget(ctx, store.Budget{Folder: b.Folder, DailyUSD: b.DailyUSD, MonthlyUSD: b.MonthlyUSD})
		if err != nil {
			return err
		}
		if created {
			a.log.Info("budget set from config", "folder", b.Folder, "daily_usd", b.DailyUSD, "monthly_usd", b.MonthlyUSD)
		}
	}
	return nil
}

func (a *app) budgetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Cap what a group's agent turns may spend per day and month",
		Long: `A budget caps, in US dollars, what the turns of a group and its subgroups may
spend per day and per month, in the operator's time zone (config timezone).
Spend is what agents report per turn (see switchboard turns). When a cap is
reached, no new turn starts for the group: chat messages are stored and
answered when the window ends or the cap is raised (a running gateway picks
changes up within 2 seconds), the chat is told once per window, and
scheduled tasks are skipped with the reason recorded on the run.`,
	}
	var daily, monthly float64
	set := &cobra.Command{
		Use:     "set FOLDER",
		Short:   "Set a group's caps (both: an omitted cap is none)",
		Example: `  switchboard budget set main --daily 5 --monthly 50`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			folder, err := groups.ParseFolder(args[0])
			if err != nil {
				return usageError{err: err}
			}
			if err := ops.CheckBudget(daily, monthly); err != nil {
				return usagef("--daily/--monthly: %v", err)
			}
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				err := ops.SetBudget(cmd.Context(), st, folder, daily, monthly)
				if errors.Is(err, ops.ErrNoGroup) {
					return fmt.Errorf("no group %s; see switchboard group list", args[0])
				}
				if err != nil {
					return err
				}
				return a.emit(map[string]any{"folder": folder, "daily_usd": daily, "monthly_usd": monthly}, func(w io.Writer) {
					fmt.Fprintf(w, "budget of %s: %s a day, %s a month\n", args[0], capText(daily), capText(monthly))
				})
			})
		},
	}
	set.Flags().Float64Var(&daily, "daily", 0, "US dollars per day (0: no daily cap)")
	set.Flags().Float64Var(&monthly, "monthly", 0, "US dollars per month (0: no monthly cap)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List groups' spend today and this month against their caps",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				rep, err := a.spendReport(cmd.Context(), st)
				if err != nil {
					return err
				}
				return a.emit(rep, func(w io.Writer) { spendText(w, rep, a.cfg.Timezone) })
			})
		},
	}
	rm := &cobra.Command{
		Use:   "rm FOLDER",
		Short: "Remove a group's budget",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withStore(cmd.Context(), func(st *store.Store) error {
				found, err := st.DeleteBudget(cmd.Context(), groups.Folder(args[0]))
				if err != nil {
					return err
				}
				if !found {
					return fmt.Errorf("group %s has no budget; see switchboard budget list", args[0])
				}
				return a.emit(map[string]any{"folder": args[0], "removed": true}, func(w io.Writer) {
					fmt.Fprintf(w, "budget of %s removed\n", args[0])
				})
			})
		},
	}
	cmd.AddCommand(set, list, rm)
	return cmd
}

// spendReport is every group's spend and caps, in the config's zone.
func (a *app) spendReport(ctx context.Context, st *store.Store) ([]ops.GroupSpend, error) {
	folders, err := st.Groups(ctx)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(a.cfg.Timezone)
	if err != nil {
		loc = time.UTC
	}
	return ops.SpendReport(ctx, st, folders, time.Now().In(loc))
}

func spendText(w io.Writer, rep []ops.GroupSpend, zone string) {
	fmt.Fprintf(w, "GROUP\tTODAY\tDAILY CAP\tTHIS MONTH\tMONTHLY CAP\t(%s; a group's figures include its subgroups)\n", zone)
	for _, g := range rep {
		mark := ""
		if g.Over() {
			mark = "\t" + heldText(g)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s%s\n", g.Folder, usd(g.TodayUSD), capText(g.DailyUSD), usd(g.MonthUSD), capText(g.MonthlyUSD), mark)
	}
}

// capText is a cap as usd writes spend (a cap under a dollar keeps four
// decimals), or "none".
func capText(v float64) string {
	if v <= 0 {
		return "none"
	}
	return usd(v)
}

// heldText marks a group whose turns a used-up budget holds: its own, or
// an ancestor's (named).
func heldText(g ops.GroupSpend) string {
	if g.HeldBy != g.Folder {
		return "USED UP: turns held by the budget of " + string(g.HeldBy)
	}
	return "USED UP: turns held"
}
