package ipc

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"switchboard/groups"
)

// maxSocketPath is the longest path a unix socket can be bound to: the size
// of sun_path less its terminating NUL (107 bytes on Linux, 103 on BSDs).
var maxSocketPath = len(syscall.RawSockaddrUnix{}.Path) - 1

// CheckSocketPath says (ErrSocketPath) when path, a group's absolute socket
// path, is too long to bind a unix socket to: the gateway then serves that
// group no tools.
func CheckSocketPath(folder groups.Folder, path string) error {
	if len(path) > maxSocketPath {
		return fmt.Errorf("%w: group %s: MCP socket path %s is %d bytes, but a unix socket path may be at most %d; use a shorter data_dir (or a shorter folder name)",
			ErrSocketPath, folder, path, len(path), maxSocketPath)
	}
	return nil
}

// listenSocket binds a group's socket at path (absolute): parent directories
// mode 0700, the socket mode 0600. A stale socket file left by a crash is
// removed first; one that a live process still answers is not touched.
func listenSocket(folder groups.Folder, path string) (*net.UnixListener, error) {
	if err := CheckSocketPath(folder, path); err != nil {
		return nil, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("group %s: create socket directory: %w", folder, err)
	}
	// A subgroup's socket directory lies in its parent's, which the
	// parent's agent may write: listening through a symlink it put there
	// would put this group's socket in another group's place.
	if base, ok := strings.CutSuffix(dir, string(filepath.Separator)+filepath.FromSlash(string(folder))); ok {
		d, err := groups.OpenDirBelow(base, dir)
		if err != nil {
			return nil, fmt.Errorf("group %s: socket directory: %w", folder, err)
		}
		d.Close()
	}
	// MkdirAll leaves existing directories alone; the socket's own directory
	// is what keeps other users out, so tighten it whatever its history.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("group %s: secure socket directory: %w", folder, err)
	}
	if err := removeStale(folder, path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("group %s: listen on %s: %w", folder, path, err)
	}
	// The umask decided the mode bind gave the file; set it explicitly.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("group %s: chmod socket: %w", folder, err)
	}
	return ln, nil
}

// removeStale removes a socket file nobody is listening on.
func removeStale(folder groups.Folder, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("group %s: %w", folder, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("group %s: %s exists and is not a socket; move it away", folder, path)
	}
	if c, err := net.DialTimeout("unix", path, 250*time.Millisecond); err == nil {
		c.Close()
		return fmt.Errorf("%w: group %s: %s answers connections; is another gateway running on this data_dir?", ErrSocketInUse, folder, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("group %s: remove stale socket: %w", folder, err)
	}
	return nil
}
