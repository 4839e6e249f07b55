package agent

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testenv"
)

// sandboxFor is a bubblewrap sandbox over data with binds; it fails (never
// skips) without bubblewrap: make test installs it.
func sandboxFor(t *testing.T, data string, binds ...Bind) *Sandbox {
	t.Helper()
	bwrap := testenv.Require(t, "bwrap", "make test installs it, or apt-get install bubblewrap")
	return &Sandbox{Bwrap: bwrap, DataDir: data, Binds: binds, Network: true}
}

// dataDir makes a data directory as the gateway has it (database, two group
// folders) plus a home directory inside it holding an agent's login state:
// the service user's home was the data directory in the old deploy docs.
func dataDir(t *testing.T) (data, home string) {
	t.Helper()
	data = filepath.Join(t.TempDir(), "data")
	home = filepath.Join(data, "home")
	for _, d := range []string{"groups/main", "groups/other", "ipc/other", "home/.claude"} {
		if err := os.MkdirAll(filepath.Join(data, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"switchboard.db": "db", "groups/other/secret": "other's", "home/.claude.json": `{"login":"yes"}`} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return data, home
}

// Binds inside the data directory are there for the agent (read and
// written, as Claude Code does with ~/.claude and ~/.claude.json), while
// the database, other groups and the rest of the data directory stay
// hidden and unwritable; also when another bind contains the data dir.
func TestSandboxBindsInsideDataDir(t *testing.T) {
	t.Parallel()
	const probe = `data=$1 home=$1/home
cat "$home/.claude.json" && echo || echo NO-LOGIN
echo '{"login":"refreshed"}' > "$home/.claude.json" || echo LOGIN-NOT-WRITABLE
echo state > "$home/.claude/session" || echo STATE-NOT-WRITABLE
test -e "$data/switchboard.db" && echo DB-VISIBLE
test -e "$data/groups/other/secret" && echo OTHER-GROUP-VISIBLE
test -e "$data/ipc/other" && echo OTHER-SOCKET-VISIBLE
touch "$data/escape" 2>/dev/null && echo DATA-WRITABLE
touch "$home/escape" 2>/dev/null && echo HOME-WRITABLE
echo done`
	for _, tc := range []struct {
		name  string
		outer bool // also bind the data directory's parent, as binding a home directory that holds it does
	}{
		{"binds inside the data dir", false},
		{"and a bind containing the data dir", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data, home := dataDir(t)
			binds := []Bind{{Path: filepath.Join(home, ".claude"), RW: true}, {Path: filepath.Join(home, ".claude.json"), RW: true}}
			if tc.outer {
				binds = append([]Bind{{Path: filepath.Dir(data)}}, binds...)
			}
			spec := Spec{Command: []string{"/bin/sh", "-c", probe, "sh", data}, Sandbox: sandboxFor(t, data, binds...)}
			res, err := runAgent(t, spec, Input{Dir: filepath.Join(data, "groups", "main")})
			if err != nil {
				t.Fatalf("turn: %v (stderr %q)", err, res.Stderr)
			}
			if want := `{"login":"yes"}` + "\ndone"; res.Reply != want {
				t.Errorf("the agent saw:\n%s\nwant:\n%s", res.Reply, want)
			}
			for name, want := range map[string]string{".claude.json": `{"login":"refreshed"}` + "\n", ".claude/session": "state\n"} {
				if b, err := os.ReadFile(filepath.Join(home, name)); err != nil || string(b) != want {
					t.Errorf("%s on the host: %q, %v; want the agent's write %q", name, b, err, want)
				}
			}
			for _, name := range []string{"escape", "home/escape"} {
				if _, err := os.Stat(filepath.Join(data, name)); !os.IsNotExist(err) {
					t.Errorf("the agent created %s in the data directory (%v)", name, err)
				}
			}
		})
	}
}

func TestSandboxVisible(t *testing.T) {
	t.Parallel()
	sb := &Sandbox{Exe: "/usr/local/bin/switchboard-x", DataDir: "/srv/sb/data", Binds: []Bind{
		{Path: "/home/me/.claude"}, {Path: "/srv"}, {Path: "/srv/sb/data/home/.codex"}, {Path: "/tmp/agents"}, {Path: "/srv/sb/data2"},
	}}
	exe := &Sandbox{Exe: "/home/me/bin/switchboard"}
	for _, tc := range []struct {
		sb   *Sandbox
		path string
		want bool
	}{
		{sb, "/usr/bin/claude", true},
		{sb, "/opt/codex/bin/codex", true},
		{sb, "/bin/sh", true},
		{sb, "/", true},
		{sb, "/dev/null", true},
		{exe, "/home/me/bin/switchboard", true},
		{exe, "/home/me/bin/agent.sh", false},
		{sb, "/home/me/.claude/settings.json", true},
		{sb, "/home/me/.claude.json", false},
		{sb, "/home/me/agent.sh", false},
		{sb, "/tmp/myagent.sh", false},
		{sb, "/tmp/agents/a.sh", true},
		{sb, "/srv/sb/agent.sh", true},                             // under the /srv bind
		{sb, "/srv/sb/data/agent.sh", false},                       // the /srv bind's data dir is covered
		{sb, "/srv/sb/data", false},                                // the cover itself is empty
		{sb, "/srv/sb/data/home/.codex/auth.json", true},           // a bind inside the data dir
		{sb, "/srv/sb/data2/x", true},                              // not the data dir, only its name's prefix
		{&Sandbox{DataDir: "/usr/lib/sb"}, "/usr/lib/sb/x", false}, // a data dir under a system dir
	} {
		if got := tc.sb.Visible(tc.path); got != tc.want {
			t.Errorf("Visible(%s) with data dir %q = %v; want %v", tc.path, tc.sb.DataDir, got, tc.want)
		}
	}
}

// Probe runs the same bwrap command line as a turn: a script in /tmp (the
// sandbox's private /tmp) is missing there until it is bound.
func TestProbe(t *testing.T) {
	t.Parallel()
	data, _ := dataDir(t)
	dir := filepath.Join(data, "groups", "main")
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		command []string
		binds   []Bind
		wantErr string
	}{
		{"program hidden", []string{script}, nil, script + ": not found or not executable"},
		{"program bound", []string{script}, []Bind{{Path: script}}, ""},
		{"script argument hidden", []string{"/bin/sh", script, "--flag"}, nil, script + ": not found"},
		{"script argument bound", []string{"/bin/sh", script, "--flag"}, []Bind{{Path: filepath.Dir(script)}}, ""},
		{"program by name", []string{"sh", "-c", "true"}, nil, ""},
		{"program by name missing", []string{"switchboard-no-such-agent"}, nil, "switchboard-no-such-agent: not found or not executable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := Probe(ctx, Spec{Command: tc.command, Sandbox: sandboxFor(t, data, tc.binds...)}, dir)
			if got := errString(err); got != tc.wantErr {
				t.Errorf("Probe = %q; want %q", got, tc.wantErr)
			}
		})
	}
	if err := Probe(context.Background(), Spec{Command: []string{script}}, dir); err != nil {
		t.Errorf("Probe without a sandbox = %v; want nil", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A program that is gone by the time a sandboxed turn runs: bwrap cannot
// exec it and says so; the turn did not start (the chat says so too).
func TestRunSandboxedProgramMissing(t *testing.T) {
	t.Parallel()
	data, _ := dataDir(t)
	missing := filepath.Join(data, "..", "gone", "agent")
	res, err := runAgent(t, Spec{Command: []string{missing}, Sandbox: sandboxFor(t, data)}, Input{Dir: filepath.Join(data, "groups", "main")})
	if !errors.Is(err, ErrFailed) || !strings.HasPrefix(errString(err), "agent could not start in the sandbox: bwrap: execvp "+missing+": No such file or directory") ||
		!strings.HasSuffix(errString(err), "; check agent.command and agent.binds") {
		t.Fatalf("err = %v; want ErrFailed saying bwrap could not exec %s", err, missing)
	}
	if !res.NotStarted || res.ExitCode != 1 {
		t.Errorf("result %+v; want NotStarted (bwrap's exit status 1)", res)
	}
}

// A worker's copy of a group folder lives in its data directory but the
// agent sees it at the gateway's path (Input.At): it starts there, reads
// and writes the copy through it, and still sees nothing else of the data
// directory, which stays unwritable.
func TestSandboxFolderAt(t *testing.T) {
	t.Parallel()
	data, _ := dataDir(t)
	at := filepath.Join(t.TempDir(), "gateway", "groups", "main")
	copyDir := filepath.Join(data, "folders", at)
	if err := os.MkdirAll(copyDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyDir, "work.md"), []byte("copied"), 0o600); err != nil {
		t.Fatal(err)
	}
	const probe = `data=$1 at=$2
test "$(pwd)" = "$at" && echo IN-AT
cat work.md && echo
echo new > "$at/new.txt" || echo AT-NOT-WRITABLE
test -e "$data/switchboard.db" && echo DB-VISIBLE
test -e "$data/folders" && echo COPY-VISIBLE-IN-DATA
touch "$data/escape" 2>/dev/null && echo DATA-WRITABLE
echo done`
	spec := Spec{Command: []string{"/bin/sh", "-c", probe, "sh", data, at}, Sandbox: sandboxFor(t, data)}
	res, err := runAgent(t, spec, Input{Dir: copyDir, At: at})
	if err != nil {
		t.Fatalf("turn: %v (stderr %q)", err, res.Stderr)
	}
	if want := "IN-AT\ncopied\ndone"; res.Reply != want {
		t.Errorf("the agent saw:\n%s\nwant:\n%s", res.Reply, want)
	}
	if b, err := os.ReadFile(filepath.Join(copyDir, "new.txt")); err != nil || string(b) != "new\n" {
		t.Errorf("new.txt in the copy: %q, %v; want the agent's write", b, err)
	}
	if _, err := os.Stat(at); !os.IsNotExist(err) {
		t.Errorf("the gateway's path %s exists on the host (%v); the agent must write only the copy", at, err)
	}
	if _, err := os.Stat(filepath.Join(data, "escape")); !os.IsNotExist(err) {
		t.Errorf("the agent created escape in the data directory (%v)", err)
	}
}

// A group folder or socket directory that is a symlink below the data
// directory (a parent group's agent can make its subgroup's one) fails the
// turn before bwrap runs, with bwrap's --bind-fd and without it: the
// sandbox never binds what the symlink points at.
func TestSandboxRefusesSymlinkedFolder(t *testing.T) {
	t.Parallel()
	data, _ := dataDir(t)
	if err := os.Symlink(data, filepath.Join(data, "groups", "main", "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(data, "groups", "main", "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../other", filepath.Join(data, "ipc", "main")); err != nil {
		t.Fatal(err)
	}
	for _, bindFD := range []bool{true, false} {
		sb := sandboxFor(t, data)
		sb.BindFD = bindFD
		for _, tc := range []struct {
			in   Input
			want string
		}{
			{Input{Dir: filepath.Join(data, "groups", "main", "sub")}, filepath.Join(data, "groups", "main", "sub") + " is a symlink"},
			{Input{Dir: filepath.Join(data, "groups", "main", "real"), Socket: filepath.Join(data, "ipc", "main", "real", "mcp.sock")},
				filepath.Join(data, "ipc", "main") + " is a symlink"},
		} {
			res, err := runAgent(t, Spec{Command: []string{"/bin/sh", "-c", "ls -A"}, Sandbox: sb}, tc.in)
			if !errors.Is(err, ErrFailed) || !strings.Contains(errString(err), tc.want) || strings.Contains(res.Reply, "switchboard.db") {
				t.Errorf("bind-fd %v, %+v: %v (reply %q); want a failure saying %q", bindFD, tc.in, err, res.Reply, tc.want)
			}
		}
	}
}
