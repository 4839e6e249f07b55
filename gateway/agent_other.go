//go:build !linux

package gateway

import "syscall"

// agentSysProcAttr puts the agent in its own process group, so a timeout
// kills everything it started. (Only Linux can also tie the agent's life to
// the gateway's.)
func agentSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
