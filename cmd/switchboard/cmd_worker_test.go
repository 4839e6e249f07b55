package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/config"
	"switchboard/remote"
)

// A worker runs only its own agent.command: a job naming another program
// (anyone who can publish to NATS could send one) is refused.
func TestWorkerRunsOnlyItsOwnCommand(t *testing.T) {
	a := &app{cfg: config.Default(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a.cfg.Agent.Command = []string{"/bin/echo", "hi"}
	prepare := a.workerSpecs(t.Context(), "/usr/bin/switchboard", nil)
	spec, err := prepare([]string{"/bin/echo", "hi"})
	if err != nil || strings.Join(spec.Command, " ") != "/bin/echo hi" {
		t.Fatalf("own command: spec %v err %v", spec.Command, err)
	}
	if _, err := prepare([]string{"/bin/sh", "-c", "rm -rf ~"}); err == nil || !strings.Contains(err.Error(), "is not this worker's") {
		t.Fatalf("foreign command: err %v; want it refused", err)
	}
}

// agent.max_turn_usd caps a turn on a worker as it does on the gateway: a
// claude-json agent gets --max-budget-usd from the worker's config.
func TestWorkerAppliesMaxTurnUSD(t *testing.T) {
	a := &app{cfg: config.Default(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	a.cfg.Agent.Command = []string{"/bin/echo", "hi"}
	a.cfg.Agent.Output = "claude-json"
	a.cfg.Agent.MaxTurnUSD = 0.5
	spec, err := a.workerSpecs(t.Context(), "/usr/bin/switchboard", nil)([]string{"/bin/echo", "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(spec.Command, " "); got != "/bin/echo hi --max-budget-usd 0.5" {
		t.Errorf("worker's agent command %q; want agent.max_turn_usd's --max-budget-usd 0.5 appended", got)
	}
}

// A worker finds its NATS server in --nats or, without it, in its config's
// nats.url, and its credentials in --creds or nats.creds; without either,
// the usage error says where to put one. Gateway credentials are refused.
func TestWorkerNATSURL(t *testing.T) {
	dir := t.TempDir()
	creds, err := remote.AddWorker(filepath.Join(dir, "auth"), "w1", "")
	if err != nil {
		t.Fatal(err)
	}
	gwCreds, err := remote.MintGatewayCreds(filepath.Join(dir, "gateway.creds"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	cfg := func(yaml string) string {
		n++
		p := filepath.Join(dir, fmt.Sprintf("worker%d.yaml", n))
		if err := os.WriteFile(p, []byte("data_dir: "+filepath.Join(dir, "data")+"\nagent: {sandbox: none}\n"+yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	worker := func(args ...string) error {
		var out, errb bytes.Buffer
		return run(t.Context(), args, env(nil), strings.NewReader(""), &out, &errb)
	}
	// nats.url and nats.creds from the config: the worker tries them
	// (nothing listens on port 1).
	err = worker("--config", cfg(fmt.Sprintf("nats: {url: \"nats://127.0.0.1:1\", creds: %q}\n", creds.Path)), "worker", "--slots", "1")
	if err == nil || !strings.Contains(err.Error(), "connect to NATS at nats://127.0.0.1:1") {
		t.Errorf("worker with nats.url in its config: err %v; want it to connect to nats.url", err)
	}
	err = worker("--config", cfg(""), "worker")
	if !isUsage(err) || !strings.Contains(err.Error(), "--nats") || !strings.Contains(err.Error(), "nats.url") {
		t.Errorf("worker without a NATS URL: err %v; want a usage error naming --nats and nats.url", err)
	}
	err = worker("--config", cfg("nats: {url: \"nats://127.0.0.1:1\"}\n"), "worker")
	if !isUsage(err) || !strings.Contains(err.Error(), "nats.creds") || !strings.Contains(err.Error(), "nats worker add") {
		t.Errorf("worker without credentials: err %v; want a usage error naming nats.creds and how to mint them", err)
	}
	err = worker("--config", cfg("nats: {url: \"nats://127.0.0.1:1\"}\n"), "worker", "--creds", gwCreds.Path)
	if err == nil || !strings.Contains(err.Error(), "the gateway's credentials, not a worker's") {
		t.Errorf("worker with the gateway's credentials: err %v; want them refused", err)
	}
}

// `switchboard nats worker add` writes the worker's credentials with mode
// 0600, says where and what to set, and refuses a second worker of the
// same name; rm unregisters it. Nothing secret is printed.
func TestNATSWorkerAddCLI(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sb.yaml")
	if err := os.WriteFile(cfg, []byte("data_dir: "+filepath.Join(dir, "data")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := run(t.Context(), append([]string{"--config", cfg}, args...), env(nil), strings.NewReader(""), &out, &errb)
		return out.String(), err
	}
	out, err := cli("nats", "worker", "add", "gpu1")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "data", "nats-auth", "workers", "gpu1.creds")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v; want mode 0600", path, err)
	}
	seed, _ := os.ReadFile(path)
	if !strings.Contains(out, path) || !strings.Contains(out, "nats.creds") {
		t.Errorf("output %q; want the file and nats.creds named", out)
	}
	for _, line := range strings.Split(string(seed), "\n") {
		if strings.HasPrefix(line, "SU") && strings.Contains(out, line) {
			t.Errorf("the seed was printed: %q", out)
		}
	}
	if _, err := cli("nats", "worker", "add", "gpu1"); !isUsage(err) || !strings.Contains(err.Error(), "already registered") {
		t.Errorf("adding gpu1 again: err %v; want a usage error", err)
	}
	if _, err := cli("nats", "worker", "add", "gpu.1"); !isUsage(err) {
		t.Errorf("adding gpu.1: err %v; want a usage error", err)
	}
	if out, err := cli("nats", "worker", "list"); err != nil || !strings.Contains(out, "gpu1") {
		t.Errorf("list: %q %v; want gpu1", out, err)
	}
	if _, err := cli("nats", "worker", "rm", "gpu1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("rm left %s", path)
	}
}

// A worker or a gateway refuses a plain connection to a NATS server on
// another machine (jobs carry MCP tokens and agent.env values), saying
// what to set; TLS, or a server on this machine, is fine.
func TestPlainNATSOffLoopbackRefused(t *testing.T) {
	notTLS := errors.New("nats: connection not secured with TLS")
	for _, c := range []struct {
		url    string
		tlsErr error
		refuse bool
	}{
		{"nats://10.1.2.3:4222", notTLS, true},
		{"nats://user:pw@nats.internal:4222", notTLS, true},
		{"tls://nats.internal:4222", nil, false},
		{"nats://nats.internal:4222", nil, false}, // the server required TLS
		{"nats://127.0.0.1:4222", notTLS, false},
		{"nats://localhost:4222", notTLS, false},
		{"nats://[::1]:4222", notTLS, false},
	} {
		err := plainOffLoopback(c.url, c.tlsErr)
		if (err != nil) != c.refuse {
			t.Errorf("%s (TLS error %v): %v; want refused %v", c.url, c.tlsErr, err, c.refuse)
		}
		if err != nil && (!strings.Contains(err.Error(), "nats.tls_ca") || strings.Contains(err.Error(), "pw")) {
			t.Errorf("%s: %q; want it to name nats.tls_ca and no password", c.url, err)
		}
	}
}
