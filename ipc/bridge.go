package ipc

// The bridge's client side: what `switchboard mcp-bridge` runs, joining an
// MCP client that speaks stdio (Claude Code, Codex, MCP Inspector) to a
// group's MCP server, over the group's socket (here) or the MCP HTTP
// endpoint (bridge_http.go). Both ends of the agent's channel live in this
// package; cmd only picks the server from flags and the environment.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"switchboard/groups"
)

// bridgeFlushTimeout bounds how long the bridge waits, after its stdin
// ended, for the gateway to answer the requests already sent.
const bridgeFlushTimeout = 35 * time.Second

// BridgeSocket copies stdin to the group's socket at path and the socket to
// stdout until the gateway closes the connection or ctx ends. When stdin
// ends first, the bridge closes its sending side and waits (bounded) for the
// remaining answers. folder, when known, names the group in the error for a
// socket nobody serves.
func BridgeSocket(ctx context.Context, path string, folder groups.Folder, stdin io.Reader, stdout io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			group := folder
			if group == "" {
				group = "the group"
			} else {
				group = "group " + group
			}
			return fmt.Errorf("no MCP socket at %s: is the gateway running and does %s exist?", path, group)
		}
		return fmt.Errorf("connect to %s: %w", path, err)
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()

	fromGateway := make(chan error, 1)
	go func() {
		_, err := io.Copy(stdout, conn)
		fromGateway <- err
	}()
	stdinDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stdin)
		_ = conn.CloseWrite()
		stdinDone <- err
	}()

	select {
	case err := <-fromGateway:
		return copyErr("gateway to stdout", err)
	case <-ctx.Done():
		return nil
	case err := <-stdinDone:
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("stdin to gateway: %w", err)
		}
	}
	select {
	case err := <-fromGateway:
		return copyErr("gateway to stdout", err)
	case <-ctx.Done():
		return nil
	case <-time.After(bridgeFlushTimeout):
		return ErrFlushTimeout
	}
}

func copyErr(what string, err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// GroupDirSocket returns the MCP socket and folder of the group whose
// folder is dir (<data_dir>/groups/<folder>, see groups.Layout), or "" when
// dir is not a group folder. A folder may itself contain a segment named
// "groups", so every such ancestor is tried: the first whose socket exists
// wins, else the first whose directory holds the .mcp.json the gateway
// writes into every group folder.
func GroupDirSocket(dir string) (sock string, folder groups.Folder) {
	dir = filepath.Clean(dir)
	for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
		root := filepath.Dir(d)
		if filepath.Base(root) != "groups" {
			continue
		}
		rel, err := filepath.Rel(root, dir)
		f := groups.Folder(filepath.ToSlash(rel))
		if err != nil || f.Validate() != nil {
			continue
		}
		s := groups.Layout{DataDir: filepath.Dir(root)}.SocketPath(f)
		if fi, err := os.Stat(s); err == nil && fi.Mode().Type() == fs.ModeSocket {
			return s, f
		}
		if sock == "" {
			if _, err := os.Stat(filepath.Join(dir, ".mcp.json")); err == nil {
				sock, folder = s, f
			}
		}
	}
	return sock, folder
}
