package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/agent"
	"switchboard/config"
)

// At start, Claude Code resuming sessions in the sandbox without ~/.claude
// and ~/.claude.json on the host, bound read-write, is a warning that says
// what users will see and how to fix it; the recipe's setup is not.
// Not parallel: it sets HOME.
func TestClaudeSessionsWarning(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dotClaude, dotJSON := filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")
	recipe := []agent.Bind{{Path: dotClaude, RW: true}, {Path: dotJSON, RW: true}}
	claude := config.AgentConfig{Command: []string{"claude", "-p"}, ResumeArgs: []string{"--resume", "{session}"}, Output: agent.OutputClaudeJSON}
	for _, c := range []struct {
		name   string
		create bool
		cfg    config.AgentConfig
		binds  []agent.Bind
		noSB   bool
		want   []string // in the warning; none: no warning
	}{
		{"missing", false, claude, recipe, false, []string{dotClaude + " does not exist", dotJSON + " does not exist"}},
		{"not bound", true, claude, nil, false, []string{dotClaude + " is not bound read-write", dotJSON + " is not bound read-write"}},
		{"bound read-only", true, claude, []agent.Bind{{Path: dotClaude}, {Path: dotJSON}}, false, []string{dotClaude + " is not bound read-write"}},
		{"the recipe", true, claude, recipe, false, nil},
		{"home bound", true, claude, []agent.Bind{{Path: home, RW: true}}, false, nil},
		{"no resume_args", false, config.AgentConfig{Command: claude.Command, Output: claude.Output}, nil, false, nil},
		{"not claude", false, config.AgentConfig{Command: []string{"codex", "exec"}, ResumeArgs: []string{"resume", "{session}"}, Output: agent.OutputCodexJSON}, nil, false, nil},
		{"no sandbox", false, claude, nil, true, nil},
		{"claude-stream through a wrapper", false, config.AgentConfig{Command: []string{"/usr/local/bin/my-claude"}, ResumeArgs: []string{"--resume", "{session}"},
			Output: agent.OutputClaudeStream}, nil, false, []string{dotClaude + " does not exist"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(dotClaude)
			os.Remove(dotJSON)
			if c.create {
				if err := os.Mkdir(dotClaude, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dotJSON, []byte("{}"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			a := &app{cfg: config.Config{Agent: c.cfg}, log: slog.New(slog.NewTextHandler(&logs, nil))}
			sb := &agent.Sandbox{Binds: c.binds}
			if c.noSB {
				sb = nil
			}
			a.warnClaudeSessions(sb)
			got := logs.String()
			if len(c.want) == 0 {
				if got != "" {
					t.Errorf("warned: %s", got)
				}
				return
			}
			for _, w := range append(c.want, "every follow-up message shows the user a failure notice", "{path: ~/.claude, rw: true}, {path: ~/.claude.json, rw: true}") {
				if !strings.Contains(got, w) {
					t.Errorf("log %q lacks %q", got, w)
				}
			}
		})
	}
}
