package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

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
	if _, _, err := sb(t, dir, "group", "set", "acme", "--mid-turn", "later"); !isUsage(err) {
		t.Errorf("bad mode: %v; want a usage error", err)
	}
	if _, _, err := sb(t, dir, "group", "set", "nope", "--mid-turn", "steer"); err == nil || !strings.Contains(err.Error(), "group nope does not exist") {
		t.Errorf("unknown group: %v", err)
	}
	mustSB(t, dir, "group", "set", "acme", "--mid-turn", "default")
	if m := read(); m != "" {
		t.Errorf("mid_turn %q after default; want cleared", m)
	}
}
