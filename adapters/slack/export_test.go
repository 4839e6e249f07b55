package slack

import (
	"net"
	"net/http"
	"time"
)

// SetConnStateHook makes the Events API server report its connections'
// states to f (set before Run).
func (a *Adapter) SetConnStateHook(f func(net.Conn, http.ConnState)) { a.connState = f }

// Held is how long a 429 still holds every Web API call of the adapter.
func (a *Adapter) Held() time.Duration { return a.tiers.held.Left() }
