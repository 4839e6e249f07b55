package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"
)

// A worker runs only its own agent.command: a job naming another program
// (anyone who can publish to NATS could send one) is refused.
func TestWorkerRunsOnlyItsOwnCommand(t *testing.T) {
	a := &app{cfg: DefaultConfig(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
	a := &app{cfg: DefaultConfig(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
