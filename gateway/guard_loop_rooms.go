package gateway

import (
	"sync"

	"switchboard/adapters"
)

// maxOldRooms bounds oldRooms; past it the loop guard asks the store.
const maxOldRooms = 100_000

// oldRooms remembers the web rooms known to hold a stored message, so that
// the loop guard's question at Deliver (is this post opening a new room?)
// reads the store only for rooms it has not seen: while a group's turn
// runs, every post from this machine asked it (a quarter of the cost of
// storing the post). A stored message is never removed (a deleted one is
// marked), so a room once old stays old.
type oldRooms struct {
	mu sync.Mutex
	m  map[adapters.JID]struct{}
}

func (o *oldRooms) has(chat adapters.JID) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.m[chat]
	return ok
}

func (o *oldRooms) add(chat adapters.JID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[adapters.JID]struct{}{}
	}
	if len(o.m) < maxOldRooms {
		o.m[chat] = struct{}{}
	}
}
