package ipc

// The groups' MCP servers over Streamable HTTP (mcp.listen): the same
// mcp-go server, catalog, listing filter, Authorize and list_changed as the
// sockets. What a socket's file mode and peer check decide there, a bearer
// token decides here: the token names the folder, never the request.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"switchboard/groups"
)

// HTTPPath is where the Streamable HTTP endpoint is served.
const HTTPPath = "/mcp"

// Tokens resolves the bearer tokens of the HTTP endpoint. The gateway
// implements it over the store, which keeps only their hashes.
type Tokens interface {
	// TokenFolder returns the folder token acts as, or an error wrapping
	// ErrBadToken when it is unknown, expired or revoked (the request gets
	// 401); any other error means it could not be checked (503). The token is a
	// secret: implementations must not log it or put it in an error.
	TokenFolder(ctx context.Context, token string) (groups.Folder, error)
}

// HTTPOptions configure the HTTP endpoint.
type HTTPOptions struct {
	Tokens Tokens
	// FailBurst and FailEvery rate-limit bad tokens per remote address: a
	// burst of FailBurst 401s, then one per FailEvery (defaults 20 and 6s);
	// beyond that a bad token gets 429. Only failures are limited: a valid
	// token is served whatever the address sent before (every local agent
	// shares 127.0.0.1).
	FailBurst int
	FailEvery time.Duration
	// SessionIdleTTL forgets a legacy (initialize-handshake) HTTP session
	// idle this long (default 30m).
	SessionIdleTTL time.Duration
	// MaxSessions bounds a group's legacy HTTP sessions (default 1000):
	// a client that initializes again and again without DELETE would
	// otherwise keep each one in memory for SessionIdleTTL. Past it, the
	// group's session used longest ago that serves no request is ended
	// (its next request gets 404, and an MCP client initializes again).
	MaxSessions int
	// BodyTimeout bounds reading a request once its headers are in
	// (default 30s): a body that trickles in is cut off, also one without a
	// token. The deadline is lifted once an authenticated request's body is
	// read, so that a GET or listen stream lasts as long as its request.
	BodyTimeout time.Duration
}

// httpCallerKey carries the *httpCall of an authenticated HTTP request.
type httpCallerKey struct{}

// httpCall is one authenticated HTTP request: the group its token acts as,
// and the mcp-go session serving it (set by the context func).
type httpCall struct {
	g    *group
	sess server.ClientSession
}

// httpSess is an HTTP session of a group, as list_changed sees it.
type httpSess struct {
	requests int       // requests being served on it (a listen stream is one)
	legacy   bool      // registered after an initialize handshake (until swept)
	used     time.Time // when a request on it last started or ended
}

// HTTPHandler returns the Streamable HTTP endpoint (served at HTTPPath).
// Requests need "Authorization: Bearer <token>"; an unknown, expired or
// revoked token gets 401 with no OAuth metadata (an MCP client would start
// OAuth discovery), a cross-origin browser request 403. Call it once.
func (s *Server) HTTPHandler(opt HTTPOptions) http.Handler {
	if opt.FailBurst <= 0 {
		opt.FailBurst = 20
	}
	if opt.FailEvery <= 0 {
		opt.FailEvery = 6 * time.Second
	}
	if opt.SessionIdleTTL <= 0 {
		opt.SessionIdleTTL = 30 * time.Minute
	}
	if opt.BodyTimeout <= 0 {
		opt.BodyTimeout = 30 * time.Second
	}
	if opt.MaxSessions <= 0 {
		opt.MaxSessions = 1000
	}
	h := &httpHandler{s: s, opt: opt, fails: failLimiter{burst: float64(opt.FailBurst), every: opt.FailEvery, now: time.Now}}
	h.streamable = server.NewStreamableHTTPServer(s.mcp,
		server.WithEndpointPath(HTTPPath),
		server.WithStreamableHTTPLogger(s.log),
		server.WithSessionIdleTTL(opt.SessionIdleTTL),
		server.WithHTTPContextFunc(h.withSession),
	)
	s.mu.Lock()
	s.http = h
	s.mu.Unlock()
	return h
}

