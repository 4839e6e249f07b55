package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"switchboard/demoagent"
	"switchboard/ipc"
)

func (a *app) demoAgentCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "demo-agent",
		Short: "The built-in example agent (no LLM): answers from the prompt on stdin",
		Long: `An agent for trying Switchboard without an LLM. It reads the turn prompt on
stdin and answers with who said what and how many messages it saw. It is an
MCP client of its group's server (over HTTP with $SWITCHBOARD_MCP_URL and
$SWITCHBOARD_MCP_TOKEN when the gateway's mcp.listen is on, else the socket
$SWITCHBOARD_MCP_SOCKET) and answers with the
reply tool (a scheduled task's turn with the send tool); when the socket is
missing or fails it prints the answer on stdout instead (a call the gateway
refuses, say an approver's Deny, is not: it prints that it did not answer,
and why). It also understands
these chat commands:

  /tools              the tools this group may call
  /search QUERY       full-text search in the chats this group owns (find_messages)
  /routes             the routes this group can see (list_routes)
  /every DURATION TEXT  schedule TEXT as a task in this chat every DURATION,
                      e.g. /every 30s stretch (schedule_task); each run answers
                      "Scheduled task ran: TEXT"
  /tasks              the tasks of this group (list_tasks)

Configure it as agent.command: ["switchboard", "demo-agent"].`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			prompt, err := io.ReadAll(io.LimitReader(a.stdin, 8<<20))
			if err != nil {
				return fmt.Errorf("read prompt: %w", err)
			}
			return demoagent.Run(cmd.Context(), string(prompt), demoagent.Options{Getenv: a.getenv, Stdout: a.stdout, Stderr: a.stderr,
				Version: buildVersion()["version"], HTTPClient: ipc.HTTPClient})
		},
	}
}
