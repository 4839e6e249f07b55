package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// budgetStore is what the budget guard needs of the store.
type budgetStore interface {
	Budgets(ctx context.Context) ([]store.Budget, error)
	PendingFolders(ctx context.Context) ([]groups.Folder, error)
	ReleaseChats(ctx context.Context, folder groups.Folder, untils ...time.Time) (int64, error)
	Spent(ctx context.Context, folder groups.Folder, since time.Time) (float64, error)
	SkipBatch(ctx context.Context, b store.Batch, reason string) error
	SkipTaskRuns(ctx context.Context, folder groups.Folder, reason string) (int64, error)
}

// budgetGuard holds the turns of a group whose budget (its own or an
// ancestor's) is used up. It keeps a copy of the stored budgets, replaced
// on every reload (the CLI's budget set bumps the revision counter).
type budgetGuard struct {
	byFolder atomic.Pointer[map[groups.Folder]store.Budget]
	st       budgetStore
	now      func() time.Time
	zone     *time.Location // budget days and months
	holder   chatHolder
	kick     func(folder groups.Folder)
	log      *slog.Logger
}

// load re-reads the budgets and lets the chats a budget held run when it
// no longer holds them (an operator raised or removed the cap).
func (bg *budgetGuard) load(ctx context.Context) error {
	bs, err := bg.st.Budgets(ctx)
	if err != nil {
		return err
	}
	m := make(map[groups.Folder]store.Budget, len(bs))
	for _, b := range bs {
		m[b.Folder] = b
	}
	bg.byFolder.Store(&m)
	folders, err := bg.st.PendingFolders(ctx)
	if err != nil {
		return err
	}
	now := bg.now()
	_, day, _, month := ops.Windows(now.In(bg.zone))
	for _, f := range folders {
		if hold, err := bg.hold(ctx, f, now); err != nil || hold != nil {
			continue
		}
		n, err := bg.st.ReleaseChats(ctx, f, day, month)
		if err != nil {
			return err
		}
		if n > 0 {
			bg.log.Info("budget no longer holds the group's turns", "folder", f)
			bg.kick(f)
		}
	}
	return nil
}

// hold reports the budget, of folder or an ancestor, that is used up now;
// nil when none is (ops.BudgetHold on the loaded budgets).
func (bg *budgetGuard) hold(ctx context.Context, folder groups.Folder, now time.Time) (*ops.Hold, error) {
	mp := bg.byFolder.Load()
	if mp == nil {
		return nil, nil
	}
	return ops.BudgetHold(ctx, bg.st.Spent, *mp, folder, now.In(bg.zone))
}

// check, at the start of a turn, stops it when a budget is used up: a
// task's run is skipped with the reason; any other batch's chat waits (its
// messages stay stored and queued) until the window ends or the cap is
// raised, and the chat is told once per window. A budget that cannot be
// read lets the turn run.
func (bg *budgetGuard) check(ctx context.Context, c turnCandidate) (verdict, error) {
	b := c.batch
	h, err := bg.hold(ctx, b.Folder, bg.now())
	if err != nil {
		if ctx.Err() != nil {
			return verdictRun, nil
		}
		return verdictRun, fmt.Errorf("check budget; the turn runs: %w", err)
	}
	if h == nil {
		return verdictRun, nil
	}
	reason := describeHold(h, b.Folder)
	first := b.Items[0]
	if first.Trigger == store.TriggerTask {
		bg.log.Warn("task run skipped: budget used up", "folder", b.Folder, "task", first.TaskID, "budget_of", h.Owner, "window", h.Window)
		if err := bg.st.SkipBatch(ctx, b, "skipped: "+reason); err != nil {
			return verdictHeld, fmt.Errorf("record skipped task run: %w", err)
		}
		return verdictHeld, nil
	}
	bg.log.Warn("turns held: budget used up", "folder", b.Folder, "jid", b.ChatJID, "budget_of", h.Owner, "window", h.Window,
		"until", h.Until.Format(time.RFC3339))
	// The key makes the notice one per chat, group and window, across restarts.
	key := fmt.Sprintf("budget/%s/%s/%s/%s/%d", h.Window, b.Folder, b.ChatJID, b.Topic, h.Until.Unix())
	notice := "This group's " + reason + ". Messages are kept and answered then, or as soon as an operator raises the cap."
	if err := bg.holder.hold(ctx, b, h.Until, time.Until(h.Until), notice, key); err != nil {
		return verdictRun, fmt.Errorf("hold chat for budget: %w", err)
	}
	if bg.releasedAsRaised(ctx, b.Folder, h.Until) {
		return verdictHeld, nil // it runs again, with the new budgets
	}
	// Task runs queued in the held chat would wait behind its messages
	// and all run once the cap is raised: they are skipped now.
	bg.skipTaskRuns(ctx, b.Folder, h, reason)
	return verdictHeld, nil
}

// releasedAsRaised lets folder's chats held until until run at once, and
// reports true, when the budgets loaded now no longer hold it: a reload
// that raised the cap while check held a chat on the budgets it had read
// released the holds stored then, not the one stored after it. The reload
// stores the new budgets before it releases, and check looks at them
// after it holds: one of the two sees the other.
func (bg *budgetGuard) releasedAsRaised(ctx context.Context, folder groups.Folder, until time.Time) bool {
	if h, err := bg.hold(ctx, folder, bg.now()); err != nil || h != nil {
		return false
	}
	n, err := bg.st.ReleaseChats(ctx, folder, until)
	if err != nil {
		bg.log.Error("release a chat held as the cap was raised", "folder", folder, "err", err)
		return false
	}
	if n > 0 {
		bg.log.Info("budget raised as a chat was held; it runs", "folder", folder)
		bg.kick(folder)
	}
	return true
}

// skipHeld skips folder's queued task runs when a budget holds it now:
// the scheduler calls it as runs fall due, since a run queued in a chat
// whose messages a budget holds never reaches check.
func (bg *budgetGuard) skipHeld(ctx context.Context, folder groups.Folder) {
	h, err := bg.hold(ctx, folder, bg.now())
	if err != nil {
		if ctx.Err() == nil {
			bg.log.Error("check budget of a fired task", "folder", folder, "err", err)
		}
		return
	}
	if h != nil {
		bg.skipTaskRuns(ctx, folder, h, describeHold(h, folder))
	}
}

// skipTaskRuns records folder's queued task runs as skipped because the
// budget hold h (described by reason) holds the group.
func (bg *budgetGuard) skipTaskRuns(ctx context.Context, folder groups.Folder, h *ops.Hold, reason string) {
	n, err := bg.st.SkipTaskRuns(ctx, folder, "skipped: "+reason)
	if err != nil {
		bg.log.Error("record skipped task runs", "folder", folder, "err", err)
		return
	}
	if n > 0 {
		bg.log.Warn("task runs skipped: budget used up", "folder", folder, "runs", n, "budget_of", h.Owner, "window", h.Window)
	}
}

// describeHold says which budget holds folder and when it resumes:
// "daily budget ($5.00, $5.12 spent) is used up; it resumes at 00:00 Europe/Berlin".
func describeHold(h *ops.Hold, folder groups.Folder) string {
	whose := ""
	if h.Owner != folder {
		whose = " (set on " + string(h.Owner) + ", covering its subgroups)"
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
