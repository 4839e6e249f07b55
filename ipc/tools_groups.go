package ipc

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/store"
)

// registerGroup is the tool whose folder param a bare name may give
// (Authorize checks it as the folder it creates).
const registerGroup = "register_group"

// maxPrompt bounds a delegated or escalated prompt.
const maxPrompt = 64 << 10

func groupTools() []*toolDef {
	return []*toolDef{
		{tool: newTool("refresh_groups", "List groups",
			"Re-read the groups, routes and grants now (changes otherwise arrive within a second or two) and list the groups "+
				"you can see: your own group and its subgroups (the operator sees all). Returns {\"groups\": [{folder, tier, "+
				"parent, socket, online, routes}]} where online says whether its MCP socket is up.",
			readOnly,
		), run: runRefreshGroups},
		{tool: newTool(registerGroup, "Create a subgroup",
			"Create a subgroup of your group: its folder, its agent working directory and its MCP socket. Optionally route "+
				"one chat your group owns to it (the route goes ahead of the others). The subgroup's tier follows from its "+
				"depth, so it usually gets fewer tools than you. Returns {\"folder\", \"tier\", \"route\"?}.",
			additive,
			mcp.WithString("folder", mcp.Required(), mcp.Description("The new group's folder: its full path (your folder + \"/\" + a name, e.g. acme/eng) "+
				"or just the name (eng). Names are lowercase letters, digits, _ and -. The operator may also create top-level groups.")),
			mcp.WithString("chat_jid", mcp.Description("A chat your group owns to route to the new group.")),
		), run: runRegisterGroup},
		{tool: newTool("delegate_group", "Delegate to a subgroup",
			"Hand a task to one of your subgroups: a turn of that group runs with your prompt and answers in chat_jid. "+
				"It runs asynchronously; you do not get its answer back. Returns {\"ok\": true, \"folder\"}.",
			additive,
			mcp.WithString("folder", mcp.Required(), mcp.Description("The subgroup (any depth below you), e.g. acme/eng/oncall.")),
			mcp.WithString("prompt", mcp.Required(), mcp.Description("What the subgroup should do, with the context it needs (at most 64 KiB).")),
			chatParam("The chat where the subgroup should answer; your group must own it."),
		), run: runDelegate},
		{tool: newTool("escalate_group", "Escalate to the parent group",
			"Hand a question or task up to your parent group, for example when it needs tools or authority you lack. "+
				"A turn of the parent runs with your prompt and answers in chat_jid. Top-level groups have no parent. "+
				"Returns {\"ok\": true, \"folder\": parent}.",
			additive,
			mcp.WithString("prompt", mcp.Required(), mcp.Description("What the parent should do, with the context it needs (at most 64 KiB).")),
			chatParam("The chat where the parent should answer; your group must own it."),
		), run: runEscalate},
		{tool: newTool("set_mid_turn", "Set what messages do during a turn",
			"Set what a message does that arrives while a group's turn runs in the same chat: queue (it waits for the next "+
				"turn), steer (it is written into the running agent, when the agent takes input mid-turn; else it queues) or "+
				"interrupt (the running turn is stopped and one new turn answers it with the interrupted request). default "+
				"takes the operator's agent.mid_turn again. For your own group or one below it. Returns {\"ok\": true}.",
			destructive,
			mcp.WithString("folder", mcp.Required(), mcp.Description("Your group or one below it, e.g. acme/eng.")),
			mcp.WithString("mode", mcp.Required(), mcp.Enum("queue", "steer", "interrupt", "default"), mcp.Description("queue, steer, interrupt, or default.")),
		), run: runSetMidTurn},
	}
}

func runSetMidTurn(ctx context.Context, c *call) (any, error) {
	folder, err := c.folderParam("folder")
	if err != nil {
		return nil, fmt.Errorf("folder: %w", err)
	}
	mode := c.str("mode")
	if mode == "default" {
		mode = ""
	}
	// ops.SetMidTurn checks that the caller may set it for folder.
	if err := c.b.SetMidTurn(ctx, c.folder, c.tier, folder, mode); err != nil {
		return nil, err
	}
	return ok, nil
}

