package agent

import (
	"os"
	"path/filepath"
	"strings"
)

// Sandbox confines each agent with bubblewrap: the system read-only, its
// group folder read-write at its own path, its own MCP socket directory,
// this binary read-only, the operator's binds, a private /tmp, /proc and
// /dev, its own PID namespace dying with the gateway, and optionally no
// network. Nothing else of the data directory exists for it: not the
// database, not other groups' folders or sockets.
type Sandbox struct {
	Bwrap   string // path of the bwrap binary
	Exe     string // this binary (mcp-bridge), bound read-only
	DataDir string // absolute; hidden behind an empty tmpfs
	Binds   []Bind
	Network bool // false: the agent has no network at all
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
// turn in dir (the group folder) whose MCP socket lives in socketDir.
func (s *Sandbox) wrap(argv []string, dir, socketDir string) []string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
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
	for _, b := range s.Binds {
		flag := "--ro-bind-try"
		if b.RW {
			flag = "--bind-try"
		}
		args = append(args, flag, b.Path, b.Path)
	}
	// Whatever the binds above contain of the data directory (the system
	// dirs, or a bind of a parent such as the home directory) is covered
	// by an empty tmpfs; then only the group's own pieces are put back.
	if s.DataDir != "" {
		args = append(args, "--tmpfs", s.DataDir)
	}
	if s.Exe != "" {
		args = append(args, "--ro-bind", s.Exe, s.Exe)
	}
	args = append(args, "--bind", dir, dir)
	if socketDir != "" {
		args = append(args, "--bind", socketDir, socketDir)
	}
	if s.DataDir != "" && strings.HasPrefix(dir, s.DataDir+string(filepath.Separator)) {
		// The tmpfs is read-only once the mount points in it exist: a
		// write beside the folder fails instead of vanishing after the
		// turn. (Only while the folder lies inside it, or the folder's
		// bind hides it.)
		args = append(args, "--remount-ro", s.DataDir)
	}
	args = append(args, "--chdir", dir, "--")
	return append(args, argv...)
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

// socketDirOf is the directory of a group's MCP socket.
func socketDirOf(socket string) string {
	if socket == "" {
		return ""
	}
	return filepath.Dir(socket)
}