type httpHandler struct {
	s          *Server
	opt        HTTPOptions
	streamable *server.StreamableHTTPServer
	fails      failLimiter

	ended       int       // sessions endOldSessions ended since it last logged; Server.mu
	endedLogged time.Time // when it last logged; Server.mu
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != HTTPPath {
		http.NotFound(w, r)
		return
	}
	// The request has BodyTimeout to arrive whole; the deadline is lifted
	// below, once it is authenticated and read. (A ResponseRecorder in tests
	// has no deadlines.)
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(h.opt.BodyTimeout))
	if !sameOrigin(r) {
		http.Error(w, "forbidden: cross-origin requests are not accepted", http.StatusForbidden)
		return
	}
	addr := remoteHost(r)
	folder, err := h.token(r)
	if err != nil && !errors.Is(err, ErrBadToken) {
		// The token store failed, not the token: no 401 (the client would
		// drop a good token), and nothing charged against the address.
		h.s.log.Error("mcp http token check failed; the request is answered 503", "remote", addr, "err", err)
		w.Header().Set("Retry-After", "5")
		http.Error(w, "service unavailable: the token could not be checked (the gateway's store failed); try again", http.StatusServiceUnavailable)
		return
	}
	if err != nil {
		if !h.fails.fail(addr) {
			w.Header().Set("Retry-After", fmt.Sprint(int(h.opt.FailEvery.Seconds()+0.5)))
			http.Error(w, "too many requests with a bad token; wait", http.StatusTooManyRequests)
			return
		}
		h.s.log.Warn("mcp http request refused", "remote", addr, "err", err)
		// A bearer challenge without resource_metadata: no OAuth discovery.
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, "unauthorized: "+err.Error(), http.StatusUnauthorized)
		return
	}
	h.s.mu.Lock()
	g := h.s.groups[folder]
	bound, known := h.s.httpBound[r.Header.Get(server.HeaderKeySessionID)]
	h.s.mu.Unlock()
	if g == nil || g.removed.Load() {
		http.Error(w, fmt.Sprintf("forbidden: group %s does not exist", folder), http.StatusForbidden)
		return
	}
	if sid := r.Header.Get(server.HeaderKeySessionID); sid != "" && (!known || bound != g) {
		// Unknown, or another group's: a session is its group's alone.
		http.Error(w, "session not found", http.StatusNotFound)
		return
	}
	c := &httpCall{g: g}
	ctx := context.WithValue(r.Context(), httpCallerKey{}, c)
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(h.s.opt.MaxLine)))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			http.Error(w, fmt.Sprintf("request too large: one JSON-RPC message may be at most %d bytes", h.s.opt.MaxLine), http.StatusRequestEntityTooLarge)
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			h.s.log.Warn("mcp http request body too slow; the connection is closed", "remote", addr, "folder", folder, "timeout", h.opt.BodyTimeout)
			http.Error(w, fmt.Sprintf("request timeout: the body did not arrive within %s", h.opt.BodyTimeout), http.StatusRequestTimeout)
			return
		case err != nil:
			http.Error(w, "bad request: the body could not be read", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var hd head
		if json.Unmarshal(body, &hd) == nil && hd.Method == string(mcp.MethodToolsCall) {
			// As on a socket: a hidden tool called by name is refused by
			// Authorize with a reason, not "not found" by the filter.
			ctx = context.WithValue(ctx, callKey{}, true)
		}
	}
	_ = rc.SetReadDeadline(time.Time{}) // a stream lasts as long as its request
	h.streamable.ServeHTTP(w, r.WithContext(ctx))
	if c.sess != nil {
		h.s.mu.Lock()
		if hs := g.http[c.sess]; hs != nil {
			hs.requests--
			hs.used = time.Now()
			if hs.requests <= 0 && !hs.legacy {
				delete(g.http, c.sess)
			}
		}
		h.s.mu.Unlock()
	}
	if r.Header.Get(server.HeaderKeySessionID) == "" && r.Method == http.MethodPost {
		h.endOldSessions(g) // it may have made a session (initialize)
	}
}

