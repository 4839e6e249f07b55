package agent

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testenv"
)

// An agent installed the npm way in a directory the sandbox hides (as
// under ~/.nvm): agent.command[0] is a symlink into its package, which
// loads files beside it, and the package's script starts with
// "#!/usr/bin/env node", node being in the gateway's PATH but hidden too.
// The package and the interpreter are bound, the program is run by its
// real path (the link itself is hidden), the probe passes and a turn runs.
// Not parallel: it sets PATH, and its programs are written and then
// executed, which can fail with ETXTBSY while parallel tests fork.
func TestBindCommandNpmLink(t *testing.T) {
	testenv.Require(t, "bwrap", "make test installs it, or apt-get install bubblewrap")
	root := t.TempDir() // under /tmp: the sandbox's own /tmp hides it
	pkg := filepath.Join(root, "prefix", "lib", "node_modules", "@acme", "agent")
	nodeBin := filepath.Join(root, "nvm", "bin")
	for _, d := range []string{filepath.Join(pkg, "vendor"), nodeBin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", nodeBin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	cli, node := filepath.Join(pkg, "cli.js"), filepath.Join(nodeBin, "fakenode")
	files := map[string]string{
		cli:                                    "#!/usr/bin/env fakenode\ncat \"$(dirname \"$0\")/vendor/answer\"\n",
		filepath.Join(pkg, "vendor", "answer"): "from the package",
		node:                                   "#!/bin/sh\nexec /bin/sh \"$@\"\n", // runs the "JavaScript" as shell
	}
	for name, body := range files {
		if err := os.WriteFile(name, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "prefix", "bin", "agent")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../lib/node_modules/@acme/agent/cli.js", link); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(root, "data")
	folder := filepath.Join(data, "groups", "main")
	if err := os.MkdirAll(folder, 0o700); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	bwrap, _ := exec.LookPath("bwrap")
	sb := &Sandbox{Bwrap: bwrap, DataDir: data, Network: true}
	argv, err := bindCommand(log, sb, []string{link, "-p"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []Bind{{Path: pkg}, {Path: node}}; !slices.Equal(sb.Binds, want) {
		t.Errorf("binds %+v; want the package and the interpreter %+v", sb.Binds, want)
	}
	if want := []string{cli, "-p"}; !slices.Equal(argv, want) {
		t.Errorf("argv %q; want %q (the link is hidden: its target runs)", argv, want)
	}
	if line := logs.String(); !strings.Contains(line, "bound read-only into the sandbox because agent.command names it") ||
		!strings.Contains(line, "path="+pkg) || !strings.Contains(line, "via="+link) {
		t.Errorf("log:\n%s\nwant the bound package and the link it was bound for", line)
	}
	spec := Spec{Command: argv, Sandbox: sb, Timeout: 10 * time.Second}
	ctx := context.Background()
	if err := Probe(ctx, spec, folder, node); err != nil {
		t.Fatalf("probe: %v", err)
	}
	res, err := Run(ctx, spec, Input{Dir: folder})
	if err != nil || res.Reply != "from the package" {
		t.Errorf("turn: %q, %v; want the package's file read", res.Reply, err)
	}
}

func TestNodePackage(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"/home/me/.npm/lib/node_modules/@anthropic-ai/claude-code/cli.js": "/home/me/.npm/lib/node_modules/@anthropic-ai/claude-code",
		"/usr/lib/node_modules/@openai/codex/bin/codex.js":                "/usr/lib/node_modules/@openai/codex",
		"/opt/x/node_modules/tool/bin/tool":                               "/opt/x/node_modules/tool",
		"/opt/x/node_modules/a/node_modules/b/cli.js":                     "/opt/x/node_modules/a/node_modules/b",
		"/home/me/bin/agent.sh":                                           "",
		"/opt/x/node_modules/tool":                                        "",
	} {
		if got := nodePackage(p); got != want {
			t.Errorf("nodePackage(%s) = %q; want %q", p, got, want)
		}
	}
}

// A bind is refused for what it shows, also through a symlink; paths
// beside the state in the data directory (a home inside it) are fine.
func TestStateReason(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	data := filepath.Join(root, "data")
	if err := os.MkdirAll(filepath.Join(data, "groups", "main"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(data, "groups"), filepath.Join(root, "groups-link")); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{
		data:                                      "is the data directory",
		filepath.Join(data, "groups"):             "is in the group folders",
		filepath.Join(data, "groups", "main"):     "is in the group folders",
		filepath.Join(data, "ipc", "main"):        "is in the MCP socket directory",
		filepath.Join(data, "switchboard.db-wal"): "is the database",
		filepath.Join(data, "switchboard.lock"):   "is the gateway's lock file",
		filepath.Join(root, "groups-link"):        "is in the group folders",
		filepath.Join(data, "home", ".claude"):    "",
		filepath.Join(data, "groupsx"):            "",
		root:                                      "",
		"/usr":                                    "",
	} {
		if got := stateReason(data, p); !strings.HasPrefix(got, want) || (want == "") != (got == "") {
			t.Errorf("stateReason(%s) = %q; want %q…", p, got, want)
		}
	}
}

// A script whose "#!/usr/bin/env" program is not in PATH cannot start:
// a start-up error naming agent.command[0], the program and PATH.
func TestResolveCommandInterpreterMissing(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "cli.js")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env -S switchboard-no-such-node --flag\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := resolveCommand([]string{script, "-p"}, "/usr/local/bin/switchboard")
	want := "agent.command[0]: " + script + `: its #! line runs "switchboard-no-such-node", which is not found in PATH=` + os.Getenv("PATH")
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v; want %q…", err, want)
	}
}

// agent.max_turn_usd becomes Claude Code's --max-budget-usd for both of
// its outputs, and nothing for other agents.
func TestNewSpecMaxTurnUSD(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		output Output
		want   []string
	}{
		{OutputClaudeJSON, []string{"/bin/sh", "-c", "true", "--max-budget-usd", "0.5"}},
		{OutputClaudeStream, []string{"/bin/sh", "-c", "true", "--max-budget-usd", "0.5"}},
		{OutputCodexJSON, []string{"/bin/sh", "-c", "true"}},
		{OutputText, []string{"/bin/sh", "-c", "true"}},
	} {
		spec, err := NewSpec(t.Context(), SpecConfig{Command: []string{"/bin/sh", "-c", "true"}, Output: tc.output, MaxTurnUSD: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(spec.Command, tc.want) {
			t.Errorf("output %s: command %q, want %q", tc.output, spec.Command, tc.want)
		}
	}
}
