package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"switchboard/agent"
	"switchboard/config"
)

// agentSpec builds the runner spec from agent.* and checks, once at start,
// what would otherwise fail at every message: agent.command[0] is resolved
// on the host ("switchboard" is this binary); with the sandbox, the binds
// are checked, the paths agent.command names that the sandbox would hide
// are bound read-only, and one probe in the sandbox shows that the agent
// can be started there.
func (a *app) agentSpec(ctx context.Context, exe string) (agent.Spec, error) {
	argv, err := resolveCommand(a.cfg.Agent.Command, exe)
	if err != nil {
		return agent.Spec{}, err
	}
	argv = append(argv, maxTurnArgs(a.cfg.Agent)...)
	spec := agent.Spec{Command: argv, ResumeArgs: a.cfg.Agent.ResumeArgs, Output: a.cfg.Agent.Output,
		Timeout: time.Duration(a.cfg.Agent.Timeout), Env: a.cfg.Agent.Env}
	if spec.Sandbox, err = a.sandbox(exe); err != nil || spec.Sandbox == nil {
		return spec, err
	}
	a.warnClaudeSessions(spec.Sandbox)
	if spec.Command, err = a.bindCommand(spec.Sandbox, argv); err != nil {
		return agent.Spec{}, err
	}
	return spec, a.probeAgent(ctx, spec)
}

// resolveCommand returns agent.command with argv[0] an absolute path on the
// host, found in the gateway's PATH unless it names a path; a script whose
// "#!/usr/bin/env" program is not in PATH is an error too.
func resolveCommand(command []string, exe string) ([]string, error) {
	argv := slices.Clone(command)
	if argv[0] == "switchboard" {
		argv[0] = exe
		return argv, nil
	}
	p, err := exec.LookPath(argv[0])
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) {
			err = ee.Err
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if !strings.ContainsRune(argv[0], filepath.Separator) {
			return nil, fmt.Errorf("agent.command[0]: %q: %v (looked up in PATH=%s); install it, or give its absolute path",
				argv[0], err, os.Getenv("PATH"))
		}
		return nil, fmt.Errorf("agent.command[0]: %s: %v; check the path (it must be an executable file)", argv[0], err)
	}
	if argv[0], err = filepath.Abs(p); err != nil {
		return nil, fmt.Errorf("agent.command[0]: %w", err)
	}
	if _, err := interpreter(argv[0]); err != nil {
		return nil, fmt.Errorf("agent.command[0]: %s: %v; install it, or add its directory to the gateway's PATH", argv[0], err)
	}
	return argv, nil
}

// unconfinedWarning is logged (and shown by status) when agents run
// without a sandbox.
const unconfinedWarning = "AGENTS ARE NOT SANDBOXED: any agent with a shell can read the database and other groups' folders and act as any group (switchboard mcp-bridge --folder root); tiers and grants are advice"

// sandboxWarning is what status shows about the sandbox.
func sandboxWarning(sb *agent.Sandbox) string {
	if sb != nil {
		return ""
	}
	return unconfinedWarning
}

