package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/ops"
)

// TestTokenAddListRemove: token add prints the token once (alone on
// stdout); list shows its id and folder but never the secret, nor does the
// database file hold it; rm revokes it; bad input is a usage error.
func TestTokenAddListRemove(t *testing.T) {
	dir := t.TempDir()
	mustSB(t, dir, "group", "add", "acme")
	out, errOut, err := sb(t, dir, "token", "add", "acme", "--ttl", "30d")
	if err != nil {
		t.Fatal(err)
	}
	tok := strings.TrimSpace(out)
	if !strings.HasPrefix(tok, ops.TokenPrefix) || strings.Contains(tok, "\n") {
		t.Fatalf("token add printed %q", out)
	}
	if !strings.Contains(errOut, "shown only this once") {
		t.Errorf("stderr %q does not say the token is shown once", errOut)
	}
	// No config sets mcp.listen here: the token has no endpoint to use yet,
	// and token add says so (on stderr: stdout is the token alone).
	if !strings.Contains(errOut, "mcp.listen is not set in the built-in defaults") {
		t.Errorf("stderr %q does not say mcp.listen is off", errOut)
	}
	list := mustSB(t, dir, "token", "list")
	if !strings.Contains(list, "acme") || strings.Contains(list, tok) || strings.Contains(list, tok[len(ops.TokenPrefix):]) {
		t.Fatalf("token list:\n%s", list)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	for _, name := range []string{"switchboard.db", "switchboard.db-wal"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err == nil && bytes.Contains(b, []byte(tok[len(ops.TokenPrefix):])) {
			t.Errorf("the token is in %s", name)
		}
	}
	mustSB(t, dir, "token", "rm", id)
	if list := mustSB(t, dir, "token", "list"); strings.Contains(list, id) {
		t.Errorf("after rm, token list:\n%s", list)
	}
	if _, _, err := sb(t, dir, "token", "rm", id); err == nil || !strings.Contains(err.Error(), "no such token") {
		t.Errorf("rm twice: %v", err)
	}
	for _, args := range [][]string{{"token", "add", "acme", "--ttl", "soon"}, {"token", "add", "Bad"}} {
		if _, _, err := sb(t, dir, args...); !isUsage(err) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
	if _, _, err := sb(t, dir, "token", "add", "nope"); err == nil || !strings.Contains(err.Error(), "no such group") {
		t.Errorf("token add for a missing group: %v", err)
	}
}
