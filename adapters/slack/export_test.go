package slack

import (
	"net"
	"net/http"
)

// SetConnStateHook makes the Events API server report its connections'
// states to f (set before Run).
func (a *Adapter) SetConnStateHook(f func(net.Conn, http.ConnState)) { a.connState = f }
