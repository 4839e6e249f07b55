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
		t.Skip("-short: builds the release binary")
	}
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "switchboard-linux-amd64")
	cmd := exec.Command("make", "-C", root, "release", "VERSION=v9.9.9-test", "COMMIT=abc123", "DATE=2026-11-24T00:00:00Z", "RELEASE_BIN="+bin)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make release: %v\n%s", err, b)
	}
	// Static glibc links warn about functions that need a shared glibc at
	// run time (getpwnam, dlopen): the build tags keep them out.
	if strings.Contains(string(b), "statically linked applications requires at runtime") {
		t.Errorf("the release link needs glibc at run time:\n%s", b)
	}
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
