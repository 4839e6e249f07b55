package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testmcp"
)

// A message in a Telegram forum topic reaches the agent through the real
// binary, and the reply appears in the fake chat, in that topic, replying
// to the message; after a restart the next message is answered once and
// the first is not answered again. (The first reply may still wait for
// its turn in the group's pacing, as the final edit of the live reply the
// test saw, when the gateway is stopped: the drain delivers it.)
func TestE2ETelegram(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t)
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  telegram: {enabled: true, token: \"" + telegramtest.Token + "\", api_url: \"" + tg.URL() + "\"}\n",
		routes:   "  - {match: {chat_jid: \"telegram:group/1001234\"}, target: main}\n"})
	g := startGW(t, dir)
	msg, id := tg.UserMessage(telegramtest.GroupID, "how is the deploy?", true, 42, 0)
	tg.Push("message", msg)
	reply := tg.WaitBotMessage(t, telegramtest.GroupID, "the agent's reply", func(m telegramtest.Msg) bool { return true })
	if reply.Text != "reply 1 from main" || reply.Thread != 42 || reply.ReplyTo != id {
		t.Errorf("reply %+v; want \"reply 1 from main\" in topic 42 replying to %d", reply, id)
	}
	if p := turnFile(t, dir, "main", "prompt", 1); !strings.Contains(p, `chat="telegram:group/1001234" topic="42"`) ||
		!strings.Contains(p, `sender="telegram:user/7" name="Ann"`) || !strings.Contains(p, `verb="mention"`) {
		t.Errorf("prompt:\n%s", p)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	g = startGW(t, dir)
	msg2, _ := tg.UserMessage(telegramtest.GroupID, "and now?", true, 42, 0)
	tg.Push("message", msg2)
	tg.WaitBotMessage(t, telegramtest.GroupID, "the second reply", func(m telegramtest.Msg) bool { return m.Text == "reply 2 from main" })
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	var bot []string
	for _, m := range tg.Messages(telegramtest.GroupID) {
		if m.FromBot {
			bot = append(bot, fmt.Sprintf("#%d %q (replying to %d, deleted %v, %d buttons)", m.ID, m.Text, m.ReplyTo, m.Deleted, len(m.Buttons)))
		}
	}
	if len(bot) != 2 {
		t.Errorf("the bot sent %d messages; want one per user message (nothing answered twice):\n%s", len(bot), strings.Join(bot, "\n"))
	}
}

// A Telegram chat id and forum topic are addressed only as Telegram writes
// them: a group that owns a forum (but not its topic 9, routed to the sibling
// group ops) must not post into topic 9 as topic "09", "+9"; one that owns
// every private chat but user 55's must not reach 55 as telegram:user/055.
// The adapter parsed the numbers leniently.
func TestE2ETelegramIDsOnlyAsTelegramWritesThem(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t)
	forum := "telegram:group/1001234"
	dir := newE2E(t, e2eConfig{agent: replyAgent, groups: []string{"ops"},
		adapters: "  telegram: {enabled: true, token: \"" + telegramtest.Token + "\", api_url: \"" + tg.URL() + "\"}\n",
		routes: "  - {seq: -2, match: {chat_jid: \"" + forum + "\", topic: \"9\"}, target: ops}\n" +
			"  - {seq: -1, match: {chat_jid: \"telegram:user/55\"}, target: ops}\n" +
			"  - {match: {chat_jid: \"" + forum + "\"}, target: main}\n" +
			"  - {match: {platform: telegram, room: \"user/*\"}, target: main}\n"})
	g := startGW(t, dir)
	c, err := testmcp.Connect(filepath.Join(dir, "data", "ipc", "main", "mcp.sock"), testmcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, args := range []map[string]any{
		{"chat_jid": forum, "topic": "09", "text": "via topic 09"},
		{"chat_jid": forum, "topic": "+9", "text": "via topic +9"},
		{"chat_jid": "telegram:user/055", "text": "via user/055"},
		{"chat_jid": "telegram:user/+55", "text": "via user/+55"},
	} {
		r, err := c.CallTool("send", args)
		if err != nil {
			t.Fatal(err)
		}
		if !r.IsError || !strings.Contains(r.Text(), "telegram: ") {
			t.Errorf("send %v: %s; want an error", args, r.Text())
		}
	}
	// The sibling's topic is refused as itself; main's own work.
	if r, _ := c.CallTool("send", map[string]any{"chat_jid": forum, "topic": "9", "text": "via topic 9"}); !r.IsError {
		t.Errorf("send into ops's topic: %s", r.Text())
	}
	for _, args := range []map[string]any{
		{"chat_jid": forum, "topic": "42", "text": "in topic 42"},
		{"chat_jid": "telegram:user/56", "text": "to 56"},
	} {
		if r, err := c.CallTool("send", args); err != nil || r.IsError {
			t.Errorf("send %v: %+v %v", args, r, err)
		}
	}
	// ops's message in its topic: main may not edit or delete it under
	// another spelling of its id either.
	ops, err := testmcp.Connect(filepath.Join(dir, "data", "ipc", "ops", "mcp.sock"), testmcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Close()
	r, err := ops.CallTool("send", map[string]any{"chat_jid": forum, "topic": "9", "text": "ops's own"})
	var sent struct{ ID string }
	if err != nil || r.IsError || json.Unmarshal([]byte(r.Text()), &sent) != nil {
		t.Fatalf("ops's send into its topic: %+v %v", r, err)
	}
	for _, id := range []string{sent.ID, "0" + sent.ID, "+" + sent.ID} {
		if r, _ := c.CallTool("edit", map[string]any{"chat_jid": forum, "message_id": id, "text": "via edit " + id}); !r.IsError {
			t.Errorf("edit of ops's message as %q: %s", id, r.Text())
		}
		if r, _ := c.CallTool("delete", map[string]any{"chat_jid": forum, "message_id": id}); !r.IsError {
			t.Errorf("delete of ops's message as %q: %s", id, r.Text())
		}
		// A reply to it under another spelling goes out, but not as a reply to it.
		c.CallTool("reply", map[string]any{"chat_jid": forum, "reply_to": id, "text": "via reply " + id})
	}
	want, _ := strconv.Atoi(sent.ID)
	for _, m := range tg.Messages(telegramtest.GroupID) {
		if m.Thread == 9 && (m.Text != "ops's own" || m.Deleted) || m.ReplyTo == want {
			t.Errorf("topic 9 shows %q (replying to %d)", m.Text, m.ReplyTo)
		}
	}
	if got := tg.Messages(55); len(got) != 0 {
		t.Errorf("user 55 got %+v", got)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
