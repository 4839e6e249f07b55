package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"switchboard/groups"
)

// bridgeFlushTimeout bounds how long the bridge waits, after its stdin
// ended, for the gateway to answer the requests already sent.
const bridgeFlushTimeout = 35 * time.Second

func (a *app) mcpBridgeCommand() *cobra.Command {
	var sock, folder string
	cmd := &cobra.Command{
		Use:   "mcp-bridge --socket PATH | --folder FOLDER",
		Short: "Join stdin/stdout to a group's MCP socket, for MCP clients that start a command",
		Long: `Connect an MCP client that speaks stdio (Claude Code, Codex, MCP Inspector) to a
group's MCP server: newline-delimited JSON-RPC from stdin goes to the group's
socket, and everything the gateway sends comes out on stdout. Each group folder's
.mcp.json already runs this command. The bridge exits when the gateway closes
the connection, or when stdin ends and the answers to the requests sent so far
have arrived. Whoever runs it acts as the group: the socket is mode 0600 and
only the gateway's own user may connect.`,
		Example: `  switchboard mcp-bridge --folder main
  switchboard mcp-bridge --socket /srv/switchboard/data/ipc/acme/eng/mcp.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (sock == "") == (folder == "") {
				return usagef("give exactly one of --socket PATH and --folder FOLDER")
			}
			if folder != "" {
				if err := groups.Validate(folder); err != nil {
					return usageError{err}
				}
				if err := a.load(); err != nil {
					return err
				}
				sock = groups.Layout{DataDir: a.cfg.DataDir}.SocketPath(folder)
			}
			if abs, err := filepath.Abs(sock); err == nil {
				sock = abs
			}
			return bridge(cmd.Context(), sock, folder, a.stdin, a.stdout)
		},
	}
	cmd.Flags().StringVar(&sock, "socket", "", "path of the group's MCP socket (<data_dir>/ipc/<folder>/mcp.sock)")
	cmd.Flags().StringVar(&folder, "folder", "", "group folder; the socket is found under the config's data_dir")
	return cmd
}

// bridge copies stdin to the socket and the socket to stdout until the
// gateway closes the connection. When stdin ends first, the bridge closes
// its sending side and waits (bounded) for the remaining answers.
func bridge(ctx context.Context, path, folder string, stdin io.Reader, stdout io.Writer) error {
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
		return errors.New("the gateway did not finish answering within the flush timeout after stdin closed")
	}
}

func copyErr(what string, err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
