package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"switchboard/adapters"
	"switchboard/remote"
)

func (a *app) natsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "nats",
		Short: "Credentials of the NATS clients (agent.runner nats): workers, the gateway",
		Long: `Every client of the NATS server that carries turns to workers authenticates
with an nkey and gets only its role's permissions: the gateway manages the
streams, publishes jobs and reads results; a worker reads only its own jobs and
publishes only its own results. A running turn's traffic travels on NATS too,
each on a subject naming its worker and turn: the gateway publishes stops
(switchboard.stop.*) and steering inputs (switchboard.input.*), the worker
publishes that it took the job (switchboard.taken.*), the turn's live events
(switchboard.events.*) and input acks (switchboard.inputack.*); a worker reads
only its own turns' stops and inputs. An anonymous client is refused.

The embedded server (nats.embedded) makes the gateway's credentials at first
start, in <data_dir>/nats-auth/gateway.creds (mode 0600), and accepts the
workers registered in <data_dir>/nats-auth/workers: "nats worker add" registers
one, and the running gateway takes it within 2 seconds (no restart);
"nats worker rm" unregisters one and the server closes its connections.

With a NATS server of your own (nats.url), give it the same users and
permissions (deploy/nats-server.conf) with the public keys these commands
print, and the gateway its credentials in nats.creds (see "nats gateway-creds").
docs/scaling.md, "Who may do what on NATS".`,
	}
	worker := &cobra.Command{Use: "worker", Short: "Add, list and remove the workers that may connect"}
	var out string
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Mint worker NAME's credentials (a 0600 file) and let it connect",
		Long: `Mint worker NAME's credentials: an nkey seed in a file of mode 0600, by default
<data_dir>/nats-auth/workers/NAME.creds, never written over. Copy it to the
worker machine, into the worker's data_dir (its agents' sandbox hides that
directory), and set nats.creds to it in the worker's config (or pass --creds).
NAME is the worker's id (letters, digits, _ and -): its subjects, its consumer
and its line in "switchboard status"; the server lets these credentials use
that id's subjects and no other.`,
		Example: `  switchboard nats worker add gpu1
  switchboard nats worker add gpu1 --out /tmp/gpu1.creds`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.natsWorkerAdd(args[0], out) },
	}
	add.Flags().StringVar(&out, "out", "", "where to write the credentials (default <data_dir>/nats-auth/workers/NAME.creds)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the registered workers and their public keys",
		Args:  cobra.NoArgs,
		RunE:  func(*cobra.Command, []string) error { return a.natsWorkerList() },
	}
	rm := &cobra.Command{
		Use:   "rm NAME",
		Short: "Unregister worker NAME: its connections are closed, its credentials refused",
		Args:  cobra.ExactArgs(1),
		RunE:  func(_ *cobra.Command, args []string) error { return a.natsWorkerRemove(args[0]) },
	}
	worker.AddCommand(add, list, rm)
	requireSubcommand(worker)
	var gwOut string
	gw := &cobra.Command{
		Use:   "gateway-creds --out FILE",
		Short: "Mint gateway credentials for a NATS server of your own (nats.url)",
		Long: `Mint credentials for the gateway on a NATS server of your own: an nkey seed in
FILE (mode 0600, never written over). Set nats.creds to FILE in the gateway's
config and give the printed public key the gateway's permissions in the
server's configuration (deploy/nats-server.conf). The embedded server makes
its own at first start; this command is not needed for it.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return a.natsGatewayCreds(gwOut) },
	}
	gw.Flags().StringVar(&gwOut, "out", "", "where to write the credentials (required)")
	cmd.AddCommand(worker, gw)
	return cmd
}

func (a *app) natsWorkerAdd(name, out string) error {
	if err := a.load(); err != nil {
		return err
	}
	c, err := remote.AddWorker(remote.AuthDir(a.cfg.DataDir), name, out)
	if errors.Is(err, remote.ErrWorkerName) || errors.Is(err, remote.ErrWorkerExists) {
		return usagef("%v", err)
	}
	if err != nil {
		return err
	}
	return a.emit(map[string]any{"worker": c.Worker, "path": c.Path, "public_key": c.Public}, func(w io.Writer) {
		fmt.Fprintf(w, `worker %s: credentials written to %s (mode 0600; keep them secret)
public key: %s
On the worker: copy the file into its data_dir and set nats.creds to it (or pass --creds).
The embedded server accepts it within 2 s; on a server of your own, give this key worker %s's
permissions (deploy/nats-server.conf).
`, c.Worker, c.Path, c.Public, c.Worker)
	})
}

func (a *app) natsWorkerList() error {
	if err := a.load(); err != nil {
		return err
	}
	ws, err := remote.RegisteredWorkers(remote.AuthDir(a.cfg.DataDir))
	if err != nil {
		return err
	}
	return a.emit(ws, func(w io.Writer) {
		fmt.Fprintln(w, "WORKER\tPUBLIC KEY")
		for _, id := range slices.Sorted(maps.Keys(ws)) {
			fmt.Fprintf(w, "%s\t%s\n", id, ws[id])
		}
	})
}

func (a *app) natsWorkerRemove(name string) error {
	if err := a.load(); err != nil {
		return err
	}
	if err := remote.RemoveWorker(remote.AuthDir(a.cfg.DataDir), name); errors.Is(err, remote.ErrWorkerUnknown) {
		return usagef("%v (see switchboard nats worker list)", err)
	} else if err != nil {
		return err
	}
	return a.emit(map[string]any{"worker": name, "removed": true}, func(w io.Writer) {
		fmt.Fprintf(w, "worker %s removed: the embedded server refuses its credentials within 2 s\n", name)
	})
}

func (a *app) natsGatewayCreds(out string) error {
	if out == "" {
		return usagef("--out FILE: where to write the gateway's credentials")
	}
	c, err := remote.MintGatewayCreds(out)
	if err != nil {
		return err
	}
	return a.emit(map[string]any{"path": c.Path, "public_key": c.Public}, func(w io.Writer) {
		fmt.Fprintf(w, "gateway credentials written to %s (mode 0600; keep them secret)\npublic key: %s\n"+
			"Set nats.creds: %s in the gateway's config, and give this key the gateway's permissions (deploy/nats-server.conf).\n",
			c.Path, c.Public, c.Path)
	})
}

// natsCreds is the credentials file of the CLI's NATS client (status):
// nats.creds, else, beside a gateway with an embedded server, its
// gateway credentials.
func (a *app) natsCreds() string {
	switch {
	case a.cfg.NATS.Creds != "":
		return a.cfg.NATS.Creds
	case a.cfg.NATS.Embedded:
		return remote.GatewayCredsPath(a.cfg.DataDir)
	}
	return ""
}

// connectNATS connects to url with the credentials in creds (and
// nats.tls_ca), reconnecting forever after a loss; extra options after.
func (a *app) connectNATS(url, name string, creds remote.Creds, extra ...nats.Option) (*nats.Conn, error) {
	opts, err := creds.Options(a.cfg.NATS.TLSCA)
	if err != nil {
		return nil, err
	}
	opts = append(opts, nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second))
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS at %s: %w; check nats.url / --nats, nats.creds and nats.tls_ca, and that the server runs", redactURL(url), err)
	}
	return nc, nil
}

// refusePlain closes nc and says why when it is a plain connection to a
// NATS server on another machine (plainOffLoopback).
func refusePlain(nc *nats.Conn) error {
	_, tlsErr := nc.TLSConnectionState()
	err := plainOffLoopback(nc.ConnectedUrl(), tlsErr)
	if err != nil {
		nc.Close()
	}
	return err
}

// plainOffLoopback refuses a connection to a NATS server on another machine
// that is not TLS: jobs carry MCP tokens and agent.env values. connected
// is the server's URL as connected (nc.ConnectedUrl), tlsErr what
// nc.TLSConnectionState said (nil: the connection is TLS). The gateway's
// in-process connection to its embedded server is not checked.
func plainOffLoopback(connected string, tlsErr error) error {
	u, err := url.Parse(connected)
	if err != nil || adapters.LoopbackHost(u.Hostname()) || tlsErr == nil {
		return nil
	}
	return fmt.Errorf("NATS at %s is on another machine and the connection is not TLS, so jobs (MCP tokens, agent.env values) would cross the network in clear: "+
		"enable tls { cert_file, key_file } on the NATS server (see deploy/nats-server.conf) and set nats.tls_ca to its CA", redactURL(connected))
}

// outsideDataDir reports whether path lies outside dir, where an agent's
// sandbox could read it.
func outsideDataDir(path, dir string) bool {
	p, err1 := filepath.Abs(path)
	d, err2 := filepath.Abs(dir)
	if err1 != nil || err2 != nil {
		return true
	}
	rel, err := filepath.Rel(d, p)
	return err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(os.PathSeparator))
}
