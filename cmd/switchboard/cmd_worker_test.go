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
