package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/config"
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
// nats.url; with neither, the usage error says where to put one.
func TestWorkerNATSURL(t *testing.T) {
	dir := t.TempDir()
	cfg := func(yaml string) string {
		p := filepath.Join(dir, fmt.Sprintf("worker%d.yaml", len(yaml)))
		if err := os.WriteFile(p, []byte("data_dir: "+filepath.Join(dir, "data")+"\n"+yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	worker := func(args ...string) error {
		var out, errb bytes.Buffer
		return run(t.Context(), args, env(nil), strings.NewReader(""), &out, &errb)
	}
	// nats.url from the config: the worker tries it (nothing listens on port 1).
	err := worker("--config", cfg("nats: {url: \"nats://127.0.0.1:1\"}\n"), "worker", "--slots", "1")
	if err == nil || !strings.Contains(err.Error(), "connect to NATS at nats://127.0.0.1:1") {
		t.Errorf("worker with nats.url in its config: err %v; want it to connect to nats.url", err)
	}
	err = worker("--config", cfg(""), "worker")
	if !isUsage(err) || !strings.Contains(err.Error(), "--nats") || !strings.Contains(err.Error(), "nats.url") {
		t.Errorf("worker without a NATS URL: err %v; want a usage error naming --nats and nats.url", err)
	}
}

// The embedded NATS server has no authentication: listening off loopback,
// the gateway says at start what anyone who reaches it can do, and what to
// do instead. On loopback it says nothing.
func TestEmbeddedNATSOffLoopbackWarns(t *testing.T) {
	for listen, wantWarn := range map[string]bool{"127.0.0.1:0": false, "0.0.0.0:0": true} {
		t.Run(listen, func(t *testing.T) {
			var logs bytes.Buffer
			a := &app{cfg: config.Default(), log: slog.New(slog.NewTextHandler(&logs, nil))}
			a.cfg.DataDir = t.TempDir()
			a.cfg.Agent.Runner, a.cfg.NATS.Embedded, a.cfg.NATS.Listen = "nats", true, listen
			_, stop, err := a.natsRunner(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			stop()
			warned := strings.Contains(logs.String(), "level=WARN") && strings.Contains(logs.String(), "without authentication") &&
				strings.Contains(logs.String(), "nats.url")
			if warned != wantWarn {
				t.Errorf("nats.listen %s: warned %v, want %v; log:\n%s", listen, warned, wantWarn, logs.String())
			}
		})
	}
}
