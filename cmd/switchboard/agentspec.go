package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"switchboard/agent"
	"switchboard/config"
	"switchboard/gateway"
	"switchboard/store"
)

// specConfig is agent.* as agent.NewSpec takes it.
func (a *app) specConfig(exe string, sb *agent.Sandbox) agent.SpecConfig {
	c := a.cfg.Agent
	return agent.SpecConfig{Command: c.Command, ResumeArgs: c.ResumeArgs, Output: c.Output, Input: agent.InputFormat(c.Input), Timeout: time.Duration(c.Timeout),
		Env: c.Env, MaxTurnUSD: c.MaxTurnUSD, Remote: c.Runner == "nats", Exe: exe, Sandbox: sb, Logger: a.log}
}

// agentSpec builds the runner spec from agent.* (agent.NewSpec) and checks,
// once at start, what would otherwise fail at every message. With
// agent.runner nats the workers do that: the spec is agent.* as configured.
func (a *app) agentSpec(ctx context.Context, exe string) (agent.Spec, error) {
	if a.cfg.Agent.Runner == "nats" {
		return agent.NewSpec(ctx, a.specConfig(exe, nil))
	}
	sb, err := a.sandbox(exe)
	if err != nil {
		return agent.Spec{}, err
	}
	if sb != nil {
		a.warnClaudeSessions(sb)
	}
	return agent.NewSpec(ctx, a.specConfig(exe, sb))
}

// unconfinedWarning is logged (and shown by status) when agents run
// without a sandbox.
const unconfinedWarning = "AGENTS ARE NOT SANDBOXED: any agent with a shell can read the database and other groups' folders and act as any group (switchboard mcp-bridge --folder root); tiers and grants are advice"

// sandboxWarning is what status shows about the sandbox.
func sandboxWarning(sb *agent.Sandbox) string {
	if sb != nil {
		return ""
	}
	return unconfinedWarning
}

// sandbox resolves agent.sandbox, agent.binds and agent.network
// (agent.NewSandbox) and logs what agents run in.
func (a *app) sandbox(exe string) (*agent.Sandbox, error) {
	c := a.cfg.Agent
	binds := make([]agent.Bind, 0, len(c.Binds))
	for _, b := range c.Binds {
		binds = append(binds, agent.Bind{Path: filepath.Clean(config.ExpandHome(b.Path)), RW: b.RW})
	}
	sb, why, err := agent.NewSandbox(agent.SandboxConfig{Mode: c.Sandbox, Exe: exe, DataDir: a.cfg.DataDir, Binds: binds,
		Network: c.Network, Logger: a.log})
	switch {
	case err != nil:
		return nil, err
	case sb == nil && c.Sandbox == "none":
		a.log.Warn(unconfinedWarning, "agent.sandbox", "none")
	case sb == nil:
		a.log.Warn(unconfinedWarning, "agent.sandbox", "auto", "reason", why)
	default:
		a.log.Info("agents run sandboxed with bubblewrap", "bwrap", sb.Bwrap, "network", sb.Network, "binds", len(sb.Binds))
	}
	return sb, nil
}

// seedMidTurn sets the groups[].mid_turn of the config, at every start,
// and says once when steering falls back to queueing (agent.input is not
// stream-json): agent.mid_turn or some group's own mid_turn (the config's,
// or one switchboard group set stored) is steer.
func (a *app) seedMidTurn(ctx context.Context, st *store.Store) error {
	steer := a.cfg.Agent.MidTurn == string(gateway.MidTurnSteer)
	for _, g := range a.cfg.Groups {
		if g.MidTurn == "" {
			continue
		}
		if err := st.SetGroupMidTurn(ctx, g.Folder, g.MidTurn); err != nil {
			return fmt.Errorf("seed group %s: %w", g.Folder, err)
		}
	}
	if a.cfg.Agent.Input == string(agent.InputStreamJSON) {
		return nil
	}
	// Say who asked for steer: agent.mid_turn, or which groups.
	var who []any
	if steer {
		who = append(who, "agent_mid_turn", gateway.MidTurnSteer)
	}
	steering, err := st.GroupsWithMidTurn(ctx, string(gateway.MidTurnSteer))
	if err != nil {
		return err
	}
	if len(steering) > 0 {
		who = append(who, "groups", steering)
	}
	if len(who) > 0 {
		a.log.Warn("mid_turn steer falls back to queue: the agent takes no input during a turn; set agent.input: stream-json (Claude Code with --input-format stream-json --output-format stream-json --verbose)", who...)
	}
	return nil
}
