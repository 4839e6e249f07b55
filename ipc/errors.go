package ipc

import "errors"

var (
	// ErrSocketPath: a group's socket path is too long for a unix socket.
	ErrSocketPath = errors.New("socket path too long")
	// ErrSocketInUse: another process is serving the group's socket.
	ErrSocketInUse = errors.New("socket in use by another process")
	// ErrPeer: a connecting process runs as a user that may not act as the group.
	ErrPeer = errors.New("peer not allowed")
	// ErrBadToken: an HTTP request's bearer token is missing, unknown,
	// expired or revoked.
	ErrBadToken = errors.New("invalid or expired token")
	// ErrFlushTimeout: after the bridge's stdin ended, the gateway did not
	// answer the requests already sent within the flush timeout.
	ErrFlushTimeout = errors.New("the gateway did not finish answering within the flush timeout after stdin closed")
	// ErrNoTurn: report_usage outside a turn has nothing to add to.
	ErrNoTurn = errors.New("your group runs no turn now; report usage from within a turn")
)
