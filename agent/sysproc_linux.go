package agent

import "syscall"

// sysProcAttr puts the agent in its own process group (so a timeout
// kills everything it started) and has the kernel kill it if the gateway
// dies: a crashed gateway reruns the turn after restart, and an orphaned
// agent would otherwise keep working in the folder next to the new one.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
