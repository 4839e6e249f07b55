package ops

import (
	"context"
	"fmt"

	"switchboard/groups"
	"switchboard/store"
)

// SetBudget sets folder's caps in US dollars (CheckBudget); both caps 0
// removes its budget. The group must exist (ErrNoGroup). `switchboard
// budget set` and the set_budget tool both go through here; a running
// gateway applies the change within its poll interval, at once through MCP.
func SetBudget(ctx context.Context, st *store.Store, folder groups.Folder, daily, monthly float64) error {
	if ok, err := st.GroupExists(ctx, folder); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("group %s %w", folder, ErrNoGroup)
	}
	if daily == 0 && monthly == 0 {
		_, err := st.DeleteBudget(ctx, folder)
		return err
	}
	if err := CheckBudget(daily, monthly); err != nil {
		return err
	}
	return st.SetBudget(ctx, store.Budget{Folder: folder, DailyUSD: daily, MonthlyUSD: monthly})
}
