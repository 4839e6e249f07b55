package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"switchboard/control"
	"switchboard/groups"
	"switchboard/mcpserver"
	"switchboard/store"
)

// budgets is the gateway's copy of the stored budgets, replaced on every
// reload (the CLI's budget set bumps the revision counter).
type budgets struct {
	byFolder atomic.Pointer[map[string]store.Budget]
}

// loadBudgets re-reads the budgets and lets the chats a budget held run
// when it no longer holds them (an operator raised or removed the cap).
func (g *Gateway) loadBudgets(ctx context.Context) error {
	bs, err := g.st.Budgets(ctx)
	if err != nil {
		return err
	}
	m := make(map[string]store.Budget, len(bs))
	for _, b := range bs {
		m[b.Folder] = b
	}
	g.spend.budgets.byFolder.Store(&m)
	folders, err := g.st.PendingFolders(ctx)
	if err != nil {
		return err
	}
	now := g.opt.Now()
	_, day, _, month := control.Windows(now.In(g.zone))
	for _, f := range folders {
		if hold, err := g.budgetHold(ctx, f, now); err != nil || hold != nil {
			continue
		}
		n, err := g.st.ReleaseChats(ctx, f, day, month)
		if err != nil {
			return err
		}
		if n > 0 {
			g.log.Info("budget no longer holds the group's turns", "folder", f)
			g.workers.kick(f)
		}
	}
	return nil
}

// hold is a budget that stops a group's turns: whose, which window, until when.
type hold struct {
	owner  string  // the folder whose budget it is (the group or an ancestor)
	window string  // daily | monthly
	capUSD float64 // the cap
	spent  float64 // spent in the window by owner's subtree
	until  time.Time
}

// budgetHold reports the budget, of folder or an ancestor, that is used up
// now; nil when none is. Groups without budgets above them cost no query.
func (g *Gateway) budgetHold(ctx context.Context, folder string, now time.Time) (*hold, error) {
	mp := g.spend.budgets.byFolder.Load()
	if mp == nil || len(*mp) == 0 {
		return nil, nil
	}
	dayStart, dayEnd, monthStart, monthEnd := control.Windows(now.In(g.zone))
	var found *hold
	for owner := folder; owner != ""; owner = groups.Parent(owner) {
		b, ok := (*mp)[owner]
		if !ok {
			continue
		}
		if b.MonthlyUSD > 0 {
			spent, err := g.st.Spent(ctx, owner, monthStart)
			if err != nil {
				return nil, err
			}
			if spent >= b.MonthlyUSD {
				return &hold{owner: owner, window: "monthly", capUSD: b.MonthlyUSD, spent: spent, until: monthEnd}, nil
			}
		}
		if b.DailyUSD > 0 && found == nil {
			spent, err := g.st.Spent(ctx, owner, dayStart)
			if err != nil {
				return nil, err
			}
			if spent >= b.DailyUSD {
				found = &hold{owner: owner, window: "daily", capUSD: b.DailyUSD, spent: spent, until: dayEnd}
			}
		}
	}
	return found, nil
}

