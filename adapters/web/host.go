package web

import (
	"net"
	"net/netip"
	"sync"
	"time"
)

// hostAddrs knows this machine's addresses: a request from one of them (or
// from loopback) was posted from the gateway's host, where agents with
// network run too (adapters.Inbound.FromHost).
type hostAddrs struct {
	mu      sync.Mutex
	addrs   map[netip.Addr]bool
	fetched time.Time
	// list returns the machine's interface addresses; nil is
	// net.InterfaceAddrs.
	list func() ([]net.Addr, error)
}

// hostAddrsTTL is how long a lookup of the interface addresses is used.
const hostAddrsTTL = time.Minute

// fromHost reports whether a request's RemoteAddr is this machine.
func (a *Adapter) fromHost(remote string) bool {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	ip := ap.Addr().Unmap()
	if ip.IsLoopback() {
		return true
	}
	return a.host.has(ip)
}

func (h *hostAddrs) has(ip netip.Addr) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.addrs == nil || time.Since(h.fetched) > hostAddrsTTL {
		list := h.list
		if list == nil {
			list = net.InterfaceAddrs
		}
		addrs, err := list()
		if err != nil && h.addrs != nil {
			return h.addrs[ip] // keep the last good lookup
		}
		h.addrs, h.fetched = map[netip.Addr]bool{}, time.Now()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if p, ok := netip.AddrFromSlice(n.IP); ok {
					h.addrs[p.Unmap()] = true
				}
			}
		}
	}
	return h.addrs[ip]
}
