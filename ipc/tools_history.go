package ipc

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/store"
)

func historyTools() []*toolDef {
	return []*toolDef{
		{tool: newTool("inspect_messages", "Read recent messages",
			"Read the stored messages of a chat, newest last: what people said and what the bot answered. Use it to catch up "+
				"on context your prompt does not include. Page backwards with before_seq = the lowest seq you got. "+
				"Returns {\"messages\": [...], \"more\": bool}.",
			readOnly,
			chatParam(chatDesc),
			limitParam(50, 500, "messages"),
			mcp.WithInteger("before_seq", mcp.Min(1), mcp.Description("Only messages with a lower sequence number (the seq field); omit for the newest.")),
		), run: runInspectMessages},
		{tool: newTool("get_thread", "Read a thread",
			"Read the messages of one thread or forum topic of a chat (including its root message), oldest first. "+
				"Use the topic attribute of a message to find its thread. Returns {\"messages\": [...]}.",
			readOnly,
			chatParam(chatDesc),
			mcp.WithString("topic", mcp.Required(), mcp.Description("The thread or topic id (the topic attribute of its messages).")),
			limitParam(100, 500, "messages"),
		), run: runGetThread},
		{tool: newTool("fetch_history", "Fetch history from the platform",
			"Read a chat's recent messages from the platform itself, including ones sent before the bot joined or while the "+
				"gateway was down, where the platform allows it; otherwise from the store. Slower than inspect_messages. "+
				"Returns {\"source\": \"platform\"|\"store\", \"messages\": [...]}.",
			readOnly,
			chatParam(chatDesc),
			mcp.WithString("before_id", mcp.Description("Only messages older than this platform message id (to page back); default: the newest.")),
			limitParam(50, 200, "messages"),
		), run: runFetchHistory},
		{tool: newTool("find_messages", "Search messages",
			"Full-text search over stored messages of the chats your group owns, best matches first (for a word found in very "+
				"many messages: the newest first, rank 0; within busy chats an older hit can then be missed: narrow the query, "+
				"or pass chat_jid and since), with a snippet that "+
				"marks the matched words in [brackets]. Query syntax is SQLite FTS5: words (all must match), \"exact phrase\", "+
				"prefix*, OR, NOT, NEAR(a b). Returns {\"hits\": [...]}.",
			readOnly,
			mcp.WithString("query", mcp.Required(), mcp.Description("The search query, e.g. deploy AND (friday OR weekend), or \"release notes\".")),
			mcp.WithString("chat_jid", mcp.Description("Search only this chat. Omit to search every chat your group owns.")),
			mcp.WithString("sender", mcp.Description("Only messages from this sender JID, e.g. telegram:user/42.")),
			mcp.WithString("since", mcp.Description("Only messages at or after this time: RFC 3339 (2026-11-21T09:00:00Z) or an age such as 24h, 90m or 7d.")),
			limitParam(20, 200, "hits"),
		), run: runFindMessages},
	}
}

func runInspectMessages(ctx context.Context, c *call) (any, error) {
	limit := clamp(c.int("limit", 0), 50, 500)
	// One more than asked says whether older messages are left: with
	// exactly limit left, "more" was true and the next page empty.
	ms, err := c.b.Messages(ctx, c.jid("chat_jid"), int64(c.int("before_seq", 0)), limit+1)
	if err != nil {
		return nil, err
	}
	more := len(ms) > limit
	if more {
		ms = ms[len(ms)-limit:] // the newest limit, oldest first
	}
	return map[string]any{"messages": viewMessages(ms), "more": more}, nil
}

func runGetThread(ctx context.Context, c *call) (any, error) {
	ms, err := c.b.Thread(ctx, c.jid("chat_jid"), c.str("topic"), clamp(c.int("limit", 0), 100, 500))
	if err != nil {
		return nil, err
	}
	return map[string]any{"messages": viewMessages(ms)}, nil
}

func runFetchHistory(ctx context.Context, c *call) (any, error) {
	ms, source, err := c.b.FetchHistory(ctx, c.jid("chat_jid"), c.msgID("before_id"), clamp(c.int("limit", 0), 50, 200))
	if err != nil {
		return nil, err
	}
	return map[string]any{"source": source, "messages": viewMessages(ms)}, nil
}

func runFindMessages(ctx context.Context, c *call) (any, error) {
	o := store.SearchOptions{Sender: c.jid("sender"), Limit: clamp(c.int("limit", 0), 20, 200)}
	if s := c.str("since"); s != "" {
		t, err := parseSince(s, time.Now())
		if err != nil {
			return nil, err
		}
		o.Since = t
	}
	switch {
	case c.has("chat_jid"):
		o.ChatJIDs = []adapters.JID{c.jid("chat_jid")}
	case c.tier != 0 || c.a.rules.Constrains("find_messages", "jid"):
		chats, err := c.ownedChats(ctx)
		if err != nil {
			return nil, err
		}
		o.ChatJIDs = c.searchable(chats)
	}
	hits, err := c.b.Search(ctx, c.str("query"), o)
	if err != nil {
		return nil, err
	}
	out := make([]hitView, 0, len(hits))
	for _, h := range c.bySender(hits) {
		out = append(out, hitView{messageView: viewMessage(h.Message), Snippet: h.Snippet, Rank: h.Rank})
	}
	return map[string]any{"hits": out}, nil
}

