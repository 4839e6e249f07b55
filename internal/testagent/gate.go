package testagent

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Gate holds a scripted agent part way through its output until the test
// has seen an event from it: the script reads a line from Path
// (`read -r go < PATH`), and the test calls Seen from its OnEvent. The
// first Seen writes "released\n" to Path; Wait returns that write's error,
// or an error if no event came within the timeout.
type Gate struct {
	Path  string
	first chan struct{}
	once  sync.Once
	done  chan error
}

// NewGate makes the FIFO in a temp dir and starts waiting for the first
// event, for at most timeout.
func NewGate(t testing.TB, timeout time.Duration) *Gate {
	t.Helper()
	g := &Gate{Path: filepath.Join(t.TempDir(), "go-on"), first: make(chan struct{}), done: make(chan error, 1)}
	if err := syscall.Mkfifo(g.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case <-g.first:
		case <-time.After(timeout):
			g.done <- fmt.Errorf("no event within %v", timeout)
			return
		}
		f, err := os.OpenFile(g.Path, os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("released\n")
			f.Close()
		}
		g.done <- err
	}()
	return g
}

// Seen releases the agent; calls after the first do nothing.
func (g *Gate) Seen() { g.once.Do(func() { close(g.first) }) }

// Wait returns once the agent was released or the timeout passed.
func (g *Gate) Wait() error { return <-g.done }
