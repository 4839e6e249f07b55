package main

import (
	"os"
	"path/filepath"
	"strings"

	"switchboard/agent"
	"switchboard/config"
)

// claudeSessionsWarning is logged at start when Claude Code's sessions
// would not outlive a turn in the sandbox.
const claudeSessionsWarning = "claude code sessions will not be resumed: every follow-up message shows the user a failure notice before the retry answers in a new session"

// claudeSessionProblems says why Claude Code's sessions would not outlive a
// turn (nil when they would, or when the agent is not Claude Code resuming
// sessions): in the sandbox it keeps them in ~/.claude and ~/.claude.json,
// which vanish with the turn unless they exist on the host and are bound
// read-write, and every --resume then fails (`No conversation found`).
// Without the sandbox Claude Code creates them itself.
func claudeSessionProblems(cfg config.AgentConfig, sb *agent.Sandbox) []string {
	name := strings.TrimSuffix(filepath.Base(cfg.Command[0]), ".exe")
	if sb == nil || len(cfg.ResumeArgs) == 0 || (name != "claude" && !cfg.Output.Claude()) {
		return nil
	}
	var problems []string
	for _, rel := range []string{".claude", ".claude.json"} {
		p := filepath.Clean(config.ExpandHome("~/" + rel))
		if _, err := os.Stat(p); err != nil {
			problems = append(problems, p+" does not exist")
			continue
		}
		if !boundRW(sb, p) {
			problems = append(problems, p+" is not bound read-write (agent.binds)")
		}
	}
	return problems
}

// boundRW reports whether p is inside a read-write bind of sb.
func boundRW(sb *agent.Sandbox, p string) bool {
	for _, b := range sb.Binds {
		if rel, err := filepath.Rel(b.Path, p); err == nil && b.RW && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// warnClaudeSessions logs claudeSessionsWarning with what is wrong and how
// to fix it, when claudeSessionProblems finds something.
func (a *app) warnClaudeSessions(sb *agent.Sandbox) {
	if problems := claudeSessionProblems(a.cfg.Agent, sb); len(problems) > 0 {
		a.log.Warn(claudeSessionsWarning, "problems", strings.Join(problems, "; "),
			"fix", `create them (mkdir -p ~/.claude; echo '{}' > ~/.claude.json, or log in with claude once) and bind both: agent.binds: [{path: ~/.claude, rw: true}, {path: ~/.claude.json, rw: true}]`)
	}
}
