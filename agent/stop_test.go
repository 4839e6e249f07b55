package agent

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
)

// stubbornTree is an agent (its first argument a marker) that ignores
// SIGTERM and leaves a child that ignores it too, whose argv holds
// "<marker>-child" (in no other process's argv) so that the test finds
// the child's pid on the host also when it runs in a sandbox's PID
// namespace. It prints a Claude Code init line first.
const stubbornTree = `trap '' TERM
echo '{"type":"system","subtype":"init","session_id":"sess-stopped"}'
sh -c "trap '' TERM; sleep 1000; true" "$1-child" &
while :; do wait; done`

// pidsByArgv lists the host pids whose command line holds marker.
func pidsByArgv(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(marker)) && !processGone(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// runStopped runs spec, stops the turn once the marked child runs, and
// checks what a stopped turn returns: ErrStopped and ErrCancelled, never
// ErrFailed, the session the agent named, and every process of the turn
// gone after the stop (SIGTERM ignored: the SIGKILL stopGrace later ends
// them). How soon is a figure, not an assertion here: the test logs it, and
// gateway's BenchmarkStopCommand measures it (p50 ~1 ms, ~1 s when SIGTERM is
// ignored); the 10 s bound only stops a test whose tree never goes.
func runStopped(t *testing.T, spec Spec, in Input, marker string) {
	t.Helper()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(ctx, spec, in)
		done <- outcome{res, err}
	}()
	var pids []int
	marker += "-child"
	testwait.For(t, 10*time.Second, "the agent's child to run", func() bool { pids = pidsByArgv(marker); return len(pids) > 0 })
	stopped := time.Now()
	stop(ErrStopped)
	gone := testwait.Until(10*time.Second, func() bool { return len(pidsByArgv(marker)) == 0 })
	t.Logf("stop → process tree gone: %v", time.Since(stopped))
	if !gone {
		for _, pid := range pidsByArgv(marker) {
			_ = killPid(pid)
		}
		t.Fatalf("the turn's child %v outlived the stop by 10 s", pids)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
	t.Logf("stop → Run returned: %v", time.Since(stopped))
	if !errors.Is(o.err, ErrStopped) || !errors.Is(o.err, ErrCancelled) || errors.Is(o.err, ErrFailed) {
		t.Fatalf("err = %v; want ErrStopped and ErrCancelled, not ErrFailed", o.err)
	}
	if o.res.TimedOut {
		t.Error("a stopped turn says it timed out")
	}
	if spec.Output == OutputClaudeStream && o.res.SessionID != "sess-stopped" {
		t.Errorf("session %q; want the one the agent's init line named, for the next turn to resume", o.res.SessionID)
	}
}

func TestRunStoppedKillsTheTree(t *testing.T) {
	t.Parallel()
	marker := "stop-marker-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	spec := Spec{Command: testagent.Script(t, stubbornTree, marker), Output: OutputClaudeStream, Timeout: time.Minute}
	runStopped(t, spec, Input{TurnID: "t-stop-local"}, marker)
}

// In the sandbox the agent runs in a new session (bwrap --new-session),
// out of the process group that the stop signals: the PID namespace,
// ended with bwrap, takes it along.
func TestRunStoppedKillsTheSandboxedTree(t *testing.T) {
	t.Parallel()
	data, _ := dataDir(t)
	marker := "stop-marker-bwrap-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	spec := Spec{Command: []string{"/bin/sh", "-c", stubbornTree, "sh", marker}, Output: OutputClaudeStream, Timeout: time.Minute,
		Sandbox: sandboxFor(t, data)}
	runStopped(t, spec, Input{Dir: filepath.Join(data, "groups", "main")}, marker)
}

func killPid(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
