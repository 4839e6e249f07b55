package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/config"
	"switchboard/store"
)

// switchboard group set FOLDER --mid-turn MODE stores the group's own
// mode; default clears it; a bad mode is a usage error.
func TestGroupSetMidTurn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "acme")
	if out := mustSB(t, dir, "group", "set", "acme", "--mid-turn", "interrupt"); !strings.Contains(out, "group acme: mid_turn interrupt") {
		t.Errorf("output %q", out)
	}
	read := func() string {
		st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		m, err := st.GroupMidTurn(context.Background(), "acme")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := read(); m != "interrupt" {
		t.Fatalf("mid_turn %q; want interrupt", m)
	}
	// The error lists every value the flag takes, default included.
	if _, _, err := sb(t, dir, "group", "set", "acme", "--mid-turn", "later"); !isUsage(err) || !strings.Contains(err.Error(), "queue, steer, interrupt or default") {
		t.Errorf("bad mode: %v; want a usage error naming queue, steer, interrupt or default", err)
	}
	// With agent.input: prompt (the built-in default) steer queues: the
	// operator who sets it is told so (the gateway says it only at start).
	if out := mustSB(t, dir, "group", "set", "acme", "--mid-turn", "steer"); !strings.Contains(out, "group acme: mid_turn steer") ||
		!strings.Contains(out, "agent.input: stream-json") {
		t.Errorf("steer without stream-json input: output %q; want it said that it queues", out)
	}
	if _, _, err := sb(t, dir, "group", "set", "nope", "--mid-turn", "steer"); err == nil || !strings.Contains(err.Error(), "group nope does not exist") {
		t.Errorf("unknown group: %v", err)
	}
	mustSB(t, dir, "group", "set", "acme", "--mid-turn", "default")
	if m := read(); m != "" {
		t.Errorf("mid_turn %q after default; want cleared", m)
	}
}

// At start the config's groups[].mid_turn is stored, and steer without
// agent.input: stream-json (in agent.mid_turn or any group's) is said to
// fall back to queue, once; nothing is said when steer can work or is not
// asked for.
func TestSeedMidTurnSaysSteerFallsBack(t *testing.T) {
	for _, c := range []struct {
		name                 string
		agentMode, groupMode string
		input                string
		warns                bool
		stored               string // set before (switchboard group set), not in the config
	}{
		{"agent steer, prompt input", "steer", "", "prompt", true, ""},
		{"group steer, prompt input", "queue", "steer", "", true, ""},
		{"group steer, stream-json input", "queue", "steer", "stream-json", false, ""},
		{"no steer", "queue", "interrupt", "prompt", false, ""},
		// A group set to steer by the CLI, not the config, was not said.
		{"group steer set by the CLI, prompt input", "queue", "", "prompt", true, "steer"},
		{"group steer set by the CLI, config resets it", "queue", "queue", "prompt", false, "steer"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "switchboard.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.AddGroup(ctx, "acme"); err != nil {
				t.Fatal(err)
			}
			if c.stored != "" {
				if err := st.SetGroupMidTurn(ctx, "acme", c.stored); err != nil {
					t.Fatal(err)
				}
			}
			var logs bytes.Buffer
			a := &app{log: slog.New(slog.NewTextHandler(&logs, nil))}
			a.cfg.Agent.MidTurn, a.cfg.Agent.Input = c.agentMode, c.input
			a.cfg.Groups = []config.GroupSeed{{Folder: "acme", MidTurn: c.groupMode}}
			if err := a.seedMidTurn(ctx, st); err != nil {
				t.Fatal(err)
			}
			if m, err := st.GroupMidTurn(ctx, "acme"); err != nil || c.groupMode != "" && m != c.groupMode {
				t.Errorf("stored mid_turn %q (%v); want the config's %q", m, err, c.groupMode)
			}
			want := 0
			if c.warns {
				want = 1
			}
			if n := strings.Count(logs.String(), "falls back to queue"); n != want {
				t.Errorf("said steer falls back to queue %d times; want %d\n%s", n, want, logs.String())
			}
			// It says who asked for steer: agent.mid_turn or the group.
			if c.warns && c.agentMode == "steer" && !strings.Contains(logs.String(), "agent_mid_turn=steer") {
				t.Errorf("the warning does not name agent.mid_turn:\n%s", logs.String())
			}
			if c.warns && c.agentMode != "steer" && !strings.Contains(logs.String(), "groups=[acme]") {
				t.Errorf("the warning does not name the group:\n%s", logs.String())
			}
		})
	}
}
