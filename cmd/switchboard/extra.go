package main

import "github.com/spf13/cobra"

// extraCommands are the gateway and agent-side commands.
func (a *app) extraCommands() []*cobra.Command {
	return []*cobra.Command{a.runCommand(), a.taskCommand(), a.sendCommand(), a.injectCommand(), a.messagesCommand(), a.demoAgentCommand(), a.mcpBridgeCommand()}
}
