package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/store"
)

func sessionTools() []*toolDef {
	return []*toolDef{
		{tool: newTool("inject_message", "Inject a message",
			"Store a message in a chat as if someone had written it, and run a turn of the group that owns the chat, "+
				"whatever its route's mode. Use it to hand work to the chat's owner or to wake it up. Returns {\"seq\", \"id\", \"folder\"}.",
			additive,
			chatParam(chatDesc),
			mcp.WithString("text", mcp.Required(), mcp.Description("The message text (at most 64 KiB).")),
			mcp.WithString("sender", mcp.Description("Sender JID shown for the message, e.g. switchboard:bot/reminder. "+
				"Groups other than the operator may only use switchboard: senders, never a real user's. Default: switchboard:group/<your folder>.")),
		), run: runInject},
		{tool: newTool("reset_session", "Reset agent sessions",
			"Forget your group's agent sessions in every chat, so the next turns start with a fresh context. Use it when the "+
				"conversation state has gone wrong. Returns {\"ok\": true, \"reset\": n}.",
			destructive,
		), run: runResetSession},
		{tool: newTool("engage", "Follow a conversation",
			"Answer follow-up messages in a chat (or one thread) without being mentioned, for a while (engage_ttl), even where "+
				"your route only observes. Speaking in a chat engages you too. Returns {\"ok\": true, \"until\"}.",
			additive,
			chatParam(chatDesc),
			mcp.WithString("topic", mcp.Description("Only this thread or topic. Omit for the chat's main channel.")),
		), run: runEngage},
		{tool: newTool("disengage", "Stop following a conversation",
			"Stop answering follow-ups without a mention in a chat (or thread), e.g. when the conversation has moved on. Returns {\"ok\": true}.",
			additive,
			chatParam(chatDesc),
			mcp.WithString("topic", mcp.Description("Only this thread or topic. Omit for the chat's main channel.")),
		), run: runDisengage},
		{tool: newTool("get_work", "Read work notes",
			"Read your group's work.md: notes you keep across turns and sessions (plans, open tasks, facts to remember). "+
				"Returns {\"content\", \"exists\"}.",
			readOnly,
		), run: runGetWork},
		{tool: newTool("set_work", "Write work notes",
			fmt.Sprintf("Replace your group's work.md with new content (at most %d KiB). It replaces the whole file: read it "+
				"with get_work first and write back everything you want to keep. Returns {\"ok\": true, \"bytes\"}.", MaxWork>>10),
			destructive,
			mcp.WithString("content", mcp.Required(), mcp.Description("The complete new content of work.md (Markdown).")),
		), run: runSetWork},
		{tool: newTool("inspect_session", "Inspect sessions and turns",
			"Show your group's state: the agent session per chat, the running turn, and the most recent turns with their "+
				"status, duration and errors. Use it to find out why an earlier turn failed. Returns {\"sessions\", \"running\", \"turns\"}.",
			readOnly,
			limitParam(10, 100, "recent turns"),
		), run: runInspectSession},
		{tool: newTool("list_grants", "List your grants",
			"Show your group's tier, its default grant rules, the operator's overrides, and the tools you can see. A rule is "+
				"[!]tool[(param=glob,...)]; the last matching rule decides. Returns {\"folder\", \"tier\", \"defaults\", \"overrides\", \"tools\"}.",
			readOnly,
		), run: runListGrants},
	}
}

func runInject(ctx context.Context, c *call) (any, error) {
	text := c.str("text")
	if err := requireText("text", text, maxText); err != nil {
		return nil, err
	}
	sender := c.jid("sender")
	if sender == "" {
		sender = adapters.JID("switchboard:group/" + c.folder)
	} else if err := sender.Validate(); err != nil {
		return nil, fmt.Errorf("sender: %w", err)
	} else if c.tier != 0 && sender.Platform() != "switchboard" {
		return nil, fmt.Errorf("sender %s: a group may inject only as a switchboard: sender (e.g. switchboard:bot/%s), never as a platform user", sender, c.folder)
	}
	m, folder, err := c.b.Inject(ctx, c.folder, c.jid("chat_jid"), text, sender)
	if err != nil {
		return nil, err
	}
	return map[string]any{"seq": m.Seq, "id": m.ID, "folder": folder}, nil
}

func runResetSession(ctx context.Context, c *call) (any, error) {
	n, err := c.b.ResetSessions(ctx, c.folder)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "reset": n}, nil
}

func runEngage(_ context.Context, c *call) (any, error) {
	until, err := c.b.Engage(c.jid("chat_jid"), c.str("topic"), c.folder)
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "until": until}, nil
}

