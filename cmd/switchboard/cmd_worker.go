package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"switchboard/agent"
	"switchboard/remote"
)

func (a *app) workerCommand() *cobra.Command {
	var url, creds string
	var slots int
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run agent turns for a gateway whose agent.runner is nats",
		Long: `Connect to the gateway's NATS server (JetStream) and run the agent turns it
gives this worker, up to --slots at once: a turn is fetched only when a slot is
free. The gateway keeps a group folder on the worker that ran it last while
that worker has a free slot.
Each turn runs with this machine's agent.sandbox, agent.binds and
agent.network (bubblewrap when installed), in the group folder at the same
absolute path as on the gateway, with the environment the gateway sends (SWITCHBOARD_*, the MCP
URL and the turn's token, the values of agent.env) but only its SWITCHBOARD_*
names and those this worker's own agent.env lists (any other entry is
dropped and logged by name), and the gateway's
agent.resume_args and agent.output. The agent's command is this worker's
agent.command ("switchboard" is this binary), which must equal the gateway's:
a job naming another command is refused; this worker's agent.max_turn_usd
applies to it. The NATS server is --nats, else this config's nats.url.

NATS credentials: --creds, else nats.creds: the file that "switchboard nats
worker add NAME" minted on the gateway (keep it in this worker's data_dir,
which its agents' sandbox hides). NAME is this worker's id: the server lets it
read only its own jobs and publish only its own results. A server that speaks
TLS is verified with nats.tls_ca (default: the system's roots).

Group folders: the worker keeps a copy of each group folder it ran a turn
of in <data_dir>/folders/<a hash of the gateway's path> (never the gateway's
folder itself, even on a shared filesystem). A turn whose folder version
the copy already holds downloads nothing; otherwise the worker fetches the
version's snapshot from JetStream's object store. After the turn, the
files it changed are uploaded and the gateway applies them unless the
folder moved on meanwhile. In the sandbox the agent sees its copy at the
gateway's absolute path; without a sandbox (agent.sandbox: none, or auto
without bubblewrap) it runs in the copy's own path. Files that
nats.snapshot_exclude or the built-in list match (.env, *.pem, *.key,
id_rsa*, .netrc, .git-credentials, .npmrc, .credentials.json,
.codex/auth.json, .ssh, ...) are never sent or overwritten in either
direction; symlinks and special files are skipped; a folder over
nats.max_folder_mb is not sent.

Stop with Ctrl-C or SIGTERM: no more turns are fetched, running ones finish
(at most 30 s) and their results are published.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runWorker(cmd.Context(), url, creds, slots) },
	}
	cmd.Flags().StringVar(&url, "nats", "", "NATS server URL, e.g. nats://gateway:4222 (default: nats.url of this worker's config)")
	cmd.Flags().StringVar(&creds, "creds", "", "this worker's NATS credentials file (default: nats.creds)")
	cmd.Flags().IntVar(&slots, "slots", 1, "turns run at once")
	return cmd
}

func (a *app) runWorker(ctx context.Context, url, credsFlag string, slots int) error {
	if err := a.load(); err != nil {
		return err
	}
	if slots < 1 || slots > 1024 {
		return usagef("--slots %d: want 1 to 1024", slots)
	}
	if url == "" {
		url = a.cfg.NATS.URL
	}
	if url == "" {
		return usagef("no NATS server: pass --nats URL (e.g. nats://gateway:4222, the gateway's nats.url or nats.listen) or set nats.url in this worker's config")
	}
	path := credsFlag
	if path == "" {
		path = a.cfg.NATS.Creds
	}
	if path == "" {
		return usagef("nats.creds: no NATS credentials: set nats.creds in this worker's config (or pass --creds) to the file " +
			"that `switchboard nats worker add NAME` minted on the gateway")
	}
	creds, err := remote.ReadCreds(path)
	if err != nil {
		return fmt.Errorf("nats.creds: %w", err)
	}
	if creds.Worker == "" {
		return fmt.Errorf("nats.creds: %s are the gateway's credentials, not a worker's: mint this worker's with `switchboard nats worker add NAME` on the gateway", path)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	if err := os.MkdirAll(a.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	sb, err := a.sandbox(exe)
	if err != nil {
		return err
	}
	if sb != nil && outsideDataDir(path, a.cfg.DataDir) {
		a.log.Warn("nats.creds lies outside data_dir, where a sandboxed agent may read it; move it into data_dir", "creds", path)
	}
	nc, err := a.connectWorker(ctx, url, creds, authRetry)
	if err == nil {
		err = refusePlain(nc)
	}
	if err != nil {
		return err
	}
	defer nc.Close()
	w, err := remote.NewWorker(ctx, nc, remote.WorkerOptions{ID: creds.Worker, Slots: slots, Logger: a.log, Prepare: a.workerSpecs(ctx, exe, sb),
		Dir: a.cfg.DataDir, SnapshotExclude: a.cfg.NATS.SnapshotExclude, MaxFolderMB: a.cfg.NATS.MaxFolderMB, AllowEnv: a.cfg.Agent.Env})
	if err != nil {
		return err
	}
	return w.Run(ctx)
}

// authRetry is how long a starting worker keeps trying credentials the
// NATS server refuses: a gateway with an embedded server loads the
// workers that `switchboard nats worker add` registered every 2 s, so a
// worker started right after it would be refused once or twice.
const authRetry = 10 * time.Second

// connectWorker connects worker creds to url (connectNATS), trying again
// every second while the server refuses the credentials, for at most
// retry, then failing with what to check.
func (a *app) connectWorker(ctx context.Context, url string, creds remote.Creds, retry time.Duration) (*nats.Conn, error) {
	deadline := time.Now().Add(retry)
	for logged := false; ; logged = true {
		nc, err := a.connectNATS(url, "switchboard worker "+creds.Worker, creds)
		if !errors.Is(err, nats.ErrAuthorization) {
			return nc, err
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w; is worker %s registered on the gateway (switchboard nats worker list there), and are these its latest credentials?", err, creds.Worker)
		}
		if !logged {
			a.log.Warn("nats server refused this worker's credentials; trying again, as a gateway loads newly added workers within 2 s",
				"worker", creds.Worker, "for", retry)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// workerSpecs prepares, once per distinct agent.command, the spec a worker
// runs it with: argv[0] resolved here, the paths it names bound into the
// sandbox, one probe.
func (a *app) workerSpecs(ctx context.Context, exe string, sb *agent.Sandbox) func([]string) (agent.Spec, error) {
	var mu sync.Mutex
	type prepared struct {
		spec agent.Spec
		err  error
	}
	cache := map[string]prepared{}
	return func(command []string) (agent.Spec, error) {
		key := strings.Join(command, "\x00")
		mu.Lock()
		defer mu.Unlock()
		if p, ok := cache[key]; ok {
			return p.spec, p.err
		}
		spec, err := a.workerSpec(ctx, exe, sb, command)
		if err != nil {
			err = fmt.Errorf("agent.command on worker: %w", err)
		}
		cache[key] = prepared{spec, err}
		return spec, err
	}
}

func (a *app) workerSpec(ctx context.Context, exe string, sb *agent.Sandbox, command []string) (agent.Spec, error) {
	// A job names the program only to be checked: a worker runs nothing
	// but its own agent.command, whoever can publish to NATS.
	if !slices.Equal(command, a.cfg.Agent.Command) {
		return agent.Spec{}, fmt.Errorf("the gateway's agent.command %q is not this worker's %q; a worker runs only its own: give both the same agent.command",
			command, a.cfg.Agent.Command)
	}
	// The worker's own agent.max_turn_usd, as its own agent.command; the
	// rest of the spec comes with each job (remote.Worker).
	return agent.NewSpec(ctx, agent.SpecConfig{Command: command, Output: a.cfg.Agent.Output, MaxTurnUSD: a.cfg.Agent.MaxTurnUSD,
		Exe: exe, Sandbox: sb, Logger: a.log})
}

// redactURL drops user:password from a NATS URL for messages.
func redactURL(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 {
		scheme, _, ok := strings.Cut(u, "://")
		if ok {
			return scheme + "://[redacted]@" + u[at+1:]
		}
		return "[redacted]@" + u[at+1:]
	}
	return u
}

// natsRunner starts what agent.runner nats needs: the embedded server when
// nats.embedded is on, a connection, and the remote runner. stop closes
// them in reverse.
func (a *app) natsRunner(ctx context.Context) (*remote.Runner, func(), error) {
	url := a.cfg.NATS.URL
	var srv *remote.Server
	var creds remote.Creds
	var extra []nats.Option
	if a.cfg.NATS.Embedded {
		dir := filepath.Join(a.cfg.DataDir, "nats")
		auth := remote.AuthDir(a.cfg.DataDir)
		var err error
		// Off loopback, TLS (validateNATS): jobs carry secrets.
		if srv, err = remote.StartServer(remote.ServerOptions{Listen: a.cfg.NATS.Listen, StoreDir: dir, AuthDir: auth,
			TLSCert: a.cfg.NATS.TLSCert, TLSKey: a.cfg.NATS.TLSKey, Logger: a.log}); err != nil {
			return nil, nil, err
		}
		url, creds = srv.URL(), srv.Gateway()
		extra = append(extra, srv.InProcess()) // the gateway's own connection: no network, no TLS
		a.log.Info("embedded nats server listening", "url", url, "store", dir, "credentials", auth)
	} else {
		var err error
		if creds, err = remote.ReadCreds(a.cfg.NATS.Creds); err != nil {
			return nil, nil, fmt.Errorf("nats.creds: %w", err)
		}
		if creds.Worker != "" {
			return nil, nil, fmt.Errorf("nats.creds: %s are worker %s's credentials, not the gateway's: mint the gateway's with `switchboard nats gateway-creds --out FILE`",
				a.cfg.NATS.Creds, creds.Worker)
		}
	}
	stopSrv := func() {
		if srv != nil {
			srv.Close()
		}
	}
	nc, err := a.connectNATS(url, "switchboard gateway", creds, extra...)
	if err == nil && srv == nil {
		err = refusePlain(nc)
	}
	if err != nil {
		stopSrv()
		return nil, nil, err
	}
	// FoldersRoot: where groups.Layout puts every group folder, announced
	// in each job; workers run no folder outside it. StateDir: the turns
	// in flight, for a restarted gateway to reattach to.
	r, err := remote.NewRunner(ctx, nc, remote.RunnerOptions{Command: a.cfg.Agent.Command, Logger: a.log,
		SnapshotExclude: a.cfg.NATS.SnapshotExclude, MaxFolderMB: a.cfg.NATS.MaxFolderMB,
		FoldersRoot: filepath.Join(a.cfg.DataDir, "groups"), StateDir: filepath.Join(a.cfg.DataDir, "remote-turns")})
	if err != nil {
		nc.Close()
		stopSrv()
		return nil, nil, err
	}
	return r, func() { r.Close(); nc.Close(); stopSrv() }, nil
}
