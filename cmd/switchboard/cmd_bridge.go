package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"switchboard/groups"
	"switchboard/ipc"
)

func (a *app) mcpBridgeCommand() *cobra.Command {
	var sock, folder, url, ca string
	cmd := &cobra.Command{
		Use:   "mcp-bridge [--socket PATH | --folder FOLDER | --url URL [--ca FILE]]",
		Short: "Join stdin/stdout to a group's MCP server (socket or HTTP), for MCP clients that start a command",
		Long: `Connect an MCP client that speaks stdio (Claude Code, Codex, MCP Inspector) to a
group's MCP server: newline-delimited JSON-RPC from stdin goes to the group's
socket, and everything the gateway sends comes out on stdout.

The server is, in this order: --socket PATH; --folder FOLDER (under the config's
data_dir); --url URL, the gateway's MCP HTTP endpoint (mcp.listen), with the
bearer token read from $SWITCHBOARD_MCP_TOKEN (never from the command line,
where other users could read it); $SWITCHBOARD_MCP_URL with
$SWITCHBOARD_MCP_TOKEN, which the gateway sets for every turn when mcp.listen is
on; $SWITCHBOARD_MCP_SOCKET, which the gateway sets for every agent turn;
else the working directory's group, when it is a group folder
(<data_dir>/groups/<folder> → <data_dir>/ipc/<folder>/mcp.sock). So inside a turn
"switchboard mcp-bridge" with no flags joins the turn's own group, and one global
MCP client entry (Codex's ~/.codex/config.toml) serves every group. Each group
folder's .mcp.json (read by Claude Code) runs it with --socket.

The bridge exits when the gateway closes the connection, or when stdin ends and
the answers to the requests sent so far have arrived. Whoever runs it acts as the
group: the socket is mode 0600 and only the gateway's own user may connect; over
HTTP the token decides the group. --ca FILE (or $SWITCHBOARD_MCP_CA) trusts a PEM
certificate besides the system's, for a gateway with a self-signed mcp.tls_cert.`,
		Example: `  switchboard mcp-bridge                      # inside an agent turn, or with cwd in a group folder
  switchboard mcp-bridge --folder main
  switchboard mcp-bridge --socket /srv/switchboard/data/ipc/acme/eng/mcp.sock
  SWITCHBOARD_MCP_TOKEN=sbt_... switchboard mcp-bridge --url https://gw.example.net:8422/mcp --ca gw.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" && sock == "" && folder == "" {
				url = a.getenv("SWITCHBOARD_MCP_URL")
			}
			if url != "" {
				return a.bridgeURL(cmd.Context(), url, ca, sock != "" || folder != "")
			}
			path, group, err := a.bridgeSocket(sock, folder)
			if err != nil {
				return err
			}
			return ipc.BridgeSocket(cmd.Context(), path, group, a.stdin, a.stdout)
		},
	}
	cmd.Flags().StringVar(&sock, "socket", "", "path of the group's MCP socket (<data_dir>/ipc/<folder>/mcp.sock)")
	cmd.Flags().StringVar(&folder, "folder", "", "group folder; the socket is found under the config's data_dir")
	cmd.Flags().StringVar(&url, "url", "", "the gateway's MCP HTTP endpoint (mcp.listen), e.g. https://gw:8422/mcp; the token is read from $SWITCHBOARD_MCP_TOKEN")
	cmd.Flags().StringVar(&ca, "ca", "", "PEM file of a certificate to trust for --url (default $SWITCHBOARD_MCP_CA)")
	return cmd
}

// bridgeURL joins stdio to the MCP HTTP endpoint at url.
func (a *app) bridgeURL(ctx context.Context, url, ca string, socketToo bool) error {
	if socketToo {
		return usagef("give one of --socket PATH, --folder FOLDER and --url URL")
	}
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return usagef("--url %q: want the endpoint's http(s) URL, e.g. https://gw.example.net:8422/mcp", url)
	}
	token := a.getenv("SWITCHBOARD_MCP_TOKEN")
	if token == "" {
		return usagef("no token for %s: set SWITCHBOARD_MCP_TOKEN (the gateway sets it for every turn; an operator mints one with switchboard token add FOLDER)", url)
	}
	if ca == "" {
		ca = a.getenv("SWITCHBOARD_MCP_CA")
	}
	hc, err := ipc.HTTPClient(ca)
	if err != nil {
		return fmt.Errorf("mcp-bridge: %w", err)
	}
	return ipc.BridgeHTTP(ctx, ipc.HTTPEndpoint{URL: url, Token: token, Client: hc}, a.stdin, a.stdout, a.stderr)
}

// bridgeSocket picks the socket mcp-bridge joins, and the group's folder
// when it is known (for the error message): --socket, --folder, then
// $SWITCHBOARD_MCP_SOCKET, then the working directory's group.
func (a *app) bridgeSocket(sock, name string) (string, groups.Folder, error) {
	var folder groups.Folder
	switch {
	case sock != "" && name != "":
		return "", "", usagef("give one of --socket PATH and --folder FOLDER, not both")
	case name != "":
		f, err := groups.ParseFolder(name)
		if err != nil {
			return "", "", usageError{err: err}
		}
		folder = f
		if err := a.load(); err != nil {
			return "", "", err
		}
		sock = groups.Layout{DataDir: a.cfg.DataDir}.SocketPath(folder)
	case sock == "":
		sock = a.getenv("SWITCHBOARD_MCP_SOCKET")
	}
	if sock == "" {
		wd, err := os.Getwd()
		if err == nil {
			sock, folder = ipc.GroupDirSocket(wd)
		}
		if sock == "" {
			return "", "", usagef("no socket to join: give --socket PATH or --folder FOLDER, set SWITCHBOARD_MCP_SOCKET " +
				"(the gateway sets it for every agent turn), or run it with a group folder (<data_dir>/groups/<folder>) as the working directory")
		}
	}
	if abs, err := filepath.Abs(sock); err == nil {
		sock = abs
	}
	return sock, folder, nil
}
