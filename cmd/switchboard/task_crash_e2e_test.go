package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// TestE2ETaskKilledMidRun: the gateway is killed (SIGKILL) while a
// scheduled task's turn runs. The slot was claimed with its turn queued, so
// after the restart the turn runs again and the slot ends with one run
// (CONTRACT §10: every slot at most once, across crashes), succeeded, and
// one reply in the task's chat; the task is completed.
func TestE2ETaskKilledMidRun(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: `if [ "$n" -eq 1 ]; then touch "$out/hanging"; while :; do sleep 0.05; done; fi
echo "task $SWITCHBOARD_TASK_ID ran in $SWITCHBOARD_FOLDER (turn $n)"`})
	g := startGW(t, dir)
	id := addTask(t, g.bin, dir, "--folder", "main", "--jid", "web:lobby", "--prompt", "report", "--schedule", soon().Format(time.RFC3339))
	testwait.For(t, 20*time.Second, "the task's turn to run", func() bool {
		_, err := os.Stat(filepath.Join(dir, "out", "main", "hanging"))
		return err == nil
	})
	if runs := taskRuns(t, g.bin, dir, id); len(runs) != 1 || runs[0].Status != "fired" {
		t.Fatalf("runs while the turn runs: %+v; want one fired", runs)
	}
	g.kill()

	g = startGW(t, dir)
	runs := waitRun(t, g.bin, dir, id)
	if len(runs) != 1 || runs[0].Status != "succeeded" {
		t.Errorf("runs %+v; want the one slot's run, succeeded after the restart", runs)
	}
	bots := g.waitBot("lobby", 1)
	if want := fmt.Sprintf("task %d ran in main (turn 2)", id); len(bots) != 1 || bots[0].Text != want {
		t.Errorf("lobby shows %+v; want %q once", bots, want)
	}
	if st := taskList(t, g.bin, dir)[id].Status; st != "completed" {
		t.Errorf("task is %s; want completed", st)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if n := turnCount(dir, "main"); n != 2 {
		t.Errorf("%d turns; want the killed one and its rerun", n)
	}
}