// endOldSessions ends g's idle legacy sessions used longest ago while it
// has more than MaxSessions, as a DELETE from their client would.
func (h *httpHandler) endOldSessions(g *group) {
	h.s.mu.Lock()
	var idle []server.ClientSession
	legacy := 0
	for cs, hs := range g.http {
		if hs.legacy {
			legacy++
			if hs.requests <= 0 {
				idle = append(idle, cs)
			}
		}
	}
	over := legacy - h.opt.MaxSessions
	if over <= 0 {
		h.s.mu.Unlock()
		return
	}
	slices.SortFunc(idle, func(a, b server.ClientSession) int { return g.http[a].used.Compare(g.http[b].used) })
	idle = idle[:min(over, len(idle))]
	ids := make([]string, len(idle))
	for i, cs := range idle {
		ids[i] = cs.SessionID()
	}
	h.s.mu.Unlock()
	for _, id := range ids {
		req, err := http.NewRequest(http.MethodDelete, HTTPPath, nil)
		if err != nil {
			continue
		}
		req.Header.Set(server.HeaderKeySessionID, id)
		h.streamable.ServeHTTP(discardResponse{}, req)
	}
	h.s.mu.Lock()
	h.ended += len(ids)
	ended, now := h.ended, time.Now()
	logNow := now.Sub(h.endedLogged) >= time.Minute // a client that keeps at it is told of once a minute
	if logNow {
		h.ended, h.endedLogged = 0, now
	}
	h.s.mu.Unlock()
	if logNow {
		h.s.log.Warn("mcp http sessions ended: their group had too many open (a client that initializes without DELETE?)",
			"folder", g.folder, "ended", ended, "max_sessions", h.opt.MaxSessions)
	}
}

// discardResponse is the response of a DELETE the gateway makes itself.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}

// token returns the folder of the request's bearer token: an error
// wrapping ErrBadToken when the token is missing or not valid, any other
// when the token store could not be read.
func (h *httpHandler) token(r *http.Request) (groups.Folder, error) {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || strings.TrimSpace(tok) == "" {
		return "", fmt.Errorf("%w: no \"Authorization: Bearer <token>\" header", ErrBadToken)
	}
	if h.opt.Tokens == nil {
		return "", fmt.Errorf("%w: this gateway has no token store", ErrBadToken)
	}
	folder, err := h.opt.Tokens.TokenFolder(r.Context(), strings.TrimSpace(tok))
	if err != nil {
		if errors.Is(err, ErrBadToken) {
			return "", err
		}
		return "", fmt.Errorf("check the token: %w", err)
	}
	return folder, nil
}

// withSession runs inside mcp-go for each request, with the session that
// serves it in ctx: it records the session as its group's while the
// request runs, so that a subscriptions/listen stream gets list_changed.
func (h *httpHandler) withSession(ctx context.Context, _ *http.Request) context.Context {
	c, ok := ctx.Value(httpCallerKey{}).(*httpCall)
	cs := server.ClientSessionFromContext(ctx)
	if !ok || cs == nil {
		return ctx
	}
	c.sess = cs
	h.s.mu.Lock()
	hs := c.g.http[cs]
	if hs == nil {
		hs = &httpSess{}
		c.g.http[cs] = hs
	}
	hs.requests++
	hs.used = time.Now()
	h.s.mu.Unlock()
	return ctx
}

