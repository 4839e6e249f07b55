package gateway

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killLeftovers kills the agent processes a crashed gateway of this data
// directory left behind: without a sandbox, a child that called setsid or
// double-forked survives the gateway (only the direct child dies with it).
// They are found by their environment: every agent process inherits
// SWITCHBOARD_MCP_SOCKET, a path under this data directory's ipc/. Only
// processes of this user can be read, and only those are ours.
func killLeftovers(anySocket string, log *slog.Logger) int {
	ipcRoot, err := filepath.Abs(filepath.Dir(filepath.Dir(anySocket)))
	if err != nil {
		return 0
	}
	marker := []byte("SWITCHBOARD_MCP_SOCKET=" + ipcRoot + string(filepath.Separator))
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.HasPrefix(kv, marker) {
				if err := syscall.Kill(pid, syscall.SIGKILL); err == nil {
					n++
				} else {
					log.Warn("kill leftover agent process", "pid", pid, "err", err)
				}
				break
			}
		}
	}
	return n
}
