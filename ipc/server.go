package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"switchboard/grants"
	"switchboard/groups"
)

// DefaultMaxLine bounds one JSON-RPC message on a socket.
const DefaultMaxLine = 4 << 20

// ownUID is the gateway's uid: the peer a socket accepts by default.
var ownUID = os.Getuid()

// Options configure a Server. Backend is required.
type Options struct {
	Layout   groups.Layout
	Operator groups.Folder // the tier-0 folder
	Backend  Backend
	Logger   *slog.Logger
	// AllowedUIDs may connect besides the gateway's own uid.
	AllowedUIDs []int
	// MaxLine bounds one JSON-RPC message in bytes (default DefaultMaxLine).
	// A longer line is answered with an Invalid Request error and skipped;
	// the connection stays open.
	MaxLine int
	// Version is the server version reported to clients.
	Version string
	// OnCall, when set, is told of every tool call's outcome: "allowed"
	// (it ran and succeeded), "refused" (grants or ownership) or "error".
	OnCall func(tool, outcome string)
	// ApproveTool offers approve_tool (approvals.agent_tools is set);
	// without it the tool is neither listed nor callable.
	ApproveTool bool
}

// Group is a group as Sync sees it: its folder and stored grant overrides.
type Group struct {
	Folder    groups.Folder
	Overrides []string
}

// Server serves the MCP sockets of all groups. Create it with New, keep it
// in step with the groups with Sync, and stop it with Close.
type Server struct {
	opt   Options
	log   *slog.Logger
	mcp   *server.MCPServer
	tools map[string]*toolDef
	// handlers are the tools' handlers as mcp-go calls them, by name; the
	// direct path of a socket's tools/call calls the same (directcall.go).
	handlers map[string]server.ToolHandlerFunc
	// directCalls counts the calls served on the direct path (for tests).
	directCalls atomic.Int64
	catalog     *grants.Catalog // derived from the registry
	names       []string        // the catalog's tools, in catalog order

	ctx    context.Context // cancelled by Close: ends every connection
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loops and connections
	seq    atomic.Int64   // session ids

	mu     sync.Mutex
	groups map[groups.Folder]*group
	closed bool
	// The HTTP endpoint, when HTTPHandler made one, and the group of each
	// legacy HTTP session id.
	http      *httpHandler
	httpBound map[string]*group
}

// group is one group's socket and sessions.
type group struct {
	folder  groups.Folder
	path    string // absolute socket path
	access  atomic.Pointer[access]
	removed atomic.Bool

	// Guarded by Server.mu.
	ln       *net.UnixListener
	sessions map[*session]struct{}
	http     map[server.ClientSession]*httpSess // its sessions on the HTTP endpoint
	lastErr  string
}

// access is what a group may do, computed at Sync; immutable but for
// list_grants' answer, encoded once when first asked for.
type access struct {
	tier      int
	overrides []string
	rules     *grants.Set
	listed    []string // catalog tools it sees, catalog order

	// list_grants' answer, encoded at the first call (access.listGrants).
	grantsOnce sync.Once
	grants     json.RawMessage
	grantsErr  error
}

