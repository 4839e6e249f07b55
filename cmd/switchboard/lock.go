package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDataDir takes the data directory for this gateway: an exclusive flock
// on <data_dir>/switchboard.lock, which holds the owner's pid. A second
// gateway on the same directory is refused, naming the first; CLI commands
// never take the lock. The kernel drops it when the process dies, however it
// dies. release unlocks and closes.
func lockDataDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, "switchboard.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock data dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(b))
			return nil, fmt.Errorf("data dir %s is in use by another switchboard run (pid %s); stop it first, or use another data_dir", dir, cmp.Or(pid, "unknown"))
		}
		return nil, fmt.Errorf("lock data dir %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
