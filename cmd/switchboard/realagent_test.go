//go:build interop && (linux || darwin)

package main

// Real agent CLIs for the end-to-end tests (Claude Code, Codex): every one
// is installed through npmPackage. npmPackage installs one pinned
// npm package, with the native optional dependency npm picks for this
// platform, into a cache outside the repository
// (<user cache dir>/switchboard-test/npm/<name>@<version>, where the user
// cache dir is $XDG_CACHE_HOME or ~/.cache on Linux): once per version,
// reused by later runs, and installed into a temporary sibling that is
// renamed into place only when complete, so parallel or interrupted runs
// never see half an install.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testenv"
)

const npmInstallTimeout = 10 * time.Minute // a first install downloads a few hundred MB

// npmInstalledMarker is written last into a complete install.
const npmInstalledMarker = ".switchboard-installed"

// npmPackage installs spec ("name@exact-version") and returns the install's
// directory (its packages are under node_modules/). Without node and npm, or
// when the registry cannot be reached, it skips the test outside CI and
// fails it in CI. what names the test for those messages.
func npmPackage(t testing.TB, what, spec string) string {
	t.Helper()
	name, version, ok := strings.Cut(strings.TrimPrefix(spec, "@"), "@")
	if !ok || version == "" || strings.ContainsAny(version, "^~<>=* ") {
		t.Fatalf("npmPackage(%q): want name@exact-version", spec)
	}
	npm := npmTool(t, what)
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	root := filepath.Join(cache, "switchboard-test", "npm")
	safe := strings.ReplaceAll(name, "/", "-") + "@" + version // @scope/pkg → scope-pkg@1.2.3
	final := filepath.Join(root, safe)
	installed := func() bool {
		_, err := os.Stat(filepath.Join(final, npmInstalledMarker))
		return err == nil
	}
	if installed() {
		return final
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	defer lockFile(t, filepath.Join(root, safe+".lock"))()
	if installed() { // another test process installed it meanwhile
		return final
	}
	// Under the lock nobody else installs this version: what is left of
	// it is from an interrupted run.
	leftovers, _ := filepath.Glob(filepath.Join(root, ".tmp-"+safe+"-*"))
	for _, d := range append(leftovers, final) {
		if err := os.RemoveAll(d); err != nil {
			t.Fatalf("remove the incomplete install %s: %v", d, err)
		}
	}
	tmp, err := os.MkdirTemp(root, ".tmp-"+safe+"-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // gone already after the rename below
	if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte("{\"private\": true}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// --ignore-scripts: what a package's install script would fetch or
	// link, the test finds in the native optional dependency itself.
	npmRun(t, what, npm, tmp, npmInstallTimeout, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact", spec)
	if err := os.WriteFile(filepath.Join(tmp, npmInstalledMarker), []byte(spec+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp made it private
		t.Fatal(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		t.Fatalf("move the install of %s into place: %v", spec, err)
	}
	t.Logf("npm installed %s into %s in %s", spec, final, time.Since(start).Round(100*time.Millisecond))
	return final
}

// npmTool returns npm's path; without Node and npm it ends the test
// (unavailable: a skip outside CI, a failure in CI).
func npmTool(t testing.TB, what string) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		testenv.Unavailable(t, "%s needs Node 20+ and npm on PATH: %v", what, err)
	}
	return npm
}

// lockFile holds an exclusive lock on path (created if missing), so that
// concurrent test processes do not install over each other, until the
// returned function is called.
func lockFile(t testing.TB, path string) (unlock func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("lock %s: %v", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// npmRun runs npm with args in dir within timeout. An unreachable registry
// ends the test (unavailable); a failed run fails it with npm's output.
func npmRun(t testing.TB, what, npm, dir string, timeout time.Duration, args ...string) {
	t.Helper()
	if err := registryReachable(); err != nil {
		testenv.Unavailable(t, "%s needs the npm registry, which cannot be reached: %v", what, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (timed out after %s)", err, timeout)
		}
		t.Fatalf("npm %s in %s failed (is the npm registry reachable?): %v\n%s", strings.Join(args, " "), dir, err, tail(out, 4000))
	}
}

// npmPlatform is the suffix of the per-platform packages that CLIs such as
// Claude Code ship their native binary in (claude-code-linux-x64, …).
func npmPlatform(t testing.TB, goos, goarch string) string {
	t.Helper()
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[goarch]
	if arch == "" || (goos != "linux" && goos != "darwin") {
		testenv.Unavailable(t, "no native npm package for %s/%s", goos, goarch)
	}
	return goos + "-" + arch
}
