package remote

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Server is an embedded NATS server with JetStream (nats.embedded).
type Server struct{ s *server.Server }

// StartServer starts a NATS server with JetStream storing in dir and
// listening on listen (host:port; port 0 picks a free one).
func StartServer(listen, dir string) (*Server, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("nats.listen: %q is not host:port: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("nats.listen: %q: bad port", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	s, err := server.NewServer(&server.Options{ServerName: "switchboard", Host: host, Port: port, JetStream: true, StoreDir: dir,
		NoSigs: true, NoLog: true, MaxPayload: 8 << 20})
	if err != nil {
		return nil, fmt.Errorf("embedded nats server: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded nats server on %s did not start within 10s", listen)
	}
	return &Server{s: s}, nil
}

// URL is where clients (the gateway, workers) connect.
func (s *Server) URL() string { return s.s.ClientURL() }

// Close stops the server.
func (s *Server) Close() {
	s.s.Shutdown()
	s.s.WaitForShutdown()
}
