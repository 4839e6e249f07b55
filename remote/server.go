package remote

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ServerOptions configure the embedded NATS server (nats.embedded).
type ServerOptions struct {
	Listen   string // host:port; port 0 picks a free one
	StoreDir string // JetStream's files
	// AuthDir holds the credentials (see AuthDir): the gateway's are made
	// at first start, the workers' by AddWorker. Required.
	AuthDir string
	// TLSCert and TLSKey (PEM files) make clients speak TLS; the caller
	// requires them off loopback. The gateway's own connection (InProcess)
	// needs none.
	TLSCert, TLSKey string
	// Logger gets the server's own log (never its protocol trace, which
	// would carry jobs). Default: discarded.
	Logger *slog.Logger
	// Reload is how often the registered workers are looked at, so that
	// one added or removed takes effect without a restart (default 2 s).
	Reload time.Duration
	// more are users besides the gateway and the workers (tests).
	more []*server.NkeyUser
}

// Server is an embedded NATS server with JetStream (nats.embedded), on
// which every client authenticates with an nkey and has only the
// permissions of its role (auth.go); anonymous clients are refused.
type Server struct {
	s       *server.Server
	base    *server.Options // as configured, before the users
	gateway Creds
	opt     ServerOptions
	mu      sync.Mutex
	workers map[string]string // as loaded: id → public key
	stop    context.CancelFunc
	done    chan struct{}
}

// StartServer starts a NATS server with JetStream storing in
// opt.StoreDir, listening on opt.Listen, with the gateway's credentials
// (made at first start) and the registered workers' as its users.
func StartServer(opt ServerOptions) (*Server, error) {
	host, portStr, err := net.SplitHostPort(opt.Listen)
	if err != nil {
		return nil, fmt.Errorf("nats.listen: %q is not host:port: %w", opt.Listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("nats.listen: %q: bad port", opt.Listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Reload <= 0 {
		opt.Reload = 2 * time.Second
	}
	if err := os.MkdirAll(opt.AuthDir, 0o700); err != nil {
		return nil, fmt.Errorf("nats credentials directory: %w", err)
	}
	gw, err := ensureGatewayCreds(opt.AuthDir)
	if err != nil {
		return nil, err
	}
	workers, err := RegisteredWorkers(opt.AuthDir)
	if err != nil {
		return nil, err
	}
	base := &server.Options{ServerName: "switchboard", Host: host, Port: port, JetStream: true, StoreDir: opt.StoreDir,
		NoSigs: true, MaxPayload: 8 << 20}
	if opt.TLSCert != "" {
		tc, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: opt.TLSCert, KeyFile: opt.TLSKey})
		if err != nil {
			return nil, fmt.Errorf("nats.tls_cert, nats.tls_key: %w", err)
		}
		base.TLSConfig, base.TLS, base.TLSTimeout = tc, true, 2
	}
	if port != server.RANDOM_PORT {
		// The server would only log that it cannot listen and never become
		// ready: find out first, and say which key to change.
		ln, err := net.Listen("tcp", net.JoinHostPort(host, portStr))
		if err != nil {
			return nil, fmt.Errorf("nats.listen: %w (is another program using it? change nats.listen)", err)
		}
		ln.Close()
	}
	opts := base.Clone()
	opts.Nkeys = append(nkeyUsers(gw.Public, workers), opt.more...)
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats server: %w", err)
	}
	// Debug only when the gateway logs debug; never the protocol trace.
	s.SetLoggerV2(slogNATS{opt.Logger}, opt.Logger.Enabled(context.Background(), slog.LevelDebug), false, false)
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded nats server on %s did not start within 10s", opt.Listen)
	}
	ctx, stop := context.WithCancel(context.Background())
	srv := &Server{s: s, base: base, gateway: gw, opt: opt, workers: workers, stop: stop, done: make(chan struct{})}
	go srv.follow(ctx)
	return srv, nil
}

// follow reloads the server's users when the registered workers change.
func (s *Server) follow(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.opt.Reload)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.reloadWorkers(); err != nil {
			s.opt.Logger.Error("reload the registered nats workers", "err", err)
		}
	}
}

// reloadWorkers makes the server's users the registered workers' (and
// the gateway's) when they changed: a removed worker's connections close.
func (s *Server) reloadWorkers() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	workers, err := RegisteredWorkers(s.opt.AuthDir)
	if err != nil {
		return err
	}
	if maps.Equal(workers, s.workers) {
		return nil
	}
	opts := s.base.Clone()
	opts.Nkeys = append(nkeyUsers(s.gateway.Public, workers), s.opt.more...)
	if err := s.s.ReloadOptions(opts); err != nil {
		return fmt.Errorf("reload the nats server's users: %w", err)
	}
	s.workers = workers
	s.opt.Logger.Info("nats workers reloaded", "workers", len(workers))
	return nil
}

// URL is where workers connect.
func (s *Server) URL() string { return s.s.ClientURL() }

// Gateway are the gateway's credentials.
func (s *Server) Gateway() Creds { return s.gateway }

// InProcess connects a client to this server without the network (and
// so without TLS): the gateway's own connection.
func (s *Server) InProcess() nats.Option { return nats.InProcessServer(s.s) }

// Close stops the server.
func (s *Server) Close() {
	s.stop()
	<-s.done
	s.s.Shutdown()
	s.s.WaitForShutdown()
}

// slogNATS is nats-server's Logger over slog, with one constant message.
type slogNATS struct{ l *slog.Logger }

func (n slogNATS) Noticef(format string, v ...any) {
	n.l.Info("nats server", "text", fmt.Sprintf(format, v...))
}

func (n slogNATS) Warnf(format string, v ...any) {
	n.l.Warn("nats server", "text", fmt.Sprintf(format, v...))
}

func (n slogNATS) Errorf(format string, v ...any) {
	n.l.Error("nats server", "text", fmt.Sprintf(format, v...))
}

// Fatalf logs: the server stops itself where it must, not the gateway.
func (n slogNATS) Fatalf(format string, v ...any) {
	n.l.Error("nats server", "text", fmt.Sprintf(format, v...), "fatal", true)
}

func (n slogNATS) Debugf(format string, v ...any) {
	n.l.Debug("nats server", "text", fmt.Sprintf(format, v...))
}

func (n slogNATS) Tracef(format string, v ...any) {
	n.l.Debug("nats server", "text", fmt.Sprintf(format, v...))
}
