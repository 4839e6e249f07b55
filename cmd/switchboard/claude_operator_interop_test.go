//go:build interop && linux

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// claudeOperator lays out under dir what docs/operating.md asks of an
// operator who runs Claude Code: a home whose ~/.claude and ~/.claude.json
// exist before the first start (their binds hold the sessions --resume
// needs), and `claude` on PATH in dir/bin, outside /usr and /opt. env is
// the gateway's environment against the Messages API at apiURL, agentEnv
// the agent.env names that pass it on. Neither has IS_SANDBOX: a test
// that runs Claude Code with --dangerously-skip-permissions as root adds
// it.
func claudeOperator(t *testing.T, dir, claudeBin, apiURL string) (binDir string, agentEnv, env []string) {
	t.Helper()
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	binDir = filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(claudeBin, filepath.Join(binDir, "claude")); err != nil {
		t.Fatal(err)
	}
	agentEnv = []string{"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"}
	env = []string{"HOME=" + home, "PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ANTHROPIC_API_KEY=sk-ant-test-" + randomHex(t), "ANTHROPIC_BASE_URL=" + apiURL, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	return binDir, agentEnv, env
}
