package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// What would otherwise fail at every message stops `switchboard run` at
// start, naming the key: a program that does not exist, and a bind that
// would show agents switchboard's own state.
func TestE2EAgentCheckedAtStart(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	for _, tc := range []struct {
		name    string
		cfg     e2eConfig
		wantErr []string
	}{
		{"command not in PATH", e2eConfig{command: `["switchboard-no-such-agent", "-p"]`},
			[]string{`agent.command[0]: "switchboard-no-such-agent": executable file not found in $PATH (looked up in PATH=` + os.Getenv("PATH") + `)`}},
		{"command path missing", e2eConfig{command: `["/nonexistent/agent"]`},
			[]string{"agent.command[0]: /nonexistent/agent: no such file or directory"}},
		{"bind of the group folders", e2eConfig{binds: []string{"{dir}/data/groups"}},
			[]string{"agent.binds[0]: ", "/data/groups is in the group folders (groups/)"}},
		{"bind of one group's folder", e2eConfig{binds: []string{"/usr", "{dir}/data/groups/main"}},
			[]string{"agent.binds[1]: ", "/data/groups/main is in the group folders (groups/)"}},
		{"bind of the data dir", e2eConfig{binds: []string{"{dir}/data"}},
			[]string{"agent.binds[0]: ", "/data is the data directory"}},
		{"bind of the database", e2eConfig{binds: []string{"{dir}/data/switchboard.db"}},
			[]string{"agent.binds[0]: ", "/data/switchboard.db is the database"}},
		{"bind of the sockets", e2eConfig{binds: []string{"{dir}/data/ipc"}},
			[]string{"agent.binds[0]: ", "/data/ipc is in the MCP socket directory (ipc/)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.agent = replyAgent
			dir := newE2E(t, tc.cfg)
			out, err := runCLI(switchboardBinary(t), dir, "run")
			for _, want := range tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("run: %v\nwant an error containing %q\n%s", err, want, out)
				}
			}
			if strings.Contains(err.Error(), "web_listening") {
				t.Errorf("the web chat started before the check failed:\n%v", err)
			}
		})
	}
}

// An agent script in a directory the sandbox hides (here the test's temp
// dir under /tmp, the sandbox's private /tmp) is bound read-only because
// agent.command names it, with one log line saying so, and the turn works.
// The program of a second gateway is a file that is gone after start-up:
// its chat hears that the agent could not start; status keeps bwrap's
// words.
func TestE2EAgentCommandBound(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	e2e := newE2E(t, e2eConfig{agent: replyAgent})
	g := startGW(t, e2e)
	script := filepath.Join(e2e, "agent.sh")
	rec := g.findLog("bound read-only into the sandbox because agent.command names it")
	if rec == nil || rec["path"] != script || rec["key"] != "agent.command[1]" {
		t.Errorf("log line for the bound script: %v; want path %s, key agent.command[1]", rec, script)
	}
	g.mustPost("lobby", "ann", "hello")
	if got := g.waitBot("lobby", 1)[0].Text; strings.Contains(got, "Sorry") {
		t.Fatalf("the sandboxed agent did not answer: %q", got)
	}

	gone := newE2E(t, e2eConfig{command: `[{program}]`})
	program := filepath.Join(gone, "my-agent")
	cfg := filepath.Join(gone, "switchboard.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(strings.Replace(string(b), "{program}", strconv.Quote(program), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(program, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	g2 := startGW(t, gone)
	if err := os.Remove(program); err != nil {
		t.Fatal(err)
	}
	g2.mustPost("lobby", "ann", "hello")
	if got, want := g2.waitBot("lobby", 1)[0].Text, "Sorry, something went wrong (the agent could not start). Retrying."; got != want {
		t.Errorf("chat notice %q; want %q", got, want)
	}
	var rep struct {
		FailedTurns []struct {
			Error string `json:"error"`
		} `json:"failed_turns"`
	}
	testwait.For(t, 10*time.Second, "the failed turn in status", func() bool {
		out, err := g2.cli("--json", "status")
		return err == nil && json.Unmarshal([]byte(out), &rep) == nil && len(rep.FailedTurns) > 0
	})
	if e := rep.FailedTurns[0].Error; !strings.Contains(e, "bwrap: execvp "+program+": No such file or directory") {
		t.Errorf("status error %q; want bwrap's words", e)
	}
}
