package groups

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	ok := []Folder{"main", "root", "acme/eng/oncall", "a_b-c/d1", "a/b/c/d/e/f"}
	for _, f := range ok {
		if err := f.Validate(); err != nil {
			t.Errorf("Validate(%q) = %v, want nil", f, err)
		}
	}
	bad := map[string]Folder{
		"empty":     "",
		"upper":     "Main",
		"dotdot":    "a/../b",
		"dot":       "a/./b",
		"leading":   "/a",
		"trailing":  "a/",
		"double":    "a//b",
		"space":     "a b",
		"too deep":  "a/b/c/d/e/f/g",
		"backslash": `a\b`,
		"unicode":   "caf\u00e9",
		"long":      Folder(strings.Repeat("x", 65)),
		"nul":       "a\x00b",
	}
	for name, f := range bad {
		err := f.Validate()
		if err == nil || !errors.Is(err, ErrInvalidFolder) {
			t.Errorf("%s: Validate(%q) = %v, want ErrInvalidFolder", name, f, err)
		}
	}
}

func TestTier(t *testing.T) {
	cases := []struct {
		folder, op Folder
		want       int
	}{
		{"root", "root", 0},
		{"main", "root", 1},
		{"acme/eng", "root", 2},
		{"acme/eng/oncall", "root", 3},
		{"a/b/c/d/e/f", "root", 3},
		{"acme/ops", "acme/ops", 0}, // the operator folder may be nested
	}
	for _, c := range cases {
		if got := Tier(c.folder, c.op); got != c.want {
			t.Errorf("Tier(%q, %q) = %d, want %d", c.folder, c.op, got, c.want)
		}
	}
}

func TestSubtreeAndParent(t *testing.T) {
	if !Folder("acme").Contains("acme") || !Folder("acme").Contains("acme/eng/x") {
		t.Error("subtree should include itself and descendants")
	}
	if Folder("acme").Contains("acmecorp") || Folder("acme/eng").Contains("acme") {
		t.Error("subtree must not include prefix siblings or ancestors")
	}
	if Folder("acme/eng/x").Parent() != "acme/eng" || Folder("main").Parent() != "" {
		t.Error("Parent wrong")
	}
}

func TestSetupWritesMCPConfig(t *testing.T) {
	l := Layout{DataDir: t.TempDir()}
	if err := l.Setup("acme/eng", "/usr/bin/switchboard"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(l.Dir("acme/eng"), ".mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string
			Args    []string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	s := cfg.MCPServers["switchboard"]
	if s.Command != "/usr/bin/switchboard" || len(s.Args) != 3 || s.Args[0] != "mcp-bridge" || !filepath.IsAbs(s.Args[2]) ||
		!strings.HasSuffix(s.Args[2], filepath.Join("ipc", "acme", "eng", "mcp.sock")) {
		t.Errorf("unexpected .mcp.json: %s", b)
	}
	if err := l.Setup("../x", "sb"); err == nil {
		t.Error("Setup accepted an invalid folder")
	}
}

// Group folders are private: created 0700 (the groups/ directory too), and
// an existing one that is world-readable is tightened.
func TestSetupMakesFoldersPrivate(t *testing.T) {
	l := Layout{DataDir: t.TempDir()}
	if err := os.MkdirAll(l.Dir("acme/eng"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.Setup("acme/eng", "/bin/switchboard"); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{l.Dir("acme/eng"), l.Dir("acme"), filepath.Join(l.DataDir, "groups")} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", d, fi.Mode().Perm(), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(l.Dir("acme/eng"), ".mcp.json")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf(".mcp.json: %v, %v; want 0600", fi.Mode().Perm(), err)
	}
}

// ParseFolder mints a Folder only from a valid name, with Validate's error.
func TestParseFolder(t *testing.T) {
	if f, err := ParseFolder("acme/eng"); err != nil || f != "acme/eng" {
		t.Errorf(`ParseFolder("acme/eng") = %q, %v; want "acme/eng", nil`, f, err)
	}
	if f, err := ParseFolder("../x"); !errors.Is(err, ErrInvalidFolder) || f != "" {
		t.Errorf(`ParseFolder("../x") = %q, %v; want "", ErrInvalidFolder`, f, err)
	}
}

// Setup at every start writes nothing that is already as it should be (a
// write per group was seconds at ten thousand groups), and still rewrites
// a .mcp.json that points elsewhere (the binary moved).
func TestSetupRewritesOnlyWhatDiffers(t *testing.T) {
	l := Layout{DataDir: t.TempDir()}
	if err := l.Setup("acme", "/bin/switchboard"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(l.Dir("acme"), ".mcp.json")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if err := l.Setup("acme", "/bin/switchboard"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || !fi.ModTime().Equal(old) {
		t.Errorf("an unchanged .mcp.json was written again (mtime %v, %v)", fi.ModTime(), err)
	}
	if err := l.Setup("acme", "/opt/switchboard"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "/opt/switchboard") {
		t.Errorf(".mcp.json after the binary moved: %s, %v", b, err)
	}
}

// Setup writes nothing through a symlink: not through a subgroup's folder
// that its parent's agent swapped for one (to the data directory), nor
// through a .mcp.json that the group's own agent made one (to a file
// outside the folder, the config say).
func TestSetupFollowsNoSymlink(t *testing.T) {
	data := t.TempDir()
	l := Layout{DataDir: data}
	for _, f := range []Folder{"acme", "acme/eng", "main"} {
		if err := l.Setup(f, "/bin/switchboard"); err != nil {
			t.Fatal(err)
		}
	}
	eng := l.Dir("acme/eng")
	if err := os.Rename(eng, eng+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(data, eng); err != nil {
		t.Fatal(err)
	}
	if err := l.Setup("acme/eng", "/bin/switchboard-new"); err == nil || !strings.Contains(err.Error(), "is a symlink") {
		t.Errorf("Setup through a swapped folder: %v; want an error saying it is a symlink", err)
	}
	if _, err := os.Stat(filepath.Join(data, ".mcp.json")); !os.IsNotExist(err) {
		t.Errorf("Setup wrote .mcp.json into the data directory: %v", err)
	}
	config := filepath.Join(data, "switchboard.yaml")
	if err := os.WriteFile(config, []byte("data_dir: .\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mcp := filepath.Join(l.Dir("main"), ".mcp.json")
	if err := os.Remove(mcp); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(config, mcp); err != nil {
		t.Fatal(err)
	}
	if err := l.Setup("main", "/bin/switchboard-new"); err == nil {
		t.Error("Setup wrote .mcp.json through a symlink out of the folder")
	}
	if b, _ := os.ReadFile(config); string(b) != "data_dir: .\n" {
		t.Errorf("the config was overwritten: %q", b)
	}
}
