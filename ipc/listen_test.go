package ipc

import (
	"bufio"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSocketPathTooLong(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, strings.Repeat("d", 120), "ipc", "acme", "mcp.sock")
	_, err := listenSocket("acme", long)
	if !errors.Is(err, ErrSocketPath) {
		t.Fatalf("err = %v, want ErrSocketPath", err)
	}
	for _, want := range []string{"group acme", "shorter data_dir", long} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestSocketInUseIsNotStolen(t *testing.T) {
	dir, err := os.MkdirTemp("", "sb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "mcp.sock")
	ln, err := listenSocket("acme", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := listenSocket("acme", path); !errors.Is(err, ErrSocketInUse) {
		t.Fatalf("second listener: %v, want ErrSocketInUse", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the live socket was removed: %v", err)
	}
	// A regular file in the way is not deleted either.
	other := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := listenSocket("acme", other); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("regular file: %v", err)
	}
}

// TestPeerRefused: a peer running as another user is disconnected before
// it is served.
func TestPeerRefused(t *testing.T) {
	s := &Server{opt: Options{AllowedUIDs: []int{4242}}}
	dir, err := os.MkdirTemp("", "sb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := listenSocket("acme", filepath.Join(dir, "mcp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// A unix socket connects once the listener's backlog holds it, before
	// the accept.
	peer, err := net.Dial("unix", filepath.Join(dir, "mcp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	c, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := s.checkPeer(c); err != nil {
		t.Fatalf("own uid refused: %v", err)
	}
	saved := ownUID
	defer func() { ownUID = saved }()
	ownUID = saved + 1 // as if the gateway ran as someone else
	if err := s.checkPeer(c); !errors.Is(err, ErrPeer) {
		t.Errorf("foreign uid: %v, want ErrPeer", err)
	}
	s.opt.AllowedUIDs = []int{saved}
	if err := s.checkPeer(c); err != nil {
		t.Errorf("allowed uid refused: %v", err)
	}
}

func TestReadLine(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 50) + "\n  padded  \nlast"
	r := bufio.NewReaderSize(strings.NewReader(in), 16)
	type res struct {
		line    string
		tooLong bool
	}
	var got []res
	for {
		line, tooLong, err := ReadLine(r, 20)
		got = append(got, res{string(line), tooLong})
		if err != nil {
			break
		}
	}
	want := []res{{"short", false}, {"", true}, {"padded", false}, {"last", false}}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// A group's socket directory that is a symlink (a parent group's agent can
// swap its subgroup's for one, to another group's directory) is not
// listened in: the other group's socket stays where it is.
func TestListenRefusesSymlinkedSocketDir(t *testing.T) {
	tmp, err := os.MkdirTemp("", "sb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	root := filepath.Join(tmp, "ipc")
	other := filepath.Join(root, "other")
	if err := os.MkdirAll(filepath.Join(root, "acme"), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := listenSocket("other", filepath.Join(other, "mcp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	ln.Close() // a stale socket now, which listenSocket would remove
	if err := os.Symlink("../other", filepath.Join(root, "acme", "eng")); err != nil {
		t.Fatal(err)
	}
	if _, err := listenSocket("acme/eng", filepath.Join(root, "acme", "eng", "mcp.sock")); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("listen through a symlinked socket directory: %v; want an error saying it is a symlink", err)
	}
}
