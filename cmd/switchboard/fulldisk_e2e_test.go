package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testenv"
	"switchboard/internal/testwait"
)

// smallDisk mounts a tmpfs of size bytes at path until the test ends.
// Where it cannot (not root, no right to mount) the test is unavailable:
// skipped outside CI, failed with CI set (make test runs as root, as it
// must to install the tests' packages).
func smallDisk(t *testing.T, path string, size int) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "mounting a small tmpfs as a full disk needs root (run the tests as root)")
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", path, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		testenv.Unavailable(t, "mount a tmpfs at %s: %v (the tests need the right to mount: run them as root, outside a container that forbids it)", path, err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(path, syscall.MNT_DETACH) })
}

// fillDisk writes a file in dir until the disk is full and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "fill")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// TestE2EFullDiskMidRun: the data directory's disk fills up while the
// gateway runs and people write. A message the gateway cannot store is
// refused (a 5xx saying so), never acknowledged and lost; once the
// operator frees space, without a restart, every acknowledged message is
// answered once and the chat goes on. Meanwhile a turn whose record the
// store refuses waits for it (its agent is not run again), and the outbox
// does not spin on the store (a log line per try, thousands a second).
func TestE2EFullDiskMidRun(t *testing.T) {
	t.Parallel()
	// The second turn waits for "go": it runs, and answers, while the
	// disk is full.
	dir := newE2E(t, e2eConfig{agent: `[ "$n" -eq 2 ] && while [ ! -e "$E2E_OUT/go" ]; do sleep 0.05; done
` + ackAgent})
	data := filepath.Join(dir, "data")
	smallDisk(t, data, 3<<20)
	g := startGW(t, dir)
	first := g.mustPost("lobby", "ann", "before the disk fills")
	g.waitBot("lobby", 1)

	held := g.mustPost("lobby", "ann", "answered while the disk is full")
	testwait.For(t, 20*time.Second, "the second turn to start", func() bool { return turnCount(dir, "main") == 2 })
	fill := fillDisk(t, data)
	acked := []string{first, held}
	refused := 0
	big := strings.Repeat("x", 4000)
	for k := range 12 {
		status, id, err := g.post(context.Background(), "lobby", "ann", fmt.Sprintf("while full %d %s", k, big), "")
		switch {
		case err != nil:
			t.Fatalf("post %d: %v", k, err)
		case status == http.StatusAccepted:
			acked = append(acked, id)
		case status >= 500:
			refused++
		default:
			t.Fatalf("post %d: status %d", k, status)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "out", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	answered := func() map[string]int {
		n := map[string]int{}
		for _, m := range g.botMessages("lobby") {
			for _, id := range strings.Fields(strings.TrimPrefix(m.Text, "ack ")) {
				n[id]++
			}
		}
		return n
	}
	// Usually the store refuses to record the turn or its reply; where
	// SQLite still had room in its files, the turn is answered at once.
	testwait.For(t, 20*time.Second, "the store to refuse to record the turn or its reply", func() bool {
		return strings.Contains(g.logText(), `"msg":"record `) || answered()[held] > 0
	})
	t.Logf("%d acknowledged, %d refused while the disk was full; a record refused: %v", len(acked)-2, refused, strings.Contains(g.logText(), `"msg":"record `))
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	closer := g.mustPost("lobby", "ann", "after the space was freed")
	acked = append(acked, closer)
	testwait.For(t, 60*time.Second, "every acknowledged message answered", func() bool {
		n := answered()
		for _, id := range acked {
			if n[id] == 0 {
				return false
			}
		}
		return true
	})
	for id, n := range answered() {
		if n > 1 {
			t.Errorf("message %s answered %d times", id, n)
		}
	}
	runs := 0
	for i := 1; i <= turnCount(dir, "main"); i++ {
		if strings.Contains(turnFile(t, dir, "main", "prompt", i), held) {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("the agent ran %d times for the message answered while the disk was full; want once", runs)
	}
	if n := len(g.records("claim outbox item", "", "")); n > 100 {
		t.Errorf("%d \"claim outbox item\" errors logged: the outbox spun on the full disk", n)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
