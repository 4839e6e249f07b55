package gateway

import (
	"context"
	"fmt"
	"log/slog"

	"switchboard/groups"
	"switchboard/routing"
	"switchboard/scheduler"
	"switchboard/store"
)

// ownerStore is what the owner guard reads and records.
type ownerStore interface {
	Task(ctx context.Context, id int64) (scheduler.Task, error)
	SkipBatch(ctx context.Context, b store.Batch, reason string) error
}

// ownerGuard skips the run of a group's task whose chat its subtree no
// longer owns. schedule_task lets a group answer only in a chat its
// subtree owns (CONTRACT §7), but a task runs for months: once the routes
// give the chat to another group, the task's turn would still post there
// (its stdout reply), where the group's own send is refused. The
// operator's tasks (switchboard task add, or a tier-0 group's) answer
// where they were told.
type ownerGuard struct {
	st       ownerStore
	table    func() *routing.Table
	operator groups.Folder
	log      *slog.Logger
}

func (o ownerGuard) check(ctx context.Context, c turnCandidate) (verdict, error) {
	b := c.batch
	first := b.Items[0]
	if first.Trigger != store.TriggerTask || groups.Tier(b.Folder, o.operator) == 0 {
		return verdictRun, nil
	}
	t, err := o.st.Task(ctx, first.TaskID)
	if err != nil {
		return verdictRun, fmt.Errorf("read task %d to check its chat's owner; the run goes on: %w", first.TaskID, err)
	}
	if t.CreatedBy == "operator" || t.CreatedBy != "" && groups.Tier(groups.Folder(t.CreatedBy), o.operator) == 0 {
		return verdictRun, nil
	}
	owner, owned := o.table().Owner(b.ChatJID, b.Topic)
	if owned && b.Folder.Contains(owner) {
		return verdictRun, nil
	}
	reason := fmt.Sprintf("skipped: chat %s has no owner now (no route matches it)", b.ChatJID)
	if owned {
		reason = fmt.Sprintf("skipped: chat %s now belongs to group %s, outside %s's subtree; cancel the task, or route the chat back", b.ChatJID, owner, b.Folder)
	}
	o.log.Warn("task run skipped: its chat left the group", "folder", b.Folder, "task", first.TaskID, "jid", b.ChatJID, "owner", owner)
	if err := o.st.SkipBatch(ctx, b, reason); err != nil {
		return verdictHeld, fmt.Errorf("record skipped task run: %w", err)
	}
	return verdictHeld, nil
}
