package ipc

import (
	"context"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/store"
)

// maxText bounds a message the tools send.
const maxText = 64 << 10

const (
	chatDesc  = "The chat JID, e.g. web:lobby, telegram:group/123, slack:T1/channel/C2. It must be a chat your group (or one of its subgroups) owns."
	msgIDDesc = "The platform id of the message (the id attribute of a <message> in your prompt, or id in history results)."
)

// sendFile is the tool whose path param has many spellings of one file
// (Authorize checks the one it names).
const sendFile = "send_file"

// likeTool is the tool whose reaction param has many spellings of one
// emoji (Authorize checks reactionEmoji's).
const likeTool = "like"

func messagingTools() []*toolDef {
	return []*toolDef{
		{tool: newTool("send", "Send a message",
			"Post a new message in a chat. Use it to speak in a chat other than the one you are answering, or to post "+
				"without replying to anyone. To answer the message that started your turn, use reply instead. "+
				"Returns {\"id\": platform message id, \"status\": \"sent\"} once the platform accepted it, or "+
				"status \"pending\" (with id null) when delivery is still queued; it is then delivered in order, at most once.",
			additive,
			chatParam(chatDesc),
			mcp.WithString("text", mcp.Required(), mcp.Description("The message text (at most 64 KiB). Plain text; the platform's own markup where it has one.")),
			mcp.WithString("topic", mcp.Description("Post into this thread or forum topic (Slack thread_ts, Telegram topic id, Discord thread id). Omit for the main channel.")),
		), run: runSend},
		{tool: newTool("reply", "Reply to a message",
			"Answer in a chat. Without reply_to it answers the last message of your current turn in that chat, in the same "+
				"thread or topic; that is the usual way to respond, and then your stdout is not sent as a second reply. "+
				"With reply_to it answers that stored message, in its thread. Returns {\"id\", \"status\"} like send.",
			additive,
			chatParam(chatDesc),
			mcp.WithString("text", mcp.Required(), mcp.Description("The reply text (at most 64 KiB).")),
			mcp.WithString("reply_to", mcp.Description("Platform id of the message to answer. Default: the last message of your running turn in this chat.")),
		), run: runReply},
		{tool: newTool(sendFile, "Send a file",
			"Upload a file from your group folder into a chat. The path is relative to your working directory (the group "+
				"folder) or absolute inside it; paths that leave the folder, through .. or a symlink, are refused. "+
				"Into the chat your turn answers it goes to the turn's thread or topic, like reply. Returns {\"id\"}.",
			additive,
			chatParam(chatDesc),
			mcp.WithString("path", mcp.Required(), mcp.Description("File path inside the group folder, e.g. report.pdf or out/chart.png.")),
			mcp.WithString("caption", mcp.Description("Text shown with the file.")),
			mcp.WithString("topic", mcp.Description("Post into this thread or forum topic (Slack thread_ts, Telegram topic id, Discord thread id). "+
				"Default: your running turn's thread or topic when the chat is the one it answers, else the main channel.")),
		), run: runSendFile},
		messageTool("edit", "Edit a message",
			"Replace the text of a message the bot sent earlier. Platforms only let the bot edit its own messages. Returns {\"ok\": true}.",
			destructive, runEdit,
			mcp.WithString("text", mcp.Required(), mcp.Description("The new text (at most 64 KiB).")),
		),
		messageTool("delete", "Delete a message",
			"Delete a message from a chat (the bot's own, or any where the bot is a moderator). This cannot be undone. Returns {\"ok\": true}.",
			destructive, func(ctx context.Context, c *call, chat adapters.JID, id adapters.MessageID) error {
				return c.b.Delete(ctx, chat, id)
			},
		),
		messageTool(likeTool, "React to a message",
			"Add a reaction to a message, e.g. to acknowledge it without posting text. Returns {\"ok\": true}.",
			additive, runReact,
			mcp.WithString("reaction", mcp.Required(), mcp.Description("The reaction: an emoji such as 👍, or the platform's reaction name such as thumbsup on Slack.")),
		),
		messageTool("pin_message", "Pin a message",
			"Pin a message in its chat so members find it easily. Returns {\"ok\": true}.",
			additive, func(ctx context.Context, c *call, chat adapters.JID, id adapters.MessageID) error {
				return c.b.Pin(ctx, chat, id)
			},
		),
		messageTool("unpin_message", "Unpin a message",
			"Unpin a pinned message. Returns {\"ok\": true}.",
			destructive, func(ctx context.Context, c *call, chat adapters.JID, id adapters.MessageID) error {
				return c.b.Unpin(ctx, chat, id)
			},
		),
	}
}

