//go:build !linux

package groups

import (
	"fmt"
	"os"
	"path/filepath"
)

// OpenDirBelow opens dir: only Linux checks each step (the sandbox that
// makes the check matter, bubblewrap, is Linux's alone).
func OpenDirBelow(_, dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return f, nil
}

// rootOf is an os.Root of the directory f has open.
func rootOf(f *os.File) (*os.Root, error) { return os.OpenRoot(f.Name()) }

// OpenPathIn opens name in the directory d has open.
func OpenPathIn(d *os.File, name string) (*os.File, error) {
	return os.Open(filepath.Join(d.Name(), name))
}
