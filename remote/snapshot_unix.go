//go:build unix

package remote

import (
	"io/fs"
	"syscall"
	"time"
)

// openFlags open a snapshotted file without following a symlink swapped in
// since the scan, and without blocking on a FIFO.
const openFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// stampOf is what stat says of a file that a change to it moves.
func stampOf(info fs.FileInfo) fileStamp {
	s := fileStamp{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.ctime = time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)).UnixNano()
		s.ino = uint64(st.Ino)
	}
	return s
}
