package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make release builds a static binary that runs on its own and prints the
// version, commit and date stamped into it.
func TestReleaseBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release binary")
	}
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-C", root, "release", "VERSION=v9.9.9-test", "COMMIT=abc123", "DATE=2026-11-24T00:00:00Z")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, b)
	}
	bin := filepath.Join(root, "bin", "switchboard-linux-amd64")
	ldd, _ := exec.Command("ldd", bin).CombinedOutput()
	if !strings.Contains(string(ldd), "not a dynamic executable") && !strings.Contains(string(ldd), "statically linked") {
		t.Errorf("ldd says the release binary is dynamic:\n%s", ldd)
	}
	// It runs with an empty environment, from an empty directory.
	run := exec.Command(bin, "version")
	run.Env, run.Dir = []string{}, t.TempDir()
	v, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(v), "switchboard v9.9.9-test (commit abc123, built 2026-11-24T00:00:00Z") {
		t.Errorf("version: %v\n%s", err, v)
	}
}
