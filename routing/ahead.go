package routing

import "math"

// AheadSeq is the seq that puts a new route before every route in t: one
// below the lowest seq and below 0 (so also before routes added later with
// the default seq 0); 0 in an empty table. A route pinned to one chat
// without a seq given goes there (`switchboard group add --jid`,
// register_group, add_route).
func (t *Table) AheadSeq() int {
	if t.Len() == 0 {
		return 0
	}
	lowest := min(t.entries[0].route.Seq, 0)
	if lowest == math.MinInt {
		return lowest // one below would wrap to the highest seq and go last
	}
	return lowest - 1
}