func runRefreshGroups(ctx context.Context, c *call) (any, error) {
	if err := c.b.Reload(ctx); err != nil {
		return nil, err
	}
	all, err := c.b.Groups(ctx)
	if err != nil {
		return nil, err
	}
	routes := c.b.Table().Routes()
	out := []map[string]any{}
	for _, f := range all {
		if c.tier != 0 && !c.folder.Contains(f) {
			continue
		}
		n := 0
		for _, r := range routes {
			if r.Target == f {
				n++
			}
		}
		out = append(out, map[string]any{"folder": f, "tier": groups.Tier(f, c.s.opt.Operator), "parent": f.Parent(),
			"socket": c.s.SocketPath(f), "online": c.s.Online(f), "routes": n})
	}
	return map[string]any{"groups": out}, nil
}

func runRegisterGroup(ctx context.Context, c *call) (any, error) {
	known, err := c.b.Groups(ctx)
	if err != nil {
		return nil, err
	}
	folder := c.folderArg("folder")
	if !strings.Contains(string(folder), "/") && c.tier != 0 {
		// A bare name is a child of the caller, unless it names the caller
		// or another group: then the caller most likely meant that group.
		switch {
		case folder == c.folder || string(folder) == path.Base(string(c.folder)):
			return nil, fmt.Errorf("%q is your own group's name; name the new subgroup, e.g. %s/reports", folder, c.folder)
		case slices.Contains(known, folder):
			return nil, fmt.Errorf("group %s already exists; to create a subgroup of yours with that name pass %s/%s", folder, c.folder, folder)
		}
		folder = c.folder + "/" + folder
	}
	route, err := c.b.CreateGroup(ctx, c.folder, c.tier, folder, adapters.JID(c.str("chat_jid")))
	if err != nil {
		return nil, err
	}
	out := map[string]any{"folder": folder, "tier": groups.Tier(folder, c.s.opt.Operator), "socket": c.s.SocketPath(folder)}
	if route != nil {
		out["route"] = *route
	}
	return out, nil
}

func runDelegate(ctx context.Context, c *call) (any, error) {
	folder, err := c.folderParam("folder")
	if err != nil {
		return nil, err
	}
	if folder == c.folder || !c.folder.Contains(folder) {
		return nil, fmt.Errorf("group %s is not a subgroup of %s; you can delegate only downwards (use escalate_group to go up)", folder, c.folder)
	}
	return c.enqueue(ctx, folder, store.TriggerDelegate)
}

func runEscalate(ctx context.Context, c *call) (any, error) {
	parent := c.folder.Parent()
	if parent == "" {
		return nil, fmt.Errorf("group %s is top-level and has no parent to escalate to", c.folder)
	}
	return c.enqueue(ctx, parent, store.TriggerEscalate)
}

// enqueue queues a prompt turn of folder answering in chat_jid.
func (c *call) enqueue(ctx context.Context, folder groups.Folder, trigger store.Trigger) (any, error) {
	prompt := c.str("prompt")
	if err := requireText("prompt", prompt, maxPrompt); err != nil {
		return nil, err
	}
	chat := c.jid("chat_jid")
	if err := chat.Validate(); err != nil {
		return nil, err
	}
	known, err := c.b.Groups(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(known, folder) {
		return nil, fmt.Errorf("group %s does not exist", folder)
	}
	topic := ""
	if turn, ok := c.b.RunningTurn(c.folder); ok && turn.Chat == chat {
		topic = turn.Topic // answer in the thread the caller is working in
	}
	if _, err := c.b.Enqueue(ctx, store.WorkItem{Folder: folder, ChatJID: chat, Topic: topic, Trigger: trigger, Prompt: prompt, Origin: c.folder}); err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "folder": folder}, nil
}
