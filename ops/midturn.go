package ops

import (
	"context"
	"fmt"
	"slices"

	"switchboard/groups"
	"switchboard/store"
)

// MidTurnModes are the values of agent.mid_turn and a group's mid_turn
// (CONTRACT §15 "Messages during a turn").
var MidTurnModes = []string{"queue", "steer", "interrupt"}

// CheckMidTurn reports whether mode is one of MidTurnModes.
func CheckMidTurn(mode string) error {
	if !slices.Contains(MidTurnModes, mode) {
		return fmt.Errorf("%w %q; want queue, steer or interrupt", ErrBadMidTurn, mode)
	}
	return nil
}

// SetMidTurn sets folder's own mid_turn ("" takes agent.mid_turn again) on
// behalf of actor: the operator any group's, a tier-1 group its own and
// its subgroups'. `switchboard group set --mid-turn` and the set_mid_turn
// tool both go through here; the gateway reads it at each message.
func SetMidTurn(ctx context.Context, st *store.Store, actor Actor, folder groups.Folder, mode string) error {
	if mode != "" {
		if err := CheckMidTurn(mode); err != nil {
			return err
		}
	}
	if actor.Tier != 0 && (actor.Tier > 1 || !actor.Folder.Contains(folder)) {
		return fmt.Errorf("set mid_turn of %s: %w (a tier-1 group sets its own and its subgroups')", folder, ErrNotYours)
	}
	if ok, err := st.GroupExists(ctx, folder); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("group %s %w", folder, ErrNoGroup)
	}
	return st.SetGroupMidTurn(ctx, folder, mode)
}