// runDisengage ends an engagement of the caller or of one of its
// descendants; a child cannot end its parent's (or a sibling's).
func runDisengage(_ context.Context, c *call) (any, error) {
	folder, ended := c.b.Disengage(c.jid("chat_jid"), c.str("topic"), func(f groups.Folder) bool {
		return c.tier == 0 || c.folder.Contains(f)
	})
	if folder != "" && !ended {
		return nil, fmt.Errorf("the engagement in %s belongs to group %s; only %s or a group above it can end it", c.str("chat_jid"), folder, folder)
	}
	return ok, nil
}

func runGetWork(_ context.Context, c *call) (any, error) {
	content, exists, err := c.s.readWork(c.folder)
	if err != nil {
		return nil, err
	}
	return map[string]any{"content": content, "exists": exists}, nil
}

func runSetWork(_ context.Context, c *call) (any, error) {
	content := c.str("content")
	if err := c.s.writeWork(c.folder, content); err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "bytes": len(content)}, nil
}

func runInspectSession(ctx context.Context, c *call) (any, error) {
	sessions, err := c.b.AgentSessions(ctx, c.folder)
	if err != nil {
		return nil, err
	}
	turns, err := c.b.Turns(ctx, c.folder, clamp(c.int("limit", 0), 10, 100))
	if err != nil {
		return nil, err
	}
	var running any
	if t, ok := c.b.RunningTurn(c.folder); ok {
		running = map[string]any{"id": t.ID, "chat_jid": t.Chat, "topic": t.Topic, "trigger": t.Trigger}
	}
	return map[string]any{"folder": c.folder, "sessions": viewSessions(sessions), "running": running, "turns": viewTurns(turns)}, nil
}

// sessionView is the agent session a folder continues in a chat and topic.
type sessionView struct {
	Chat      adapters.JID `json:"chat_jid"`
	Topic     string       `json:"topic,omitempty"`
	SessionID string       `json:"session_id"`
	Updated   time.Time    `json:"updated"`
}

func viewSessions(rows []store.SessionRow) []sessionView {
	out := make([]sessionView, len(rows))
	for i, r := range rows {
		out[i] = sessionView{Chat: r.ChatJID, Topic: r.Topic, SessionID: r.SessionID, Updated: r.Updated.UTC()}
	}
	return out
}

// turnView is a finished turn, with what it cost as its agent reported it
// (omitted: not reported).
type turnView struct {
	ID                  string           `json:"id"`
	Chat                adapters.JID     `json:"chat_jid"`
	Topic               string           `json:"topic,omitempty"`
	Trigger             store.Trigger    `json:"trigger"`
	Attempt             int              `json:"attempt"`
	Started             time.Time        `json:"started"`
	DurationMS          int64            `json:"duration_ms"`
	Status              store.TurnStatus `json:"status"`
	Error               string           `json:"error,omitempty"`
	SessionID           string           `json:"session_id,omitempty"`
	CostUSD             float64          `json:"cost_usd,omitempty"`
	InputTokens         int64            `json:"input_tokens,omitempty"`
	OutputTokens        int64            `json:"output_tokens,omitempty"`
	CacheCreationTokens int64            `json:"cache_creation_tokens,omitempty"`
	CacheReadTokens     int64            `json:"cache_read_tokens,omitempty"`
	NumTurns            int64            `json:"num_turns,omitempty"`
	APIMS               int64            `json:"api_ms,omitempty"`
}

func viewTurns(ts []store.Turn) []turnView {
	out := make([]turnView, len(ts))
	for i, t := range ts {
		u := t.Usage
		out[i] = turnView{ID: t.ID, Chat: t.ChatJID, Topic: t.Topic, Trigger: t.Trigger, Attempt: t.Attempt,
			Started: t.Started.UTC(), DurationMS: t.Duration.Milliseconds(), Status: t.Status, Error: t.Error,
			SessionID: t.SessionID, CostUSD: u.CostUSD, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheCreationTokens: u.CacheCreationTokens, CacheReadTokens: u.CacheReadTokens, NumTurns: u.NumTurns,
			APIMS: u.APIDuration.Milliseconds()}
	}
	return out
}

func runListGrants(_ context.Context, c *call) (any, error) {
	return c.a.listGrants(c.s, c.folder)
}

// listGrants is list_grants' answer for folder, the group a belongs to. It
// is encoded at the group's first call after a Sync and kept with a: all it
// says is in a (and the server's catalog), and Sync replaces a whenever the
// group's tier, overrides or listed tools may have changed.
func (a *access) listGrants(s *Server, folder groups.Folder) (json.RawMessage, error) {
	a.grantsOnce.Do(func() {
		over := a.overrides
		if over == nil {
			over = []string{}
		}
		a.grants, a.grantsErr = json.Marshal(map[string]any{"folder": folder, "tier": a.tier,
			"defaults": s.catalog.Defaults(a.tier), "overrides": over, "tools": a.listed})
	})
	return a.grants, a.grantsErr
}