// sandbox resolves agent.sandbox: bwrap when installed and working (auto),
// required (bwrap), or off (none). A bind that would show agents
// switchboard's own state is an error.
func (a *app) sandbox(exe string) (*agent.Sandbox, error) {
	mode := a.cfg.Agent.Sandbox
	if mode == "none" {
		a.log.Warn(unconfinedWarning, "agent.sandbox", "none")
		return nil, nil
	}
	path, err := exec.LookPath("bwrap")
	if err == nil {
		// User namespaces may be off (some containers): try it once.
		out, rerr := exec.Command(path, "--ro-bind", "/", "/", "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "true").CombinedOutput()
		if rerr != nil {
			err = fmt.Errorf("bwrap does not work here: %v: %s", rerr, strings.TrimSpace(string(out)))
		}
	} else {
		err = errors.New("bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
	}
	if err != nil {
		if mode == "bwrap" {
			return nil, fmt.Errorf("agent.sandbox: bwrap: %v; or set agent.sandbox: auto to run without it", err)
		}
		a.log.Warn(unconfinedWarning, "agent.sandbox", "auto", "reason", err.Error())
		return nil, nil
	}
	data, err := filepath.Abs(a.cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	sb := &agent.Sandbox{Bwrap: path, Exe: exe, DataDir: data, Network: a.cfg.Agent.Network}
	for i, b := range a.cfg.Agent.Binds {
		p := filepath.Clean(config.ExpandHome(b.Path))
		key := fmt.Sprintf("agent.binds[%d]", i)
		if why := stateReason(data, p); why != "" {
			return nil, fmt.Errorf("%s: %s %s; bind only paths outside %s (or inside it but outside groups/ and ipc/)", key, p, why, data)
		}
		if _, err := os.Stat(p); err != nil {
			a.log.Warn("bind path not found; agents will not see it", "key", key, "path", p)
		}
		sb.Binds = append(sb.Binds, agent.Bind{Path: p, RW: b.RW})
	}
	a.log.Info("agents run sandboxed with bubblewrap", "bwrap", path, "network", sb.Network, "binds", len(sb.Binds))
	return sb, nil
}

// stateReason says why binding p would show agents switchboard's own state
// in the data directory data ("" when it would not): the data directory
// itself, the database and its WAL files, the lock file, groups/ and ipc/
// and what is in them. Both paths are compared as written and with
// symlinks resolved.
func stateReason(data, p string) string {
	for _, d := range withResolved(data) {
		for _, q := range withResolved(p) {
			if why := stateReasonIn(d, q); why != "" {
				return why
			}
		}
	}
	return ""
}

func stateReasonIn(data, p string) string {
	rel, err := filepath.Rel(data, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	first, _, _ := strings.Cut(rel, string(filepath.Separator))
	switch {
	case rel == ".":
		return "is the data directory: agents would see the database and every group's folder"
	case first == "groups":
		return "is in the group folders (groups/): every group's agent would see it"
	case first == "ipc":
		return "is in the MCP socket directory (ipc/): an agent could use another group's socket"
	case slices.Contains([]string{"switchboard.db", "switchboard.db-wal", "switchboard.db-shm"}, rel):
		return "is the database"
	case rel == "switchboard.lock":
		return "is the gateway's lock file"
	}
	return ""
}

// withResolved is p, and p with symlinks resolved when that differs.
func withResolved(p string) []string {
	if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
		return []string{p, r}
	}
	return []string{p}
}

// bindCommand binds read-only every absolute path in argv that exists on
// the host but that the sandbox would hide (a script in /tmp or in a home
// directory), what argv[0] links to, and the interpreter of a script
// (node under ~/.nvm for npm's `#!/usr/bin/env node`). It returns argv,
// whose argv[0] is the link's target when the link itself is hidden.
func (a *app) bindCommand(sb *agent.Sandbox, argv []string) ([]string, error) {
	argv = slices.Clone(argv)
	for i, arg := range argv {
		if !filepath.IsAbs(arg) {
			continue
		}
		p := filepath.Clean(arg)
		key := fmt.Sprintf("agent.command[%d]", i)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if i == 0 {
			if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
				if err := a.bindTarget(sb, key, p, real); err != nil {
					return nil, err
				}
				if !sb.Visible(p) {
					argv[0] = real
				}
				continue
			}
		}
		if err := a.autoBind(sb, key, p, ""); err != nil {
			return nil, err
		}
	}
	if interp, _ := interpreter(argv[0]); interp != "" { // resolveCommand reported its error
		if err := a.autoBind(sb, "agent.command[0]", interp, argv[0]); err != nil {
			return nil, err
		}
	}
	return argv, nil
}

// interpreter is the program a script's "#!" line runs, when it exists on
// the host: the path itself, or for "#!/usr/bin/env node" node found in the
// gateway's PATH (which agents get too), as npm's scripts have it. It is ""
// for a program that is not a script; an error when env's program is not
// in PATH.
func interpreter(program string) (string, error) {
	f, err := os.Open(program)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	line, _ := bufio.NewReader(io.LimitReader(f, 512)).ReadString('\n')
	rest, ok := strings.CutPrefix(line, "#!")
	fields := strings.Fields(rest)
	if !ok || len(fields) == 0 || !filepath.IsAbs(fields[0]) {
		return "", nil
	}
	if filepath.Base(fields[0]) != "env" {
		if _, err := os.Stat(fields[0]); err != nil {
			return "", nil // the probe names it
		}
		return filepath.Clean(fields[0]), nil
	}
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") || strings.Contains(f, "=") { // -S, VAR=value
			continue
		}
		found, err := exec.LookPath(f)
		if err != nil {
			return "", fmt.Errorf("its #! line runs %q, which is not found in PATH=%s", f, os.Getenv("PATH"))
		}
		return filepath.Abs(found)
	}
	return "", nil
}

