package agent

import (
	"os/exec"
	"sync"
	"syscall"
)

// sysProcAttr puts the agent in its own process group (so a timeout
// kills everything it started) and has the kernel kill it if the gateway
// dies: a crashed gateway reruns the turn after restart, and an orphaned
// agent would otherwise keep working in the folder next to the new one.
//
// A sandboxed agent's bwrap also starts as pid 1 of a PID namespace of its
// own where the system allows it (CAP_SYS_ADMIN: a gateway run as root):
// bwrap's --die-with-parent protects its inner process only late in the
// sandbox's setup, so an outer bwrap killed earlier (the gateway died, or
// the turn was stopped) left the inner one waiting forever, in a session
// of its own after setsid, out of reach of the group kill. When the pid 1
// of a namespace dies, the kernel kills everything in it and in the
// namespaces below it, whatever phase bwrap is in.
func sysProcAttr(sandboxed bool) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if sandboxed && ownPIDNamespace() {
		a.Cloneflags = syscall.CLONE_NEWPID
	}
	return a
}

// ownPIDNamespace reports, tried once, whether this process may start a
// child in a new PID namespace.
var ownPIDNamespace = sync.OnceValue(func() bool {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	return cmd.Run() == nil
})

// termSignal is the signal that asks the agent's process group to end: a
// bwrap that is pid 1 of its namespace ignores SIGTERM (it has no handler)
// and SIGTERM never reached the agent inside either (a session of its own),
// so such a turn is killed at once, as it effectively was before.
func termSignal(attr *syscall.SysProcAttr) syscall.Signal {
	if attr.Cloneflags&syscall.CLONE_NEWPID != 0 {
		return syscall.SIGKILL
	}
	return syscall.SIGTERM
}
