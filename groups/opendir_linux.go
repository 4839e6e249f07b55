package groups

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// OpenDirBelow opens dir, a directory below base, one path step at a time
// without following a symlink below base (base itself may be one: the
// operator chose it). A group's folder and socket directory sit inside
// their parent group's, which the parent's agent may write: it could swap a
// subgroup's for a symlink to the data directory or to another group's,
// and whatever then used the path (the sandbox's bind, a file the gateway
// reads or writes there) would follow it. Use the open directory, not the
// path, and a swap after this changes nothing. A dir not below base is
// opened as it is.
func OpenDirBelow(base, dir string) (*os.File, error) {
	rel, err := filepath.Rel(base, dir)
	if base == "" || err != nil || !filepath.IsLocal(rel) {
		f, err := os.Open(dir)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", dir, err)
		}
		return f, nil
	}
	fd, err := syscall.Open(base, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", base, err)
	}
	at := base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		at = filepath.Join(at, part)
		next, err := syscall.Openat(fd, part, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		syscall.Close(fd)
		switch {
		case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.ENOTDIR):
			return nil, fmt.Errorf("%s is a symlink or not a directory: group folders and socket directories below %s are real directories (remove it and restore the directory)", at, base)
		case err != nil:
			return nil, fmt.Errorf("open %s: %w", at, err)
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), dir), nil
}

// rootOf is an os.Root of the directory f has open (through /proc, so the
// very directory, not whatever its path names now).
func rootOf(f *os.File) (*os.Root, error) {
	return os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
}

// oPath is Linux's O_PATH (the same on every architecture Go supports;
// package syscall lacks it on some).
const oPath = 0x200000

// OpenPathIn opens name in the directory d has open, without following a
// symlink, as a path only (O_PATH): what a socket can be opened as, for a
// bind of that very file. A missing name is fs.ErrNotExist.
func OpenPathIn(d *os.File, name string) (*os.File, error) {
	fd, err := syscall.Openat(int(d.Fd()), name, oPath|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(d.Name(), name), Err: err}
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.Name(), name)), nil
}
