package routing

import (
	"slices"

	"switchboard/adapters"
	"switchboard/groups"
)

// targets indexes the routes by target, for OwnedChats: the chats each
// target's routes pin, and the targets that have a route pinning none.
type targets struct {
	pinned   map[groups.Folder][]string // target → chat JIDs its routes pin
	unpinned map[groups.Folder]bool     // targets with a route that pins no chat
}

// add files route r, which pins chat ("" for none).
func (ts *targets) add(r *Route, chat string) {
	if chat == "" {
		ts.unpinned[r.Target] = true
		return
	}
	ts.pinned[r.Target] = append(ts.pinned[r.Target], chat)
}

// OwnedChats lists the chats whose owner (Owner, topic "") is within's
// subtree, when the routes alone can tell: when every route whose target
// is in the subtree pins its chat (a literal chat_jid, or a literal
// platform and room), the subtree can own only those chats. Its cost grows
// with the routes that pin a chat to the subtree and the number of
// targets, not with the chats known. ok is false when a route targeting
// the subtree matches chats by a glob: then any chat may be owned there,
// and the caller must ask Owner about each chat it knows.
func (t *Table) OwnedChats(within groups.Folder) (chats []adapters.JID, ok bool) {
	chats = []adapters.JID{}
	if t == nil {
		return chats, true
	}
	for target := range t.targets.unpinned {
		if within.Contains(target) {
			return nil, false
		}
	}
	var cands []string
	for target, pinned := range t.targets.pinned {
		if within.Contains(target) {
			cands = append(cands, pinned...)
		}
	}
	slices.Sort(cands)
	for _, c := range slices.Compact(cands) {
		// An earlier route may give the chat to a folder elsewhere.
		if owner, ok := t.Owner(adapters.JID(c), ""); ok && within.Contains(owner) {
			chats = append(chats, adapters.JID(c))
		}
	}
	return chats, true
}
