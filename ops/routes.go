package ops

import (
	"context"
	"fmt"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/store"
)

// AddRoute validates r and stores it; its target must be a group
// (ErrNoGroup). It is the one way a route is added: `switchboard route
// add`, the add_route tool (after the tool checked the caller's authority
// on the live table) and PinRoute. A running gateway picks it up within its
// poll interval; the MCP side reloads at once.
func AddRoute(ctx context.Context, st *store.Store, r routing.Route) (routing.Route, error) {
	r = r.Normalize()
	if err := r.ValidateNew(); err != nil {
		return routing.Route{}, err
	}
	if ok, err := st.GroupExists(ctx, r.Target); err != nil {
		return routing.Route{}, err
	} else if !ok {
		return routing.Route{}, fmt.Errorf("target group %s %w", r.Target, ErrNoGroup)
	}
	return st.AddRoute(ctx, r)
}

// PinRoute routes one chat to folder, ahead of every existing route
// (routing.Table.AheadSeq) so that a catch-all added earlier does not
// shadow it, if by may route that chat (routing.Table.CheckAdd on the
// stored routes).
func PinRoute(ctx context.Context, st *store.Store, by Actor, folder groups.Folder, chat adapters.JID) (routing.Route, error) {
	r, err := pinRoute(ctx, st, by, folder, chat)
	if err != nil {
		return routing.Route{}, err
	}
	return AddRoute(ctx, st, r)
}

// pinRoute builds and checks the route PinRoute adds, without storing it.
func pinRoute(ctx context.Context, st *store.Store, by Actor, folder groups.Folder, chat adapters.JID) (routing.Route, error) {
	if _, err := adapters.ParseJID(string(chat)); err != nil {
		return routing.Route{}, err
	}
	t, err := routing.Load(ctx, st)
	if err != nil {
		return routing.Route{}, err
	}
	r := routing.Route{Match: map[string]string{routing.KeyChatJID: string(chat)}, Target: folder, Mode: routing.Trigger, Seq: t.AheadSeq()}
	if err := t.CheckAdd(by.Folder, by.Tier, r); err != nil {
		return routing.Route{}, err
	}
	return r, nil
}

// DeleteRoute deletes route id and returns it as it was; a route that does
// not exist is an error wrapping store.ErrNotFound. `switchboard route rm`
// and the delete_route tool (after its authority check) both go through
// here.
func DeleteRoute(ctx context.Context, st *store.Store, id int64) (routing.Route, error) {
	return st.DeleteRoute(ctx, id)
}