// New builds a Server; nothing listens until Sync.
func New(opt Options) (*Server, error) {
	if opt.Backend == nil {
		return nil, errors.New("ipc: no backend")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.MaxLine <= 0 {
		opt.MaxLine = DefaultMaxLine
	}
	if opt.Version == "" {
		opt.Version = "dev"
	}
	s := &Server{opt: opt, log: opt.Logger, groups: map[groups.Folder]*group{}, httpBound: map[string]*group{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	hooks := &server.Hooks{}
	hooks.AddOnRegisterSession(s.sessionRegistered)
	hooks.AddOnUnregisterSession(s.sessionUnregistered)
	s.mcp = server.NewMCPServer("switchboard", opt.Version,
		server.WithToolCapabilities(true),
		server.WithHooks(hooks),
		server.WithToolFilter(s.filterTools),
		server.WithInstructions("Switchboard chat gateway tools for one group. Chat params are chat JIDs such as web:lobby; "+
			"message ids are the platform's ids. Results are JSON. A refused call explains which grant rule or ownership rule refused it."),
	)
	defs := offered(opt.ApproveTool)
	catalog, err := catalogOf(defs)
	if err != nil {
		return nil, fmt.Errorf("ipc: %w", err)
	}
	s.catalog, s.names = catalog, catalog.Tools()
	s.tools, s.handlers = map[string]*toolDef{}, map[string]server.ToolHandlerFunc{}
	var serverTools []server.ServerTool
	for _, def := range defs {
		if _, dup := s.tools[def.tool.Name]; dup {
			return nil, fmt.Errorf("ipc: tool %s defined twice", def.tool.Name)
		}
		if _, err := def.tool.MarshalJSON(); err != nil {
			// A tool that does not serialize breaks every tools/list.
			return nil, fmt.Errorf("ipc: tool %s: schema does not serialize: %w", def.tool.Name, err)
		}
		s.tools[def.tool.Name], s.handlers[def.tool.Name] = def, s.handler(def)
		serverTools = append(serverTools, server.ServerTool{Tool: def.tool, Handler: s.handlers[def.tool.Name]})
	}
	s.mcp.AddTools(serverTools...)
	return s, nil
}

// SocketPath is the absolute socket path of folder.
func (s *Server) SocketPath(folder groups.Folder) string {
	p := s.opt.Layout.SocketPath(folder)
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// Sync makes the sockets match gs: a socket for every group (from now on),
// none for groups that are gone (their files removed, their connections
// closed), and notifications/tools/list_changed to the sessions of each group
// whose visible tool set changed. A group whose socket cannot be bound is
// reported in the error (each distinct failure once) and retried at the next
// Sync; the other groups are served regardless.
func (s *Server) Sync(gs []Group) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil // shutting down: no sockets any more
	}
	want := make(map[groups.Folder]bool, len(gs))
	for _, g := range gs {
		want[g.Folder] = true
	}
	for folder, g := range s.groups {
		if !want[folder] {
			s.removeLocked(g, false)
			delete(s.groups, folder)
		}
	}
	var starting []*group
	for _, gr := range gs {
		a := s.accessFor(gr)
		g, ok := s.groups[gr.Folder]
		if !ok {
			g = &group{folder: gr.Folder, path: s.SocketPath(gr.Folder), sessions: map[*session]struct{}{},
				http: map[server.ClientSession]*httpSess{}}
			s.groups[gr.Folder] = g
		}
		old := g.access.Swap(a)
		if old != nil && !slices.Equal(old.listed, a.listed) {
			for sess := range g.sessions {
				sess.toolsChanged()
			}
			for cs, hs := range g.http {
				httpToolsChanged(cs, hs)
			}
		}
		if g.ln == nil {
			starting = append(starting, g)
		}
	}
	var errs []error
	for i, err := range s.startAll(starting) {
		g := starting[i]
		if err == nil {
			g.lastErr = ""
			continue
		}
		if err.Error() != g.lastErr {
			errs = append(errs, err)
		}
		g.lastErr = err.Error()
	}
	return errors.Join(errs...)
}

func (s *Server) accessFor(g Group) *access {
	tier := groups.Tier(g.Folder, s.opt.Operator)
	rules := s.catalog.ForGroup(tier, g.Overrides)
	return &access{tier: tier, overrides: slices.Clone(g.Overrides), rules: rules, listed: rules.ListedTools(s.names)}
}

// startAll binds the sockets of gs and starts accepting on them; the
// binds run a few at a time, since on a slow disk each costs a millisecond
// of file-system latency, but no more than there are CPUs: many at once
// contend in the kernel for the directory and the journal (ten thousand
// took three times longer 32 at a time than one at a time on a 2-core
// machine). It returns one error (or nil) per group. Server.mu must be
// held.
func (s *Server) startAll(gs []*group) []error {
	errs := make([]error, len(gs))
	lns := make([]*net.UnixListener, len(gs))
	sem := make(chan struct{}, min(runtime.GOMAXPROCS(0), 8))
	var wg sync.WaitGroup
	for i, g := range gs {
		if err := g.folder.Validate(); err != nil {
			errs[i] = err
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			lns[i], errs[i] = listenSocket(g.folder, g.path)
		})
	}
	wg.Wait()
	for i, g := range gs {
		if errs[i] == nil {
			g.ln = lns[i]
			s.wg.Add(1)
			go s.accept(g, lns[i])
		}
	}
	return errs
}

// removeLocked stops g: no new connections, the socket file removed, open
// sessions closed. keepDir keeps the socket's directory (at Close: the
// next start binds in it again instead of making it anew).
func (s *Server) removeLocked(g *group, keepDir bool) {
	g.removed.Store(true)
	if g.ln != nil {
		g.ln.Close() // unlinks the socket file
		g.ln = nil
		if !keepDir {
			// The group's socket directory, if nothing else is left in it.
			_ = os.Remove(filepath.Dir(g.path))
		}
	}
	for sess := range g.sessions {
		sess.close()
	}
}

// Close stops every listener, removes the socket files (their directories
// stay, for the next start), ends every connection and waits for them.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		for _, g := range s.groups {
			s.removeLocked(g, true)
		}
	}
	s.mu.Unlock()
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.CloseHTTP(ctx)
	s.wg.Wait()
	return nil
}

