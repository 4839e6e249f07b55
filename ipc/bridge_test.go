package ipc_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"switchboard/groups"
	"switchboard/internal/testlog"
	"switchboard/ipc"
)

// TestBridgeExitsWhenGatewayCloses: the bridge ends when the gateway side
// closes, even though its stdin is still open.
func TestBridgeExitsWhenGatewayCloses(t *testing.T) {
	path := filepath.Join(shortTempDir(t), "mcp.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		line := make([]byte, 64)
		n, _ := c.Read(line)
		c.Write(append([]byte("echo "), line[:n]...))
		c.Close()
	}()
	stdinR, stdinW := io.Pipe()
	defer stdinW.Close()
	go stdinW.Write([]byte("{\"ping\":1}\n"))
	var out testlog.Buffer
	done := make(chan error, 1)
	go func() { done <- ipc.BridgeSocket(context.Background(), path, "", stdinR, &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bridge did not exit after the gateway closed")
	}
	if got := out.String(); got != "echo {\"ping\":1}\n" {
		t.Errorf("bridge stdout %q", got)
	}
}

// TestGroupDirSocket: a group folder's working directory names its socket;
// a folder with a segment named "groups" is found by its live socket, else
// by the .mcp.json the gateway writes into every group folder.
func TestGroupDirSocket(t *testing.T) {
	data := filepath.Join(shortTempDir(t), "data")
	mkdir := func(parts ...string) string {
		d := filepath.Join(append([]string{data}, parts...)...)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return d
	}
	listen := func(path string) {
		ln, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
	}
	eng := mkdir("groups", "acme", "eng")
	listen(filepath.Join(mkdir("ipc", "acme", "eng"), "mcp.sock"))
	// acme/groups/x is a group folder; so, read from the inner "groups", is x
	// of a data dir at <data>/groups/acme, whose socket does not exist.
	nested := mkdir("groups", "acme", "groups", "x")
	listen(filepath.Join(mkdir("ipc", "acme", "groups", "x"), "mcp.sock"))
	// A group folder whose gateway is not running: found by its .mcp.json.
	idle := mkdir("groups", "idle")
	if err := os.WriteFile(filepath.Join(idle, ".mcp.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir, sock string
		folder          groups.Folder
	}{
		{"nested group", eng, filepath.Join(data, "ipc", "acme", "eng", "mcp.sock"), "acme/eng"},
		{"a groups segment in the folder", nested, filepath.Join(data, "ipc", "acme", "groups", "x", "mcp.sock"), "acme/groups/x"},
		{"no socket, a .mcp.json", idle, filepath.Join(data, "ipc", "idle", "mcp.sock"), "idle"},
		{"no group folder", mkdir("groups", "ghost"), "", ""},
		{"outside the data dir", t.TempDir(), "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sock, folder := ipc.GroupDirSocket(c.dir)
			if sock != c.sock || folder != c.folder {
				t.Errorf("GroupDirSocket(%s) = %q, %q, want %q, %q", c.dir, sock, folder, c.sock, c.folder)
			}
		})
	}
}
