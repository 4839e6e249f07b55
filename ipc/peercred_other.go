//go:build !linux

package ipc

import "net"

// peerUID is not available here; the socket's mode 0600 and its 0700
// directory are the only guard. It reports the gateway's own uid.
func peerUID(c *net.UnixConn) (int, error) { return ownUID, nil }
