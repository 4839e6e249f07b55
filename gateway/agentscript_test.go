package gateway

import (
	"os"
	"path/filepath"
	"testing"
)

// agentScript writes body as a shell script and returns the argv that runs it
// with args: the agent of a harness. The script is run through /bin/sh rather
// than exec'd directly: a file just written can fail to exec with ETXTBSY
// while parallel tests fork.
func agentScript(t testing.TB, body string, args ...string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return append([]string{"/bin/sh", path}, args...)
}
