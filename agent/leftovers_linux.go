package agent

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Without a sandbox, an agent's child that called setsid or double-forked
// leaves the agent's process group, so neither the group kill at the end of
// a turn nor Pdeathsig (which reaches only the direct child) ends it. Every
// agent process inherits the turn's environment, though, so such processes
// are found by it in /proc: SWITCHBOARD_TURN_ID at the end of a turn, and
// SWITCHBOARD_MCP_SOCKET (a path under this data directory's ipc/) at a
// restart after a crash. Only processes of this user can be read, and only
// those are ours. A process that replaced its whole environment (env -i)
// escapes the scan; the sandbox's PID namespace has no such gap.

// KillLeftovers kills the agent processes a crashed gateway left behind:
// those whose SWITCHBOARD_MCP_SOCKET lies under socketRoot (the data
// directory's socket root, which no other gateway shares). It reports the
// processes killed and the last error.
func KillLeftovers(socketRoot string) ([]Reaped, error) {
	root, err := filepath.Abs(socketRoot)
	if err != nil {
		return nil, err
	}
	prefix := []byte("SWITCHBOARD_MCP_SOCKET=" + root + string(filepath.Separator))
	return killAllMarked(func(kv []byte) bool { return bytes.HasPrefix(kv, prefix) })
}

// killTurnLeftovers kills what is left of an unsandboxed turn whose
// environment env holds turnEntry (SWITCHBOARD_TURN_ID=…), after its process
// group was killed. It reports the processes killed and the last error.
func killTurnLeftovers(turnEntry string) (int, error) {
	if turnEntry == "" {
		return 0, nil
	}
	entry := []byte(turnEntry)
	killed, err := killAllMarked(func(kv []byte) bool { return bytes.Equal(kv, entry) })
	return len(killed), err
}

// killAllMarked scans until a scan finds nothing (a few rounds at most): a
// process killed mid-fork can leave a child the scan before did not see.
func killAllMarked(marked func(kv []byte) bool) ([]Reaped, error) {
	var all []Reaped
	seen := map[int]bool{} // killed already: a process the kernel has not finished yet shows again
	var lastErr error
	for range 5 {
		killed, err := killMarked(marked)
		if err != nil {
			lastErr = err
		}
		fresh := 0
		for _, r := range killed {
			if !seen[r.PID] {
				seen[r.PID] = true
				all = append(all, r)
				fresh++
			}
		}
		if fresh == 0 {
			break
		}
	}
	return all, lastErr
}

// killMarked sends SIGKILL to every process (but this one) with an
// environment entry that marked accepts, and returns those it killed.
func killMarked(marked func(kv []byte) bool) ([]Reaped, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var killed []Reaped
	var lastErr error
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		r, ok, err := killIfMarked(pid, marked)
		if ok {
			killed = append(killed, r)
		}
		if err != nil {
			lastErr = err
		}
	}
	return killed, lastErr
}

// killIfMarked kills process pid if its environment is marked. A marked
// process is pinned by a pidfd and its environment read again: a pid
// reused in between is then either never signalled (the pidfd's process is
// gone: ESRCH) or marked itself.
func killIfMarked(pid int, marked func(kv []byte) bool) (Reaped, bool, error) {
	if !environMarked(pid, marked) {
		return Reaped{}, false, nil
	}
	var err error
	r := describe(pid)
	if pidfd, ok := pidfdOpen(pid); ok {
		defer syscall.Close(pidfd)
		if !environMarked(pid, marked) {
			return Reaped{}, false, nil
		}
		r = describe(pid)
		err = pidfdKill(pidfd)
	} else {
		err = syscall.Kill(pid, syscall.SIGKILL)
	}
	if errors.Is(err, syscall.ESRCH) {
		return Reaped{}, false, nil
	}
	if err != nil {
		return Reaped{}, false, &os.SyscallError{Syscall: "kill " + strconv.Itoa(pid), Err: err}
	}
	return r, true, nil
}

// describe says which process pid is, for the log: its command name and
// the turn its environment names.
func describe(pid int) Reaped {
	r := Reaped{PID: pid}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm"); err == nil {
		r.Command = string(bytes.TrimSpace(b))
	}
	prefix := []byte("SWITCHBOARD_TURN_ID=")
	environMarked(pid, func(kv []byte) bool {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			r.Turn = TurnID(v)
		}
		return false
	})
	return r
}

// environMarked reports whether process pid's environment has an entry
// that marked accepts; false when it is gone, another user's or a zombie.
func environMarked(pid int, marked func(kv []byte) bool) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if marked(kv) {
			return true
		}
	}
	return false
}

// The pidfd system calls have the same numbers on every Linux architecture.
const (
	sysPidfdSendSignal = 424
	sysPidfdOpen       = 434
)

// pidfdOpen pins process pid; false when the kernel lacks pidfds (before
// 5.3) or the process is gone.
func pidfdOpen(pid int) (int, bool) {
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return -1, false
	}
	return int(fd), true
}

func pidfdKill(pidfd int) error {
	_, _, errno := syscall.Syscall6(sysPidfdSendSignal, uintptr(pidfd), uintptr(syscall.SIGKILL), 0, 0, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
