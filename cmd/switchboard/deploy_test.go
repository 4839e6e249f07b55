package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/internal/testenv"
)

// The systemd unit keeps its hardening, leaves user namespaces to
// bubblewrap, and passes systemd-analyze verify where systemd is installed.
func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "switchboard.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	set := map[string]string{}
	for _, line := range strings.Split(unit, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(line, "#") {
			set[k] = v
		}
	}
	for k, want := range map[string]string{
		"User": "switchboard", "StateDirectory": "switchboard", "NoNewPrivileges": "yes", "ProtectSystem": "strict",
		"ProtectHome": "read-only", "PrivateTmp": "yes", "ReadWritePaths": "/var/lib/switchboard", "KillSignal": "SIGTERM",
	} {
		if set[k] != want {
			t.Errorf("%s=%q; want %q", k, set[k], want)
		}
	}
	// bubblewrap needs to create user, mount, PID (and network) namespaces.
	for _, k := range []string{"RestrictNamespaces", "PrivateUsers"} {
		if v, ok := set[k]; ok {
			t.Errorf("%s=%s would break the agent sandbox (bubblewrap)", k, v)
		}
	}
	// The data directory lies inside the writable state directory but is
	// not the service user's home (docs/deploy.md: useradd --home-dir
	// /var/lib/switchboard), where the agent CLI keeps its login.
	if !strings.Contains(set["ExecStart"], " run") || !strings.Contains(set["ExecStart"], "--data-dir /var/lib/switchboard/data ") {
		t.Errorf("ExecStart=%s; want --data-dir /var/lib/switchboard/data ... run", set["ExecStart"])
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "useradd --system --home-dir /var/lib/switchboard ") ||
		!strings.Contains(string(doc), "--data-dir /var/lib/switchboard/data ") {
		t.Error("docs/deploy.md: want the service user's home /var/lib/switchboard and the CLI on --data-dir /var/lib/switchboard/data")
	}
	analyze := testenv.Need(t, "systemd-analyze", "make deps installs systemd; without it the unit's syntax is not verified")
	// verify needs ExecStart to exist: point it at the test binary.
	local := filepath.Join(t.TempDir(), "switchboard.service")
	if err := os.WriteFile(local, []byte(strings.ReplaceAll(unit, "/usr/local/bin/switchboard", switchboardBinary(t))), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", local).CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
