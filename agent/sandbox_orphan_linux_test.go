package agent

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// A gateway that dies (SIGKILL) while bubblewrap is still setting up the
// sandbox must not leave the sandbox behind. bwrap's --die-with-parent
// protects its inner process (pid 1 of the agent's PID namespace) only from
// late in the setup on: until then, if the outer bwrap dies, the inner one
// waits forever (seen: blocked reading the eventfd the outer bwrap never
// wrote, orphaned, for minutes). --block-fd holds the inner bwrap in that
// unprotected stretch here. The gateway's death is its forking thread's:
// Pdeathsig fires on it, as it does when the whole process is killed.
func TestSandboxDiesWithGatewayDuringSetup(t *testing.T) {
	t.Parallel()
	real := sandboxFor(t, "").Bwrap
	data, _ := dataDir(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "block")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened read-write, the fifo never has data nor EOF: the inner bwrap
	// blocks on it for good.
	wrapper := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\nexec " + real + " --block-fd 9 \"$@\" 9<>" + fifo + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	sb := sandboxFor(t, data)
	sb.Bwrap = wrapper
	turn := TurnID("t-orphan-" + strconv.Itoa(os.Getpid()))
	mark := []byte(turn.envEntry())
	marked := func() []int {
		var pids []int
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil || !environMarked(pid, func(kv []byte) bool { return bytes.Equal(kv, mark) }) {
				continue
			}
			pids = append(pids, pid)
		}
		return pids
	}
	t.Cleanup(func() { _, _ = killTurnLeftovers(string(mark)) })

	var p *proc
	onThrowawayThread(func() {
		var err error
		p, err = start(context.Background(), Spec{Command: []string{"/bin/sleep", "60"}, Sandbox: sb},
			Input{Dir: filepath.Join(data, "groups", "main"), TurnID: turn})
		if err != nil {
			t.Error(err)
			return
		}
		// Both bwraps up, the inner one blocked in its setup, before the
		// thread ends.
		testwait.For(t, 5*time.Second, "the outer and inner bwrap", func() bool { return len(marked()) >= 2 })
	})
	if p == nil {
		return
	}
	// The forking thread is gone: the outer bwrap got its SIGKILL.
	testwait.For(t, 5*time.Second, "the outer bwrap killed", func() bool {
		return syscall.Kill(p.cmd.Process.Pid, 0) != nil || isZombie(p.cmd.Process.Pid)
	})
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && len(marked()) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
	if left := marked(); len(left) > 0 {
		t.Errorf("processes of the turn outlived its gateway: %v", left)
	}
	_ = p.wait()
}

// isZombie reports whether pid has exited but is not reaped yet.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}

// onThrowawayThread runs f on an OS thread that ends when f returns. (A
// goroutine that exits locked ends its thread, except the main thread's:
// the main thread is then kept busy while another one runs f.)
func onThrowawayThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		if syscall.Gettid() == syscall.Getpid() {
			defer runtime.UnlockOSThread()
			onThrowawayThread(f)
			return
		}
		f()
	}()
	<-done
}
