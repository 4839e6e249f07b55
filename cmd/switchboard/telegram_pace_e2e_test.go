package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testwait"
)

// TestE2ETelegramReplyWaitingForPaceSurvivesKill: Telegram allows a bot
// twenty messages a minute in a group, so the adapter spaces them 3 s
// apart. A gateway killed (SIGKILL) while a reply waits for its slot has
// not sent it: after the restart the reply arrives, once. (Claimed before
// the wait, it was failed as "may or may not have arrived", and the user's
// question went unanswered.)
func TestE2ETelegramReplyWaitingForPaceSurvivesKill(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t)
	const chat = "telegram:group/1001234"
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  telegram: {enabled: true, token: \"" + telegramtest.Token + "\", api_url: \"" + tg.URL() + "\"}\n",
		routes:   "  - {match: {chat_jid: \"" + chat + "\"}, target: main}\n"})
	g := startGW(t, dir)
	bot := func() []string {
		var out []string
		for _, m := range tg.Messages(telegramtest.GroupID) {
			if m.FromBot {
				out = append(out, m.Text)
			}
		}
		return out
	}
	msg, _ := tg.UserMessage(telegramtest.GroupID, "first", true, 0, 0)
	tg.Push("message", msg)
	tg.WaitBotMessage(t, telegramtest.GroupID, "the first reply", func(m telegramtest.Msg) bool { return m.Text == "reply 1 from main" })
	msg, _ = tg.UserMessage(telegramtest.GroupID, "second", true, 0, 0)
	tg.Push("message", msg)
	// The second reply is queued within the 3 s after the first was sent,
	// and waits for its slot: claimed and in the adapter's wait, or
	// deferred to the slot.
	st := openStore(t, dir)
	testwait.For(t, 20*time.Second, "the second reply waiting for its slot", func() bool {
		items, err := st.Outbox(context.Background(), adapters.JID(chat), 10)
		return err == nil && len(items) == 2 &&
			(items[0].Status == "sending" || items[0].Status == "pending" && items[0].NextAttempt.After(time.Now()))
	})
	g.kill()
	if got := bot(); len(got) != 1 {
		t.Skipf("the second reply left before the kill (%q): a machine too slow for this test", got)
	}

	g = startGW(t, dir)
	tg.WaitBotMessage(t, telegramtest.GroupID, "the second reply after the restart", func(m telegramtest.Msg) bool { return m.Text == "reply 2 from main" })
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if got := bot(); strings.Join(got, "|") != "reply 1 from main|reply 2 from main" {
		t.Errorf("the bot sent %q; want each reply once", got)
	}
}
