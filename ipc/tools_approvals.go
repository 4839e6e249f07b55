package ipc

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// ApproveTool is the tool Claude Code calls as its permission prompt
// (claude --permission-prompt-tool mcp__switchboard__approve_tool).
const ApproveTool = "approve_tool"

func approvalTools() []*toolDef {
	t := newTool(ApproveTool, "Approve an agent tool call",
		"Claude Code's permission prompt (--permission-prompt-tool mcp__switchboard__approve_tool): asks the group's "+
			"approvers in the chat before one of the tools approvals.agent_tools names runs, and allows the others at once. "+
			`Returns {"behavior":"allow","updatedInput":{...}} or {"behavior":"deny","message":"..."}.`,
		additive,
		mcp.WithString("tool_name", mcp.Required(), mcp.Description("The tool Claude Code is about to run, e.g. Bash.")),
		mcp.WithObject("input", mcp.Required(), mcp.Description("The tool's input, as Claude Code would run it.")),
		mcp.WithString("tool_use_id", mcp.Description("Claude Code's id of the tool use.")),
	)
	// Claude Code decides what it sends; a field it adds must not turn
	// every permission prompt into an error.
	t.InputSchema.AdditionalProperties = true
	return []*toolDef{{tool: t, run: runApproveTool, waits: true}}
}

// permission is the result Claude Code's permission-prompt-tool protocol
// expects, as the text of the tool result: an allow always carries
// updatedInput (an empty input is {}, not left out), a deny its message.
type permission struct {
	Behavior     string         // allow | deny
	UpdatedInput map[string]any // allow
	Message      string         // deny
}

func (p permission) MarshalJSON() ([]byte, error) {
	if p.Behavior == "allow" {
		in := p.UpdatedInput
		if in == nil {
			in = map[string]any{}
		}
		return json.Marshal(struct {
			Behavior     string         `json:"behavior"`
			UpdatedInput map[string]any `json:"updatedInput"`
		}{p.Behavior, in})
	}
	return json.Marshal(struct {
		Behavior string `json:"behavior"`
		Message  string `json:"message"`
	}{p.Behavior, p.Message})
}

func runApproveTool(ctx context.Context, c *call) (any, error) {
	name, _ := c.args["tool_name"].(string)
	input, _ := c.args["input"].(map[string]any)
	if input == nil {
		input = map[string]any{}
	}
	// Claude Code names its own tools (Bash, Write) and MCP tools as
	// mcp__<server>__<tool>, never one of switchboard's bare: a request
	// for one would look like that tool's grant ask, and "Allow for this
	// session" on it would allow every later ask of it, any arguments.
	if _, own := c.s.tools[name]; own {
		return permission{Behavior: "deny", Message: fmt.Sprintf("not approved: %s is one of switchboard's own tools, not Claude Code's; "+
			"a call of it is checked (and asked about) when it is made", name)}, nil
	}
	if !c.b.AgentToolAsks(name) {
		return permission{Behavior: "allow", UpdatedInput: input}, nil
	}
	r := c.b.Approve(ctx, ApprovalRequest{Folder: c.folder, Tool: name, Args: input, Agent: true,
		Reason: "approvals.agent_tools names " + name})
	if !r.Allowed {
		return permission{Behavior: "deny", Message: fmt.Sprintf("not approved: %s", r.Reason)}, nil
	}
	return permission{Behavior: "allow", UpdatedInput: input}, nil
}
