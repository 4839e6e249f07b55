package ops

import (
	"context"
	"errors"
	"fmt"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/store"
)

// Actor is who makes a change: the operator (tier 0: the CLI, or the
// operator folder's agent), whom no check of authority stops, or a group's
// agent through its MCP tools, which may change only its own subtree and
// route only chats that subtree owns (routing.Table.CheckAdd).
type Actor struct {
	Folder groups.Folder
	Tier   int
}

// Operator is the CLI's actor.
var Operator = Actor{Tier: 0}

// NewGroup is a group to create, and optionally one chat to route to it.
type NewGroup struct {
	Folder groups.Folder
	// Pin, when not "", is a chat routed to the new group ahead of every
	// existing route (PinRoute).
	Pin adapters.JID
	// Exe is the switchboard binary that the folder's .mcp.json runs as
	// the MCP bridge.
	Exe string
	// Orphan allows a group whose parent group does not exist (the
	// operator's CLI, which warns, as a config seed does); otherwise that
	// is ErrNoGroup.
	Orphan bool
}

// AddGroup creates a group for by: its folder on disk (layout.Setup), its
// row, and the route of req.Pin. It is what `switchboard group add [--jid]`
// and the register_group tool both do. Everything is checked before
// anything is created, so a refusal leaves nothing behind: a bad folder
// (groups.ErrInvalidFolder), a group that exists (store.ErrExists), one
// that is not a direct child of by unless by is the operator (ErrNotChild),
// a missing parent (ErrNoGroup), a pinned chat that is no JID or that by
// may not route (routing.ErrForbidden). When the group was stored but its
// route was not, the error says so and the group is kept.
func AddGroup(ctx context.Context, st *store.Store, layout groups.Layout, by Actor, req NewGroup) (*routing.Route, error) {
	folder := req.Folder
	if err := folder.Validate(); err != nil {
		return nil, err
	}
	if ok, err := st.GroupExists(ctx, folder); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("group %s %w", folder, store.ErrExists)
	}
	parent := folder.Parent()
	if by.Tier != 0 && parent != by.Folder {
		return nil, fmt.Errorf("group %s is %w of %s; create %s/<name>", folder, ErrNotChild, by.Folder, by.Folder)
	}
	if parent != "" && !req.Orphan {
		if ok, err := st.GroupExists(ctx, parent); err != nil {
			return nil, err
		} else if !ok {
			return nil, fmt.Errorf("parent group %s %w", parent, ErrNoGroup)
		}
	}
	var pin *routing.Route
	if req.Pin != "" {
		r, err := pinRoute(ctx, st, by, folder, req.Pin)
		if err != nil {
			return nil, err
		}
		pin = &r
	}
	if err := layout.Setup(folder, req.Exe); err != nil {
		return nil, fmt.Errorf("set up folder: %w", err)
	}
	if err := st.AddGroup(ctx, folder); err != nil {
		if errors.Is(err, store.ErrExists) { // added meanwhile
			return nil, fmt.Errorf("group %s %w", folder, store.ErrExists)
		}
		return nil, err
	}
	if pin == nil {
		return nil, nil
	}
	r, err := AddRoute(ctx, st, *pin)
	if err != nil {
		return nil, fmt.Errorf("group %s was created, but routing %s to it failed: %w", folder, req.Pin, err)
	}
	return &r, nil
}
