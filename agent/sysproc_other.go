//go:build !linux

package agent

import "syscall"

// sysProcAttr puts the agent in its own process group, so a timeout
// kills everything it started. (Only Linux can also tie the agent's life to
// the gateway's.)
func sysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// termSignal is the signal that asks the agent's process group to end.
func termSignal(*syscall.SysProcAttr) syscall.Signal { return syscall.SIGTERM }
