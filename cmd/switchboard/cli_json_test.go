package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONFlagOnWriteCommands: --json is machine output on every command
// (CONTRACT §11, README "every command speaks JSON with --json"). budget
// set/rm and nats worker add/rm and gateway-creds printed their text line
// under --json, so a script reading stdout as JSON failed.
func TestJSONFlagOnWriteCommands(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	mustSB(t, dir, "group", "add", "main")
	gwCreds := filepath.Join(base, "gateway.creds")
	cases := []struct {
		name string
		args []string
		want map[string]any // fields the JSON object must hold
		keys []string       // fields that must be present (value not checked)
	}{
		{"budget set", []string{"budget", "set", "main", "--daily", "5"},
			map[string]any{"folder": "main", "daily_usd": 5.0, "monthly_usd": 0.0}, nil},
		{"budget rm", []string{"budget", "rm", "main"},
			map[string]any{"folder": "main", "removed": true}, nil},
		{"nats worker add", []string{"nats", "worker", "add", "gpu1"},
			map[string]any{"worker": "gpu1"}, []string{"path", "public_key"}},
		{"nats worker rm", []string{"nats", "worker", "rm", "gpu1"},
			map[string]any{"worker": "gpu1", "removed": true}, nil},
		{"nats gateway-creds", []string{"nats", "gateway-creds", "--out", gwCreds},
			map[string]any{"path": gwCreds}, []string{"public_key"}},
	}
	for _, tc := range cases {
		out := mustSB(t, dir, append([]string{"--json"}, tc.args...)...)
		var got map[string]any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Errorf("switchboard --json %s: not JSON (%v): %q", strings.Join(tc.args, " "), err, out)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("switchboard --json %s: %s = %#v, want %#v (in %s)", tc.name, k, got[k], v, out)
			}
		}
		for _, k := range tc.keys {
			if s, _ := got[k].(string); s == "" {
				t.Errorf("switchboard --json %s: no %s in %s", tc.name, k, out)
			}
		}
	}
}
