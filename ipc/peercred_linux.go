package ipc

import (
	"fmt"
	"net"
	"syscall"
)

// peerUID returns the uid of the process at the other end of c (SO_PEERCRED).
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var (
		cred *syscall.Ucred
		cerr error
	)
	err = raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		return -1, fmt.Errorf("read peer credentials: %w", err)
	}
	return int(cred.Uid), nil
}
