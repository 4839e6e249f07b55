//go:build !linux

package agent

import "syscall"

// sysProcAttr puts the agent in its own process group, so a timeout
// kills everything it started. (Only Linux can also tie the agent's life to
// the gateway's.)
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
