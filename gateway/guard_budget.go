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

// budgetHold reports the budget, of folder or an ancestor, that is used up
// now; nil when none is (control.BudgetHold on the loaded budgets).
func (g *Gateway) budgetHold(ctx context.Context, folder string, now time.Time) (*control.Hold, error) {
	mp := g.spend.budgets.byFolder.Load()
	if mp == nil {
		return nil, nil
	}
	return control.BudgetHold(ctx, g.st.Spent, *mp, folder, now.In(g.zone))
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
	reason := describeHold(h, b.Folder)
	first := b.Items[0]
	if first.Trigger == store.TriggerTask {
		g.log.Warn("task run skipped: budget used up", "folder", b.Folder, "task", first.TaskID, "budget_of", h.Owner, "window", h.Window)
		if err := g.st.SkipBatch(ctx, b, "skipped: "+reason); err != nil {
			g.log.Error("record skipped task run", "folder", b.Folder, "err", err)
		}
		return true
	}
	g.log.Warn("turns held: budget used up", "folder", b.Folder, "jid", b.ChatJID, "budget_of", h.Owner, "window", h.Window,
		"until", h.Until.Format(time.RFC3339))
	// The key makes the notice one per chat, group and window, across restarts.
	key := fmt.Sprintf("budget/%s/%s/%s/%s/%d", h.Window, b.Folder, b.ChatJID, b.Topic, h.Until.Unix())
	notice := "This group's " + reason + ". Messages are kept and answered then, or as soon as an operator raises the cap."
	if err := g.holdChat(ctx, b, h.Until, time.Until(h.Until), notice, key); err != nil {
		g.log.Error("hold chat for budget", "folder", b.Folder, "jid", b.ChatJID, "err", err)
		return false
	}
	// Task runs queued in the held chat would wait behind its messages
	// and all run once the cap is raised: they are skipped now.
	g.skipTaskRuns(ctx, b.Folder, h, reason)
	return true
}

// skipHeldTasks skips folder's queued task runs when a budget holds it
// now: the scheduler calls it as runs fall due, since a run queued in a
// chat whose messages a budget holds never reaches holdForBudget.
func (g *Gateway) skipHeldTasks(ctx context.Context, folder string) {
	h, err := g.budgetHold(ctx, folder, g.opt.Now())
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("check budget of a fired task", "folder", folder, "err", err)
		}
		return
	}
	if h != nil {
		g.skipTaskRuns(ctx, folder, h, describeHold(h, folder))
	}
}

// skipTaskRuns records folder's queued task runs as skipped because the
// budget hold h (described by reason) holds the group.
func (g *Gateway) skipTaskRuns(ctx context.Context, folder string, h *control.Hold, reason string) {
	n, err := g.st.SkipTaskRuns(ctx, folder, "skipped: "+reason)
	if err != nil {
		g.log.Error("record skipped task runs", "folder", folder, "err", err)
		return
	}
	if n > 0 {
		g.log.Warn("task runs skipped: budget used up", "folder", folder, "runs", n, "budget_of", h.Owner, "window", h.Window)
	}
}

// describeHold says which budget holds folder and when it resumes:
// "daily budget ($5.00, $5.12 spent) is used up; it resumes at 00:00 Europe/Berlin".
func describeHold(h *control.Hold, folder string) string {
	whose := ""
	if h.Owner != folder {
		whose = " (set on " + h.Owner + ", covering its subgroups)"
	}
	when := h.Until.Format("15:04") + " " + h.Until.Location().String()
	if h.Window == "monthly" {
		when = h.Until.Format("15:04 on 2 January") + " " + h.Until.Location().String()
	}
	return strings.TrimSpace(fmt.Sprintf("%s budget%s of %s is used up (%s spent); it resumes at %s", h.Window, whose, dollars(h.CapUSD), dollars(h.SpentUSD), when))
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