// bindTarget makes what the link argv[0] points to visible: the target, or
// for a program inside node_modules (npm links `claude` into its package)
// the whole package, whose files it loads.
func (a *app) bindTarget(sb *agent.Sandbox, key, link, real string) error {
	target := real
	if pkg := nodePackage(real); pkg != "" {
		target = pkg
	}
	if sb.Visible(link) && sb.Visible(target) {
		return nil
	}
	if !sb.Visible(link) {
		a.log.Info("agent.command[0] is a symlink the sandbox would hide; running its target", "path", link, "target", real)
	}
	return a.autoBind(sb, key, target, link)
}

// autoBind binds p read-only unless the sandbox shows it already; via is
// the link in agent.command that points to it, if any.
func (a *app) autoBind(sb *agent.Sandbox, key, p, via string) error {
	if sb.Visible(p) {
		return nil
	}
	if why := stateReason(sb.DataDir, p); why != "" {
		return fmt.Errorf("%s: %s %s; move the agent's files outside the data directory %s", key, p, why, sb.DataDir)
	}
	sb.Binds = append(sb.Binds, agent.Bind{Path: p})
	attrs := []any{"path", p, "key", key}
	if via != "" {
		attrs = append(attrs, "via", via)
	}
	a.log.Info("bound read-only into the sandbox because agent.command names it", attrs...)
	return nil
}

// nodePackage is the directory of the npm package holding p
// (…/node_modules/name or …/node_modules/@scope/name), or "".
func nodePackage(p string) string {
	parts := strings.Split(p, string(filepath.Separator))
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] != "node_modules" {
			continue
		}
		end := i + 2
		if strings.HasPrefix(parts[i+1], "@") {
			end = i + 3
		}
		if end >= len(parts) { // p is the package directory itself, or a scope
			return ""
		}
		return strings.Join(parts[:end], string(filepath.Separator))
	}
	return ""
}

// probeAgent runs agent.Probe once, as a turn in a scratch folder inside
// the data directory would run.
func (a *app) probeAgent(ctx context.Context, spec agent.Spec) error {
	dir, err := os.MkdirTemp(spec.Sandbox.DataDir, ".agent-probe-")
	if err != nil {
		return fmt.Errorf("probe the agent in the sandbox: %w", err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	interp, _ := interpreter(spec.Command[0])
	started := time.Now()
	if err := agent.Probe(ctx, spec, dir, interp); err != nil {
		return fmt.Errorf("agent.command: the agent cannot be started in the sandbox: %v; bind the directory holding it with agent.binds (read-only), or install it under /usr or /opt", err)
	}
	a.log.Debug("agent found in the sandbox", "program", spec.Command[0], "ms", time.Since(started).Milliseconds())
	return nil
}
