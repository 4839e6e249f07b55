package agent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"switchboard/groups"
)

// Sandbox confines each agent with bubblewrap: the system read-only, its
// group folder read-write at its own path, its own MCP socket (the file),
// this binary read-only, the operator's binds, a private /tmp, /proc and
// /dev, its own PID namespace dying with the gateway, and optionally no
// network. Nothing else of the data directory exists for it (not the
// database, not other groups' folders or sockets) but the binds inside it.
type Sandbox struct {
	Bwrap   string // path of the bwrap binary
	Exe     string // this binary (mcp-bridge), bound read-only
	DataDir string // absolute; hidden behind an empty tmpfs
	Binds   []Bind
	Network bool // false: the agent has no network at all
	// BindFD: this bwrap has --bind-fd (0.8 and later), so a turn's folder
	// and socket directory are bound from the directories the gateway
	// opened (openBound), not looked up again by path.
	BindFD bool
}

// Bind is an extra path visible inside the sandbox at the same path.
type Bind struct {
	Path string // absolute
	RW   bool
}

// systemDirs are bound read-only when they exist (symlinks, as /bin is on
// merged-/usr systems, are recreated as symlinks).
var systemDirs = []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// procCovers are the parts of /proc that act on the whole host.
var procCovers = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

// wrap returns the bwrap command line that runs argv in the sandbox for a
// turn in dir (the group folder), seen by the agent at at ("" or dir: at
// its own path), whose MCP socket is socket (bound alone, at its path).
// With bound (what openBound opened, passed to bwrap as fds 3 and 4) and a
// bwrap that has --bind-fd, those are bound rather than the paths, which
// the agent of a parent group could have swapped since they were opened;
// bwrap closes them before the agent runs (a directory fd from outside the
// sandbox would lead out of it through "..").
func (s *Sandbox) wrap(argv []string, dir, at, socket string, bound []*os.File) []string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if at == "" {
		at = dir
	} else if abs, err := filepath.Abs(at); err == nil {
		at = abs
	}
	// --cap-drop ALL matters when the gateway runs as root: bwrap then
	// keeps every capability by default, and an agent could mount, mknod
	// the disk and read anything. (Unprivileged, bwrap grants none anyway.)
	args := []string{s.Bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
		"--unshare-cgroup-try", "--cap-drop", "ALL", "--hostname", "switchboard-agent"}
	if !s.Network {
		args = append(args, "--unshare-net")
	}
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				args = append(args, "--symlink", target, d)
			}
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	args = append(args, "--proc", "/proc")
	// The host-wide knobs under /proc stay read-only even for an agent of
	// a gateway that runs as root (its uid still owns them).
	for _, d := range procCovers {
		args = append(args, "--ro-bind-try", d, d)
	}
	args = append(args, "--dev", "/dev", "--tmpfs", "/tmp")
	// A bind that contains the data directory (the home directory, say)
	// goes before the empty tmpfs that covers it, so the data directory
	// stays hidden; a bind inside it (a home directory within it holding
	// ~/.claude) goes after, or the cover would hide it.
	outer, inner := s.splitBinds()
	args = appendBinds(args, outer)
	if s.DataDir != "" {
		args = append(args, "--tmpfs", s.DataDir)
	}
	args = appendBinds(args, inner)
	if s.Exe != "" {
		args = append(args, "--ro-bind", s.Exe, s.Exe)
	}
	switch {
	case s.BindFD && len(bound) > 0:
		args = append(args, "--bind-fd", "3", at)
	default:
		args = append(args, "--bind", dir, at)
	}
	switch {
	case socket == "":
	case s.BindFD && len(bound) > 1:
		args = append(args, "--bind-fd", "4", socket)
	case !s.BindFD:
		args = append(args, "--bind-try", socket, socket)
	}
	if s.DataDir != "" && !within(s.DataDir, at) {
		// The tmpfs is read-only once the mount points in it exist (bwrap
		// made them above): a write beside the folder fails instead of
		// vanishing after the turn. The binds mounted on it keep their own
		// access. (Not when the folder's mount point contains the data
		// directory: its bind is on top of the tmpfs then.) A worker's copy
		// lives inside its data directory but is mounted at the gateway's
		// path, wherever that is: the source of a bind is the host's.
		args = append(args, "--remount-ro", s.DataDir)
	}
	args = append(args, "--chdir", at, "--")
	return append(args, argv...)
}

// probeScript checks, inside the sandbox, that $1 (the agent's program) can
// be run and that every further argument (the absolute paths its command
// names) exists, and says which one is missing.
const probeScript = `case "$1" in
/*) test -x "$1" ;;
*) command -v "$1" >/dev/null ;;
esac || { echo "$1: not found or not executable"; exit 1; }
shift
for p; do test -e "$p" || { echo "$p: not found"; exit 1; }; done`

