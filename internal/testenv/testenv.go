// Package testenv decides what a test does when the machine lacks something
// it needs (a tool such as bwrap, chromium, ip or systemd-analyze, root, the
// npm registry): outside CI it skips, saying what is missing and how to get
// it; with the CI environment variable set it fails, so that a CI run never
// passes by skipping. It is for tests only.
//
// Skips that are not about the machine (-short mode, a helper process) stay
// plain t.Skip calls that say why.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// CI reports whether the CI environment variable is set (to anything).
func CI() bool { return os.Getenv("CI") != "" }

// Unavailable ends the test because the machine cannot run it: a skip
// outside CI, a failure with CI set. The message says what is missing.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatalf("%s (CI is set: a test that cannot run here fails)", why)
	}
	t.Skipf("skipped: %s (with CI set this fails)", why)
}

// Need returns the path of the program name (looked up in PATH, or checked
// as given when it holds a slash). Without it the test is Unavailable;
// install says how to get it ("make test installs it").
func Need(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, "%s is not installed (%s): %v", name, install, err)
	}
	return path
}

// Require is Need for a program the test cannot be meaningfully skipped
// without (the sandbox tests and bwrap): it fails, CI or not.
func Require(t testing.TB, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not installed (%s): %v", name, install, err)
	}
	return path
}
