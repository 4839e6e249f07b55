package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltWithoutFTS5SaysHow: go-sqlite3 has FTS5 only with the
// sqlite_fts5 build tag, and a `go build` or `go install` without it
// (GOFLAGS unset, as outside the Makefile) makes a binary whose schema
// cannot be created. That binary must say how to build it right at its
// first command, not fail later with "no such module: fts5".
func TestBuiltWithoutFTS5SaysHow(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the binary")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go tool: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "switchboard")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build without tags: %v\n%s", err, out)
	}
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, "--data-dir", data, "group", "add", "acme")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a binary without FTS5 added a group:\n%s", out)
	}
	if !strings.Contains(string(out), "-tags sqlite_fts5") {
		t.Errorf("its error does not say how to build it:\n%s", out)
	}
}
