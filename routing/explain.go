package routing

import (
	"fmt"
	"switchboard/groups"
)

// Rejection is a route that did not match, and why.
type Rejection struct {
	Route Route
	// Reason names the first key that failed, its value and the glob:
	// `platform "telegram" does not match "web"`.
	Reason string
}

// Explanation says how a message was routed.
type Explanation struct {
	Matched bool
	Route   Route // the winner when Matched
	Folder  groups.Folder
	Mode    Mode
	// Rejected lists every route ordered before the winner (all routes when
	// none matched), in order, with the reason it did not match.
	Rejected []Rejection
	// Owner is the owner of the message's chat and topic, Owner(ChatJID,
	// Topic); "" when none. It may differ from Folder, for example when a
	// sender-specific or mention-only route wins.
	Owner groups.Folder
}

// Explain routes m like Resolve and also says why each earlier route did not
// match. It is a diagnostic and scans the routes in order.
func (t *Table) Explain(m Message) Explanation {
	v := messageValues(m)
	var x Explanation
	if t == nil {
		return x
	}
	for i := range t.entries {
		e := &t.entries[i]
		k := e.mismatch(&v, false)
		if k < 0 {
			x.Matched, x.Route, x.Folder, x.Mode = true, e.route, e.route.Target, e.route.Mode
			break
		}
		x.Rejected = append(x.Rejected, Rejection{
			Route:  e.route,
			Reason: fmt.Sprintf("%s %q does not match %q", MatchKeys[k], v[k], e.globs[k].src),
		})
	}
	x.Owner, _ = t.Owner(m.ChatJID, m.Topic)
	return x
}
