package gateway

import "switchboard/agent"

// reapLeftovers kills the agent processes a gateway of this data directory
// that was killed (SIGKILL, a crash) left running, sandbox processes
// included, and logs each: they carry its MCP socket path in their
// environment.
func (g *Gateway) reapLeftovers() {
	killed, err := agent.KillLeftovers(g.layout.SocketRoot())
	if err != nil {
		g.log.Warn("kill leftover agent process", "err", err)
	}
	for _, r := range killed {
		g.log.Warn("killed an agent process left by a crashed gateway", "pid", r.PID, "command", r.Command, "turn", r.Turn)
	}
	if len(killed) > 0 {
		g.log.Warn("agent processes left by a crashed gateway were killed", "count", len(killed))
	}
}
