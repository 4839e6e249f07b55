package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/internal/testwait"
)

// stallProxy forwards TCP connections to a NATS server and, while stalled,
// holds everything either side sends: a server that accepts requests and
// never answers them, as a stuck one does. A client's bytes that contain
// the pattern given to before reach the server only after its func ran.
type stallProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
	conns   []net.Conn
	pattern []byte
	hook    func()
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln}
	p.cond = sync.NewCond(&p.mu)
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go p.pipe(s, c, true)
			go p.pipe(c, s, false)
		}
	}()
	return p
}

func (p *stallProxy) url() string { return "nats://" + p.ln.Addr().String() }

// before runs hook once, before the first bytes a client sends that
// contain pattern are forwarded to the server.
func (p *stallProxy) before(pattern string, hook func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pattern, p.hook = []byte(pattern), hook
}

func (p *stallProxy) pipe(dst, src net.Conn, up bool) {
	buf := make([]byte, 32<<10)
	var tail []byte // the end of what came before: a pattern split between reads
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.stalled {
			p.cond.Wait()
		}
		var hook func()
		if up && p.hook != nil {
			seen := append(tail, buf[:n]...)
			if bytes.Contains(seen, p.pattern) {
				hook, p.hook = p.hook, nil
			}
			tail = bytes.Clone(seen[max(0, len(seen)-len(p.pattern)):])
		}
		p.mu.Unlock()
		if hook != nil {
			hook()
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				dst.Close()
			}
			return
		}
	}
}

func (p *stallProxy) stall(on bool) {
	p.mu.Lock()
	p.stalled = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *stallProxy) close() {
	p.stall(false)
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// A turn stopped while its job waits in the worker's queue, with the NATS
// server stuck (it takes requests and answers none): taking the job out of
// the queue (dropJob) gives up after dropTimeout, and the stop completes
// (Run returns ErrStopped after the grace) instead of waiting for the
// server for ever, which would hold the folder's worker, and a gateway
// draining its turns at shutdown.
func TestRemoteStopWithStuckNATS(t *testing.T) {
	srv := startNATS(t, "127.0.0.1:0", t.TempDir(), t.TempDir())
	proxy := newStallProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	nc := gatewayConn(t, srv, proxy.url())
	fakeWorker(t, nc, "w1") // live, takes nothing
	r := newRunner(t, nc, `cat >/dev/null; echo ran`, 200*time.Millisecond)
	ctx, stop := context.WithCancelCause(t.Context())
	defer stop(nil)
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, agent.Spec{Timeout: time.Minute}, turnInput(t, "t-stuck"))
		done <- err
	}()
	testwait.For(t, 20*time.Second, "the job in w1's queue", func() bool {
		s, err := r.js.Stream(t.Context(), TurnsStream)
		return err == nil && s.CachedInfo().State.Msgs == 1
	})
	proxy.stall(true)
	defer proxy.stall(false)
	stop(agent.ErrStopped)
	var err error
	testwait.For(t, dropTimeout+20*time.Second, "the stopped turn's Run to return", func() bool {
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if !errors.Is(err, agent.ErrStopped) {
		t.Errorf("Run: %v; want agent.ErrStopped", err)
	}
}
