package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// SandboxConfig is agent.sandbox, agent.binds and agent.network as
// configured, and where this process keeps its state.
type SandboxConfig struct {
	Mode    string // bwrap (required), auto (when it works here) or none
	Exe     string // this binary, bound read-only
	DataDir string // the data directory, hidden from agents
	Binds   []Bind // agent.binds, home directories already expanded
	Network bool
	Logger  *slog.Logger // binds that do not exist; nil: none
}

// NewSandbox resolves agent.sandbox: bubblewrap when it is installed and
// works (auto), required (bwrap), or off (none). A nil Sandbox with a nil
// error means agents run unconfined; why is then the reason ("" for none).
// A bind that would show agents this process's own state (stateReason) is
// an error.
func NewSandbox(c SandboxConfig) (sb *Sandbox, why string, err error) {
	if c.Mode == "none" {
		return nil, "", nil
	}
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
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
		if c.Mode == "bwrap" {
			return nil, "", fmt.Errorf("%w: %v; or set agent.sandbox: auto to run without it", ErrNoSandbox, err)
		}
		return nil, err.Error(), nil
	}
	data, err := filepath.Abs(c.DataDir)
	if err != nil {
		return nil, "", fmt.Errorf("data_dir: %w", err)
	}
	sb = &Sandbox{Bwrap: path, Exe: c.Exe, DataDir: data, Network: c.Network, BindFD: hasBindFD(path)}
	if !sb.BindFD {
		log.Warn("this bubblewrap has no --bind-fd (0.8 and later have it): a group folder is bound by its path, which a parent group's agent racing a subgroup's turn could swap for a symlink; upgrade bubblewrap", "bwrap", path)
	}
	for i, b := range c.Binds {
		p := filepath.Clean(b.Path)
		key := fmt.Sprintf("agent.binds[%d]", i)
		if why := stateReason(data, p); why != "" {
			return nil, "", fmt.Errorf("%s: %s %s; bind only paths outside %s (or inside it but outside groups/ and ipc/)", key, p, why, data)
		}
		if _, err := os.Stat(p); err != nil {
			log.Warn("bind path not found; agents will not see it", "key", key, "path", p)
		}
		sb.Binds = append(sb.Binds, Bind{Path: p, RW: b.RW})
	}
	return sb, "", nil
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
func bindCommand(log *slog.Logger, sb *Sandbox, argv []string) ([]string, error) {
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
				if err := bindTarget(log, sb, key, p, real); err != nil {
					return nil, err
				}
				if !sb.Visible(p) {
					argv[0] = real
				}
				continue
			}
		}
		if err := autoBind(log, sb, key, p, ""); err != nil {
			return nil, err
		}
	}
	if interp, _ := interpreter(argv[0]); interp != "" { // resolveCommand reported its error
		if err := autoBind(log, sb, "agent.command[0]", interp, argv[0]); err != nil {
			return nil, err
		}
	}
	return argv, nil
}

// interpreter is the program a script's "#!" line runs, when it exists on
// the host: the path itself, or for "#!/usr/bin/env node" node found in
// PATH (which agents get too), as npm's scripts have it. It is "" for a
// program that is not a script; an error when env's program is not in PATH.
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
func bindTarget(log *slog.Logger, sb *Sandbox, key, link, real string) error {
	target := real
	if pkg := nodePackage(real); pkg != "" {
		target = pkg
	}
	if sb.Visible(link) && sb.Visible(target) {
		return nil
	}
	if !sb.Visible(link) {
		log.Info("agent.command[0] is a symlink the sandbox would hide; running its target", "path", link, "target", real)
	}
	return autoBind(log, sb, key, target, link)
}

// autoBind binds p read-only unless the sandbox shows it already; via is
// the link in agent.command that points to it, if any.
func autoBind(log *slog.Logger, sb *Sandbox, key, p, via string) error {
	if sb.Visible(p) {
		return nil
	}
	if why := stateReason(sb.DataDir, p); why != "" {
		return fmt.Errorf("%s: %s %s; move the agent's files outside the data directory %s", key, p, why, sb.DataDir)
	}
	sb.Binds = append(sb.Binds, Bind{Path: p})
	attrs := []any{"path", p, "key", key}
	if via != "" {
		attrs = append(attrs, "via", via)
	}
	log.Info("bound read-only into the sandbox because agent.command names it", attrs...)
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

// hasBindFD reports whether bwrap at path takes --bind-fd (bubblewrap 0.8).
func hasBindFD(path string) bool {
	out, _ := exec.Command(path, "--help").CombinedOutput()
	return strings.Contains(string(out), "--bind-fd")
}
