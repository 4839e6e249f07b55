//go:build unix

package remote

import "syscall"

// openFlags open a snapshotted file without following a symlink swapped in
// since the scan, and without blocking on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
