package adaptertest

import (
	"net"
	"net/http"
	"sync"
)

// Conns counts a server's connections through its http.Server.ConnState,
// for the tests of a listener's connection cap (adapters.LimitListener):
// how many were accepted, and the most open at once.
type Conns struct {
	mu                   sync.Mutex
	open, peak, accepted int
	changed              chan struct{}
}

// NewConns returns a counter whose Changed channel is told of each state
// change (dropped when nobody reads it).
func NewConns() *Conns { return &Conns{changed: make(chan struct{}, 100)} }

// State is the ConnState hook.
func (c *Conns) State(_ net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch st {
	case http.StateNew:
		c.open++
		c.accepted++
		c.peak = max(c.peak, c.open)
	case http.StateClosed, http.StateHijacked:
		c.open--
	}
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Counts is how many connections were accepted and the most open at once.
func (c *Conns) Counts() (accepted, peak int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted, c.peak
}

// Changed is told of each state change.
func (c *Conns) Changed() <-chan struct{} { return c.changed }