func runSend(ctx context.Context, c *call) (any, error) {
	text := c.str("text")
	if err := requireText("text", text, maxText); err != nil {
		return nil, err
	}
	chat := c.jid("chat_jid")
	if err := chat.Validate(); err != nil {
		return nil, err
	}
	sent, err := c.b.Send(ctx, c.folder, Outgoing{Chat: chat, Text: text, Topic: c.str("topic"), Kind: store.OutboxSend})
	return sentResult(sent, err)
}

func runReply(ctx context.Context, c *call) (any, error) {
	chat, text := c.jid("chat_jid"), c.str("text")
	if err := requireText("text", text, maxText); err != nil {
		return nil, err
	}
	if err := chat.Validate(); err != nil {
		return nil, err
	}
	replyTo, topic := c.msgID("reply_to"), ""
	if replyTo == "" {
		turn := c.turn // as checked (handler)
		if turn == nil || turn.Chat != chat {
			return nil, fmt.Errorf("no turn of group %s is answering %s, so there is no message to reply to; pass reply_to, or use send", c.folder, chat)
		}
		replyTo, topic = turn.LastMessageID, turn.Topic
	} else {
		m, found, err := c.b.MessageByID(ctx, chat, replyTo)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("message %s is not stored in %s; check the id (inspect_messages lists them)", replyTo, chat)
		}
		topic = m.Topic
	}
	sent, err := c.b.Send(ctx, c.folder, Outgoing{Chat: chat, Text: text, Topic: topic, ReplyTo: replyTo, Kind: store.OutboxReply})
	return sentResult(sent, err)
}

// sentResult reports a Send: the platform id once sent, else the pending
// state; a delivery that already failed for good is an error.
func sentResult(s Sent, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	if s.Status == SentFailed {
		return nil, fmt.Errorf("delivery failed: %s", s.Error)
	}
	var id any
	if s.ID != "" {
		id = s.ID
	}
	return map[string]any{"id": id, "status": s.Status}, nil
}

// messageVerb acts on message id of chat, both already checked.
type messageVerb func(ctx context.Context, c *call, chat adapters.JID, id adapters.MessageID) error

// messageTool is a tool that acts on one message: it takes chat_jid and
// message_id, then params, and answers {"ok": true}. A platform that
// cannot do it is named in the error, with the tool.
func messageTool(name, title, description string, e effect, verb messageVerb, params ...mcp.ToolOption) *toolDef {
	params = append([]mcp.ToolOption{chatParam(chatDesc), mcp.WithString("message_id", mcp.Required(), mcp.Description(msgIDDesc))}, params...)
	return &toolDef{tool: newTool(name, title, description, e, params...), run: func(ctx context.Context, c *call) (any, error) {
		chat := c.jid("chat_jid")
		if err := chat.Validate(); err != nil {
			return nil, err
		}
		if err := verb(ctx, c, chat, c.msgID("message_id")); err != nil {
			return nil, actError(chat, name, err)
		}
		return ok, nil
	}}
}

func runEdit(ctx context.Context, c *call, chat adapters.JID, id adapters.MessageID) error {
	text := c.str("text")
	if err := requireText("text", text, maxText); err != nil {
		return err
	}
	return c.b.Edit(ctx, chat, id, text)
}

func runReact(ctx context.Context, c *call, chat adapters.JID, id adapters.MessageID) error {
	reaction := c.str("reaction")
	if reaction == "" {
		return errors.New("reaction is empty")
	}
	return c.b.React(ctx, chat, id, reaction)
}

func runSendFile(ctx context.Context, c *call) (any, error) {
	chat := c.jid("chat_jid")
	if err := chat.Validate(); err != nil {
		return nil, err
	}
	rel, err := c.s.groupFile(c.folder, c.str("path"))
	if err != nil {
		return nil, err
	}
	topic := c.str("topic")
	if topic == "" {
		// Where the conversation is: a file sent without the topic lands
		// in a Telegram forum's General topic, or Slack's and Discord's
		// main channel, away from the thread that asked for it.
		if c.turn != nil && c.turn.Chat == chat { // as checked (handler)
			topic = c.turn.Topic
		}
	}
	sent, err := c.b.Send(ctx, c.folder, Outgoing{Chat: chat, Text: c.str("caption"), Topic: topic, File: rel, Kind: store.OutboxFile})
	if err != nil {
		return nil, actError(chat, "send_file", err)
	}
	return sentResult(sent, nil)
}

// actError names the platform when it lacks the verb.
func actError(chat adapters.JID, tool string, err error) error {
	platform := chat.Platform()
	switch {
	case errors.Is(err, adapters.ErrUnsupported):
		return fmt.Errorf("%s: %s is not supported by this platform", platform, tool)
	case errors.Is(err, adapters.ErrNoAdapter):
		return fmt.Errorf("%s: no adapter for this platform is enabled", platform)
	}
	return err
}