// sessionRegistered and sessionUnregistered are mcp-go's session hooks:
// an HTTP session registered after its initialize handshake (a legacy
// session, with an Mcp-Session-Id) is its group's until it is deleted or
// swept. Socket sessions are registered too; they carry no httpCall.
func (s *Server) sessionRegistered(ctx context.Context, cs server.ClientSession) {
	c, ok := ctx.Value(httpCallerKey{}).(*httpCall)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	hs := c.g.http[cs]
	if hs == nil {
		hs = &httpSess{}
		c.g.http[cs] = hs
	}
	hs.legacy, hs.used = true, time.Now()
	s.httpBound[cs.SessionID()] = c.g
}

func (s *Server) sessionUnregistered(_ context.Context, cs server.ClientSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.httpBound[cs.SessionID()]
	if !ok {
		return
	}
	delete(s.httpBound, cs.SessionID())
	if hs := g.http[cs]; hs != nil {
		hs.legacy = false
		if hs.requests <= 0 {
			delete(g.http, cs)
		}
	}
}

// httpToolsChanged leaves list_changed for an HTTP session of a group whose
// listing changed: on a 2026-07-28 subscriptions/listen stream that asked
// for it (mcp-go tags it with the stream's id), or on a legacy session
// after its handshake (its GET stream, or its next response, carries it).
// It reports whether one was left. Server.mu must be held.
func httpToolsChanged(cs server.ClientSession, hs *httpSess) bool {
	if f, ok := cs.(server.SessionWithSubscriptionFilter); ok {
		if filter, active := f.SubscriptionFilter(); active {
			return filter.ToolsListChanged && offer(cs)
		}
	}
	return hs.legacy && cs.Initialized() && offer(cs)
}

func offer(cs server.ClientSession) bool {
	if up, ok := cs.(server.SessionWithStreamableHTTPConfig); ok {
		up.UpgradeToSSEWhenReceiveNotification()
	}
	select {
	case cs.NotificationChannel() <- toolsListChanged(nil):
		return true
	default: // a full queue: the client has a list_changed to read already
		return false
	}
}

// CloseHTTP ends the HTTP sessions (their GET and listen streams), so
// that the http.Server serving HTTPHandler can shut down. Close does it too.
func (s *Server) CloseHTTP(ctx context.Context) {
	s.mu.Lock()
	h := s.http
	s.mu.Unlock()
	if h != nil {
		h.streamable.CloseSessions(ctx)
		_ = h.streamable.Shutdown(ctx) // stops the idle sweeper; there is no http.Server of its own
	}
}

// sameOrigin accepts requests without an Origin header (MCP clients and
// the bridge send none) and browser requests from the endpoint's own
// origin; any other origin is a web page trying to use the token-holder's
// access.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

func remoteHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// failLimiter is a token bucket of failed authentications per remote
// address.
type failLimiter struct {
	burst float64
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	addrs  map[string]*bucket
	pruned time.Time
}

type bucket struct {
	left float64
	at   time.Time
}

// fail spends one of addr's tries; false when it had none left (the
// failure gets 429, not 401).
func (l *failLimiter) fail(addr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.addrs == nil {
		l.addrs = map[string]*bucket{}
	}
	b := l.refill(addr)
	if b == nil {
		b = &bucket{left: l.burst, at: l.now()}
		l.addrs[addr] = b
	}
	if b.left < 1 {
		return false
	}
	b.left--
	return true
}

// refill brings addr's bucket up to date (nil when it has none); l.mu held.
func (l *failLimiter) refill(addr string) *bucket {
	now := l.now()
	full := time.Duration(l.burst) * l.every
	if now.Sub(l.pruned) > full {
		l.pruned = now
		for a, b := range l.addrs {
			if now.Sub(b.at) >= full {
				delete(l.addrs, a)
			}
		}
	}
	b := l.addrs[addr]
	if b == nil {
		return nil
	}
	b.left = min(l.burst, b.left+float64(now.Sub(b.at))/float64(l.every))
	b.at = now
	return b
}
