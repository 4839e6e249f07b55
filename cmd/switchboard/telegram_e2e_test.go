package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/adapters/telegram/telegramtest"
)

// A message in a Telegram forum topic reaches the agent through the real
// binary, and the reply appears in the fake chat, in that topic, replying
// to the message; after a restart the next message is answered once and
// the first is not answered again.
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
	n := 0
	for _, m := range tg.Messages(telegramtest.GroupID) {
		if m.FromBot {
			n++
		}
	}
	if n != 2 {
		t.Errorf("the bot sent %d messages; want one per user message (nothing answered twice)", n)
	}
}
