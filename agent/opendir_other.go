//go:build !linux

package agent

import (
	"fmt"
	"os"
)

// openDirBelow opens dir (bubblewrap, and so the sandbox, is Linux's alone).
func openDirBelow(_, dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return f, nil
}