// accept serves one group's listener until it is closed.
func (s *Server) accept(g *group, ln *net.UnixListener) {
	defer s.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: wait, then retry.
			s.log.Warn("accept on mcp socket", "folder", g.folder, "err", err)
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		if err := s.checkPeer(c); err != nil {
			s.log.Warn("mcp connection refused", "folder", g.folder, "err", err)
			c.Close()
			continue
		}
		s.mu.Lock()
		if s.closed || g.removed.Load() {
			s.mu.Unlock()
			c.Close()
			continue
		}
		sess := s.newSession(g, c)
		g.sessions[sess] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serve(sess)
	}
}

// checkPeer allows the gateway's own uid and Options.AllowedUIDs.
func (s *Server) checkPeer(c *net.UnixConn) error {
	uid, err := peerUID(c)
	if err != nil {
		return err
	}
	if uid == ownUID || slices.Contains(s.opt.AllowedUIDs, uid) {
		return nil
	}
	return fmt.Errorf("%w: uid %d (the gateway runs as uid %d)", ErrPeer, uid, ownUID)
}

// dropSession forgets a finished session.
func (s *Server) dropSession(sess *session) {
	s.mu.Lock()
	delete(sess.g.sessions, sess)
	s.mu.Unlock()
}

// callKey marks the context of a tools/call request: the listing filter lets
// every tool through, and the handler decides with Authorize, so that a
// hidden tool called by name gets an isError result rather than "not found".
type callKey struct{}

// filterTools is the tools/list filter: the caller's group sees the tools
// its rules list.
func (s *Server) filterTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	if ctx.Value(callKey{}) != nil {
		return tools
	}
	g := callerGroup(ctx)
	if g == nil || g.removed.Load() {
		return nil
	}
	a := g.access.Load()
	out := make([]mcp.Tool, 0, len(a.listed))
	for _, t := range tools {
		if slices.Contains(a.listed, t.Name) {
			out = append(out, t)
		}
	}
	return out
}

// callerGroup is the group a request acts as: its socket's, or its HTTP
// token's (nil when neither).
func callerGroup(ctx context.Context) *group {
	if c, ok := ctx.Value(httpCallerKey{}).(*httpCall); ok {
		return c.g
	}
	if sess, ok := server.ClientSessionFromContext(ctx).(*session); ok {
		return sess.g
	}
	return nil
}

// Online reports whether folder's socket is being served.
func (s *Server) Online(folder groups.Folder) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[folder]
	return g != nil && g.ln != nil
}
