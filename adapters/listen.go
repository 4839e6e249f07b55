package adapters

// What the HTTP listeners share (the Slack Events API, the web chat, and in
// cmd and gateway the admin listener and the MCP HTTP endpoint): a cap on
// open connections and the Host check against DNS rebinding. No I/O of its
// own: it wraps the listener the caller opened.

import (
	"net"
	"net/http"
	"strings"
	"sync"
)

// LimitListener returns ln accepting at most max connections at once;
// Accept waits for one to end (as golang.org/x/net/netutil.LimitListener
// does). A slot is given back when the server reports the connection
// closed or hijacked, so serve it with ConnState set to LimitConnState:
// the server then never reports more than max open. It may be wrapped
// (tls.NewListener): the conn the server reports is unwrapped.
func LimitListener(ln net.Listener, max int) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), done: make(chan struct{})}
}

type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn holds one of the listener's slots until the server is done
// with it.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// LimitConnState is the ConnState of a server on a LimitListener: it calls
// next (nil for none), then gives a finished connection's slot back.
func LimitConnState(next func(net.Conn, http.ConnState)) func(net.Conn, http.ConnState) {
	return func(c net.Conn, st http.ConnState) {
		if next != nil {
			next(c, st)
		}
		if st != http.StateClosed && st != http.StateHijacked {
			return
		}
		for c != nil {
			if lc, ok := c.(*limitConn); ok {
				lc.once.Do(lc.release)
				return
			}
			w, ok := c.(interface{ NetConn() net.Conn }) // *tls.Conn
			if !ok {
				return
			}
			c = w.NetConn()
		}
	}
}

// LoopbackHost reports whether a Host header names this machine: localhost
// or a loopback address, with or without a port. A listener bound to
// loopback refuses other names: a page whose own name an attacker resolves
// to 127.0.0.1 (DNS rebinding) would otherwise reach it from the browser.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
