package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// What a killed gateway left running (in a session of its own, as bwrap's
// inner process is) is found by its MCP socket path at the next start,
// killed and described for the log; another data directory's agent is left
// alone.
func TestKillLeftovers(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "ipc")
	other := filepath.Join(t.TempDir(), "ipc")
	spawn := func(sockRoot string, turn TurnID) *exec.Cmd {
		cmd := exec.Command("/bin/sleep", "60")
		cmd.Env = []string{"SWITCHBOARD_MCP_SOCKET=" + filepath.Join(sockRoot, "main", "mcp.sock"), turn.envEntry()}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	left := spawn(root, "t-left")
	mine := spawn(other, "t-other")
	// The environment is readable once exec is done.
	testwait.For(t, 5*time.Second, "the processes to start", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(left.Process.Pid) + "/comm")
		return err == nil && string(b) == "sleep\n"
	})
	killed, err := KillLeftovers(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0] != (Reaped{PID: left.Process.Pid, Command: "sleep", Turn: "t-left"}) {
		t.Errorf("KillLeftovers = %+v; want the one sleep of turn t-left (pid %d)", killed, left.Process.Pid)
	}
	if err := left.Wait(); err == nil {
		t.Error("the leftover process exited by itself; want it killed")
	}
	if err := mine.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("another data directory's agent was touched: %v", err)
	}
}