// bySender keeps, of a find_messages call that names no sender, the hits
// that a call naming the hit's sender (and chat) would be allowed to find:
// a rule such as !find_messages(sender=slack:T1/user/U1) is not dodged by
// leaving sender out, as searchable keeps a jid rule. Without a rule
// naming sender for find_messages, all of them.
func (c *call) bySender(hits []store.Hit) []store.Hit {
	if c.has("sender") || !c.a.rules.Constrains("find_messages", "sender") {
		return hits
	}
	params := grantParams(c.args)
	caller := Caller{Folder: c.folder, Tier: c.tier, Rules: c.a.rules}
	t := c.b.Table()
	out := hits[:0:0]
	for _, h := range hits {
		params["sender"], params["jid"] = string(h.Message.Sender), string(h.Message.ChatJID)
		if Authorize(caller, t, "find_messages", params).Allow {
			out = append(out, h)
		}
	}
	return out
}

// searchable keeps the chats that a find_messages call naming each one (the
// call's other params, chat_jid the chat) would be allowed to search: a
// rule such as !find_messages(jid=slack:*) is not dodged by leaving
// chat_jid out. Without a rule naming jid for find_messages, all of them.
func (c *call) searchable(chats []adapters.JID) []adapters.JID {
	if !c.a.rules.Constrains("find_messages", "jid") {
		return chats
	}
	params := grantParams(c.args)
	caller := Caller{Folder: c.folder, Tier: c.tier, Rules: c.a.rules}
	t := c.b.Table()
	out := []adapters.JID{}
	for _, jid := range chats {
		params["jid"] = string(jid)
		if Authorize(caller, t, "find_messages", params).Allow {
			out = append(out, jid)
		}
	}
	return out
}

// ownedChats lists the chats whose owner is in the caller's subtree (never
// nil: no chats means search nothing; tier 0: every known chat): from the
// routes when each route to the subtree pins its chat
// (routing.Table.OwnedChats; at 100,000 chats, listing and resolving every
// known chat took ~90 ms a call), otherwise the known chats whose owner is.
func (c *call) ownedChats(ctx context.Context) ([]adapters.JID, error) {
	t := c.b.Table()
	if c.tier == 0 {
		all, err := c.b.Chats(ctx)
		if all == nil && err == nil {
			all = []adapters.JID{}
		}
		return all, err
	}
	if chats, ok := t.OwnedChats(c.folder); ok {
		return chats, nil
	}
	all, err := c.b.Chats(ctx)
	if err != nil {
		return nil, err
	}
	out := []adapters.JID{}
	for _, jid := range all {
		if owner, ok := t.Owner(jid, ""); ok && c.folder.Contains(owner) {
			out = append(out, jid)
		}
	}
	return out, nil
}

// parseSince reads an RFC 3339 time or an age (Go duration, or N followed by d).
func parseSince(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days >= 0 {
			return now.Add(-time.Duration(days) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("since %q: want an RFC 3339 time such as 2026-11-21T09:00:00Z or an age such as 24h or 7d", s)
}

// messageView is a message as the history tools show it.
type messageView struct {
	Seq         int64                 `json:"seq,omitempty"`
	ChatJID     adapters.JID          `json:"chat_jid"`
	ID          adapters.MessageID    `json:"id"`
	Sender      adapters.JID          `json:"sender"`
	Name        string                `json:"name,omitempty"`
	Text        string                `json:"text"`
	Time        time.Time             `json:"time"`
	Topic       string                `json:"topic,omitempty"`
	ReplyTo     adapters.MessageID    `json:"reply_to,omitempty"`
	Verb        adapters.Verb         `json:"verb,omitempty"`
	FromBot     bool                  `json:"from_bot,omitempty"`
	Attachments []adapters.Attachment `json:"attachments,omitempty"`
}

func viewMessage(m store.Message) messageView {
	return messageView{Seq: m.Seq, ChatJID: m.ChatJID, ID: m.ID, Sender: m.Sender, Name: m.SenderName, Text: m.Text,
		Time: m.Time.UTC(), Topic: m.Topic, ReplyTo: m.ReplyTo, Verb: m.Verb, FromBot: m.FromBot, Attachments: m.Attachments}
}

// viewMessages never returns nil: no messages is [], not null.
func viewMessages(ms []store.Message) []messageView {
	out := make([]messageView, len(ms))
	for i, m := range ms {
		out[i] = viewMessage(m)
	}
	return out
}

// hitView is a search hit: the message, the snippet that matched, its rank.
type hitView struct {
	messageView
	Snippet string  `json:"snippet"`
	Rank    float64 `json:"rank"`
}