// Probe checks once, through the same bubblewrap command line a turn in dir
// uses, that spec.Command[0] is executable inside the sandbox and that
// every absolute path among its arguments and in also (a script's
// interpreter, say) exists there. It returns nil without a sandbox; its
// error says what was missing (or what bwrap said).
func Probe(ctx context.Context, spec Spec, dir string, also ...string) error {
	if spec.Sandbox == nil || len(spec.Command) == 0 {
		return nil
	}
	argv := []string{"/bin/sh", "-c", probeScript, "sh", spec.Command[0]}
	for _, a := range append(spec.Command[1:len(spec.Command):len(spec.Command)], also...) {
		if filepath.IsAbs(a) {
			argv = append(argv, a)
		}
	}
	args := spec.Sandbox.wrap(argv, dir, "", "", nil)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = environ(spec.Env, nil)
	cmd.SysProcAttr = sysProcAttr(true)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if line := lastLine(out); line != "" {
			return errors.New(line)
		}
		return err
	}
	return nil
}

// baseEnv names the gateway's environment variables every agent gets; any
// other (tokens, keys) reaches an agent only when agent.env names it.
var baseEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TERM", "TMPDIR"}

// environ is the agent's environment: the base names and the allow-listed
// ones from the gateway's environment, then the turn's SWITCHBOARD_* vars.
func environ(allow []string, turn []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		names := allow
		if !strings.HasPrefix(name, "SWITCHBOARD_") { // the turn sets its own, unless one is allowed by name
			names = append(baseEnv[:len(baseEnv):len(baseEnv)], allow...)
		}
		for _, n := range names {
			if n == name {
				env = append(env, kv)
				break
			}
		}
	}
	return append(env, turn...)
}

// splitBinds returns the binds mounted before the data directory's cover
// (those outside it or containing it) and those mounted after it (strictly
// inside it), the latter parents first so that a parent cannot hide a child.
func (s *Sandbox) splitBinds() (outer, inner []Bind) {
	for _, b := range s.Binds {
		if s.DataDir != "" && b.Path != s.DataDir && within(b.Path, s.DataDir) {
			inner = append(inner, b)
		} else {
			outer = append(outer, b)
		}
	}
	sort.SliceStable(inner, func(i, j int) bool { return len(inner[i].Path) < len(inner[j].Path) })
	return outer, inner
}

func appendBinds(args []string, binds []Bind) []string {
	for _, b := range binds {
		flag := "--ro-bind-try"
		if b.RW {
			flag = "--bind-try"
		}
		args = append(args, flag, b.Path, b.Path)
	}
	return args
}

// Visible reports whether path (absolute) is seen inside every turn's
// sandbox as on the host: this binary, anything under a system directory
// or a bind, and the sandbox's own /, /proc and /dev. Under /tmp (private
// to the sandbox) or the data directory (covered) only a bind makes a path
// visible, and in the data directory only a bind inside it. A group's own
// folder and socket, visible to its turns alone, do not count.
func (s *Sandbox) Visible(path string) bool {
	p := filepath.Clean(path)
	if p == "/" || within(p, "/proc") || within(p, "/dev") || (s.Exe != "" && p == s.Exe) {
		return true
	}
	inData := s.DataDir != "" && within(p, s.DataDir)
	for _, b := range s.Binds {
		bp := filepath.Clean(b.Path)
		if within(p, bp) && (!inData || (bp != s.DataDir && within(bp, s.DataDir))) {
			return true
		}
	}
	if inData || within(p, "/tmp") {
		return false
	}
	for _, d := range systemDirs {
		if within(p, d) {
			_, err := os.Lstat(d)
			return err == nil
		}
	}
	return false
}

// within reports whether p is root or lies under it (both clean, absolute).
func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+string(filepath.Separator))
}

// openBound opens what a turn's bwrap binds (wrap): the group folder, then
// the group's socket itself when there is one (not its directory: a group's
// socket directory holds its subgroups' too, and the agent of a group that
// could open a subgroup's socket would act as that subgroup, with its
// grants). Each is reached from the data directory without following a
// symlink (groups.OpenDirBelow), so that a symlink a parent group's agent
// left there fails the turn. With BindFD bwrap binds these very files; an
// older bwrap binds the paths, which an agent racing the turn's start could
// still swap in between.
func (s *Sandbox) openBound(dir, socket string) ([]*os.File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	folder, err := groups.OpenDirBelow(s.DataDir, abs)
	if err != nil {
		return nil, err
	}
	if socket == "" {
		return []*os.File{folder}, nil
	}
	abs, err = filepath.Abs(socket)
	var sock *os.File
	if err == nil {
		var d *os.File
		if d, err = groups.OpenDirBelow(s.DataDir, filepath.Dir(abs)); err == nil {
			sock, err = groups.OpenPathIn(d, filepath.Base(abs))
			d.Close()
		}
		if errors.Is(err, fs.ErrNotExist) {
			return []*os.File{folder}, nil // no socket: the agent has no MCP (the log said why)
		}
	}
	if err != nil {
		folder.Close()
		return nil, err
	}
	return []*os.File{folder, sock}, nil
}
