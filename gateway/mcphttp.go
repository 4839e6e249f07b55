package gateway

// The MCP Streamable HTTP endpoint (mcp.listen): the groups' MCP servers
// for agents that cannot reach the sockets (another machine, another
// network namespace). Each turn gets a token of its own.

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/store"
)

// MCPHTTP configures the MCP HTTP endpoint (config mcp.*). The zero value
// (no Listen) serves none.
type MCPHTTP struct {
	Listen   string // host:port
	CertFile string // TLS certificate and key; both or neither
	KeyFile  string
	// URL is what agents are given as SWITCHBOARD_MCP_URL (default: from
	// Listen and whether TLS is on).
	URL string
	// PassToAgents: give each turn SWITCHBOARD_MCP_URL and a token. False
	// when the agents' sandbox has no network to reach the endpoint.
	PassToAgents bool
	// What a client can hold, with a token or without: a request's body
	// must arrive within BodyTimeout of its headers (default 30s; headers
	// within 10s), an idle keep-alive connection is closed after
	// IdleTimeout (default 2m), and at most MaxConns connections are open
	// at once (default 1024; more wait to be accepted). Streams of
	// authenticated requests are not cut off.
	BodyTimeout time.Duration
	IdleTimeout time.Duration
	MaxConns    int
}

// mcpTokens resolves tokens against the store.
type mcpTokens struct{ st *store.Store }

func (t mcpTokens) TokenFolder(ctx context.Context, token string) (groups.Folder, error) {
	if !ops.WellFormedToken(token) {
		return "", fmt.Errorf("%w: not a switchboard token (%s and 43 characters)", ipc.ErrBadToken, ops.TokenPrefix)
	}
	tok, err := t.st.TokenByHash(ctx, store.HashToken(token))
	if errors.Is(err, store.ErrNotFound) {
		return "", fmt.Errorf("%w: unknown, expired or revoked", ipc.ErrBadToken)
	}
	if err != nil {
		return "", err
	}
	return tok.Folder, nil
}

// mcpEndpoint serves the groups' MCP server over Streamable HTTP
// (mcp.listen) and mints and revokes the turns' tokens for it.
type mcpEndpoint struct {
	cfg          MCPHTTP
	st           *store.Store // tokens (ops.MintToken)
	server       *ipc.Server
	agentTimeout time.Duration // a turn's deadline: its token's lifetime
	log          *slog.Logger

	mu  sync.Mutex
	url string // the endpoint given to agents; "" when off; set by start
}

// start binds mcp.listen and serves it; the returned stop shuts it
// down. Nothing is served (and stop is a no-op) without mcp.listen. The
// tokens of the turns in awaited (running on workers) stay valid.
func (e *mcpEndpoint) start(ctx context.Context, awaited []string) (stop func(), err error) {
	c := e.cfg
	if c.Listen == "" {
		return func() {}, nil
	}
	// Tokens of turns of an earlier run are dead with their turns, except
	// those of turns still running on workers.
	if n, err := e.st.DeleteTurnTokens(ctx, "", awaited...); err != nil {
		return nil, err
	} else if n > 0 {
		e.log.Info("mcp tokens of earlier turns revoked", "count", n)
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("mcp.listen: %w (is another program using it? change mcp.listen, or remove it to turn the MCP HTTP endpoint off)", err)
	}
	ln = adapters.LimitListener(ln, cmp.Or(c.MaxConns, 1024))
	if c.CertFile != "" || c.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("mcp.tls_cert/mcp.tls_key: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}})
	}
	mux := http.NewServeMux()
	mux.Handle(ipc.HTTPPath, e.server.HTTPHandler(ipc.HTTPOptions{Tokens: mcpTokens{e.st}, BodyTimeout: c.BodyTimeout}))
	// Requests outlive intake (agents of draining turns keep their tools)
	// and end at stop: a subscriptions/listen stream lasts as long as its
	// request.
	base, endRequests := context.WithCancel(context.WithoutCancel(ctx))
	// No ReadTimeout or WriteTimeout: they would cut off the streams. The
	// handler bounds the body (BodyTimeout) until the token is checked.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cmp.Or(c.IdleTimeout, 2*time.Minute),
		MaxHeaderBytes: 64 << 10, ConnState: adapters.LimitConnState(nil),
		ErrorLog: slog.NewLogLogger(e.log.Handler(), slog.LevelDebug), BaseContext: func(net.Listener) context.Context { return base }}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("serve mcp.listen", "addr", c.Listen, "err", err)
		}
	}()
	u := c.URL
	if u == "" {
		u = DefaultMCPURL(ln.Addr().String(), c.CertFile != "")
	}
	e.mu.Lock()
	e.url = u
	e.mu.Unlock()
	e.log.Info("mcp http endpoint listening", "addr", ln.Addr().String(), "url", u, "tls", c.CertFile != "")
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.server.CloseHTTP(sctx) // ends the open streams, so that Shutdown returns
		endRequests()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		<-done
	}, nil
}

// URL is the endpoint's URL as agents get it ("" when off or not started
// yet).
func (e *mcpEndpoint) URL() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.url
}

// DefaultMCPURL is the endpoint's URL for a listen address: an unspecified
// host (0.0.0.0, ::) becomes the loopback address.
func DefaultMCPURL(addr string, tls bool) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + ipc.HTTPPath
}

// turnTokenEnv mints the token of a turn when the endpoint is on and its
// agents are to use it: SWITCHBOARD_MCP_URL and SWITCHBOARD_MCP_TOKEN. The
// token expires at the turn's deadline and is revoked when the turn is
// recorded (store.FinishBatch), or by endTurnToken when it is not.
func (e *mcpEndpoint) turnTokenEnv(ctx context.Context, folder groups.Folder, turn string) []string {
	url := e.URL()
	if url == "" || !e.cfg.PassToAgents {
		return nil
	}
	ttl := e.agentTimeout // the turn's deadline: the agent is killed then
	if ttl <= 0 {
		ttl = 24 * time.Hour // no timeout: bounded anyway, revoked at the turn's end
	}
	secret, _, err := ops.MintToken(ctx, e.st, folder, turn, ttl)
	if err != nil {
		e.log.Error("mint mcp token; the turn gets the socket only", "folder", folder, "turn", turn, "err", err)
		return nil
	}
	return []string{"SWITCHBOARD_MCP_URL=" + url, "SWITCHBOARD_MCP_TOKEN=" + secret}
}

// endTurnToken revokes a turn's token when the turn ends without being
// recorded (shutdown, a store error); FinishBatch revoked it otherwise.
func (e *mcpEndpoint) endTurnToken(turn string) {
	if e.URL() == "" || !e.cfg.PassToAgents {
		return
	}
	if _, err := e.st.DeleteTurnTokens(context.Background(), turn); err != nil {
		e.log.Error("revoke mcp token of turn", "turn", turn, "err", err)
	}
}