// holdForBudget, at the start of a turn, stops it when a budget is used
// up: a task's run is skipped with the reason; any other batch's chat
// waits (its messages stay stored and queued) until the window ends or
// the cap is raised, and the chat is told once per window. It reports
// whether the turn is not to run.
func (g *Gateway) holdForBudget(ctx context.Context, b store.Batch) bool {
	h, err := g.budgetHold(ctx, b.Folder, g.opt.Now())
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("check budget; the turn runs", "folder", b.Folder, "err", err)
		}
		return false
	}
	if h == nil {
		return false
	}
	reason := h.describe(b.Folder)
	first := b.Items[0]
	if first.Trigger == store.TriggerTask {
		g.log.Warn("task run skipped: budget used up", "folder", b.Folder, "task", first.TaskID, "budget_of", h.owner, "window", h.window)
		if err := g.st.SkipBatch(ctx, b, "skipped: "+reason); err != nil {
			g.log.Error("record skipped task run", "folder", b.Folder, "err", err)
		}
		return true
	}
	g.log.Warn("turns held: budget used up", "folder", b.Folder, "jid", b.ChatJID, "budget_of", h.owner, "window", h.window,
		"until", h.until.Format(time.RFC3339))
	// The key makes the notice one per chat, group and window, across restarts.
	key := fmt.Sprintf("budget/%s/%s/%s/%s/%d", h.window, b.Folder, b.ChatJID, b.Topic, h.until.Unix())
	notice := "This group's " + reason + ". Messages are kept and answered then, or as soon as an operator raises the cap."
	if err := g.holdChat(ctx, b, h.until, time.Until(h.until), notice, key); err != nil {
		g.log.Error("hold chat for budget", "folder", b.Folder, "jid", b.ChatJID, "err", err)
		return false
	}
	return true
}

// describe says which budget holds folder and when it resumes:
// "daily budget ($5.00, $5.12 spent) is used up; it resumes at 00:00 Europe/Berlin".
func (h *hold) describe(folder string) string {
	whose := ""
	if h.owner != folder {
		whose = " (set on " + h.owner + ", covering its subgroups)"
	}
	when := h.until.Format("15:04") + " " + h.until.Location().String()
	if h.window == "monthly" {
		when = h.until.Format("15:04 on 2 January") + " " + h.until.Location().String()
	}
	return strings.TrimSpace(fmt.Sprintf("%s budget%s of %s is used up (%s spent); it resumes at %s", h.window, whose, dollars(h.capUSD), dollars(h.spent), when))
}

// dollars formats US dollars: cents from a dollar up, four decimals below
// (a cap of $0.03 and $0.0333 spent must not both read $0.03).
func dollars(f float64) string {
	if f >= 1 || f == 0 {
		return fmt.Sprintf("$%.2f", f)
	}
	return fmt.Sprintf("$%.4f", f)
}

// Budgets implements mcpserver.Spend.
func (b mcpBackend) Budgets(ctx context.Context, folder string) ([]mcpserver.BudgetInfo, error) {
	all, err := b.g.st.Groups(ctx)
	if err != nil {
		return nil, err
	}
	var folders []string
	for _, f := range all {
		if folder == "" || groups.InSubtree(folder, f) {
			folders = append(folders, f)
		}
	}
	rep, err := control.SpendReport(ctx, b.g.st, folders, b.g.opt.Now().In(b.g.zone))
	if err != nil {
		return nil, err
	}
	out := make([]mcpserver.BudgetInfo, len(rep))
	for i, r := range rep {
		out[i] = mcpserver.BudgetInfo{Folder: r.Folder, TodayUSD: r.TodayUSD, MonthUSD: r.MonthUSD, DailyUSD: r.DailyUSD,
			MonthlyUSD: r.MonthlyUSD, UsedUp: r.Over()}
	}
	return out, nil
}

// SetBudget implements mcpserver.Spend; it reloads so that the change applies now.
func (b mcpBackend) SetBudget(ctx context.Context, folder string, daily, monthly float64) error {
	if ok, err := b.g.st.GroupExists(ctx, folder); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("folder %s: no such group", folder)
	}
	if daily == 0 && monthly == 0 {
		if _, err := b.g.st.DeleteBudget(ctx, folder); err != nil {
			return err
		}
	} else {
		if err := control.CheckBudget(daily, monthly); err != nil {
			return err
		}
		if err := b.g.st.SetBudget(ctx, store.Budget{Folder: folder, DailyUSD: daily, MonthlyUSD: monthly}); err != nil {
			return err
		}
	}
	return b.g.reload(ctx)
}

// Zone is the operator's zone (config timezone): budget days and months,
// and the status page's spend, follow it.
func (g *Gateway) Zone() *time.Location { return g.zone }
