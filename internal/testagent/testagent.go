// Package testagent writes scripted agents for tests: the one way a test of
// the agent runner, the gateway or the MCP tools gets an agent command. It is
// for tests only.
package testagent

import (
	"os"
	"path/filepath"
	"testing"
)

// Script writes body as a shell script in a temp dir and returns the argv
// that runs it with args. The script is run through /bin/sh rather than
// exec'd directly: a file just written can fail to exec with ETXTBSY while
// parallel tests fork.
func Script(t testing.TB, body string, args ...string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return append([]string{"/bin/sh", path}, args...)
}
