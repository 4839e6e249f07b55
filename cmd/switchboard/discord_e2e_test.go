package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/adapters/discord/discordtest"
)

// A mention in a Discord channel reaches the agent through the real binary
// and its reply appears in the channel; one in a thread is answered in the
// thread (the channel's route covers its threads).
func TestE2EDiscord(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  discord: {enabled: true, token: \"" + discordtest.Token + "\", api_url: \"" + dc.URL() + "\"}\n",
		routes:   "  - {match: {chat_jid: \"discord:" + discordtest.GuildID + "/" + discordtest.Channel + "\"}, target: main}\n"})
	g := startGW(t, dir)
	dc.WaitFor(t, "the bot connected", dc.Connected)
	id := dc.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "status?", MentionBot: true})
	reply := dc.WaitBotMessage(t, discordtest.Channel, "the agent's reply", func(discordtest.Msg) bool { return true })
	if reply.Content != "reply 1 from main" || reply.ReplyTo != id {
		t.Errorf("reply %+v; want \"reply 1 from main\" replying to %s", reply, id)
	}
	dc.UserPosts(discordtest.Post{Channel: discordtest.Thread, Content: "and here?", MentionBot: true})
	dc.WaitBotMessage(t, discordtest.Thread, "the reply in the thread", func(m discordtest.Msg) bool { return m.Content == "reply 2 from main" })
	if p := turnFile(t, dir, "main", "prompt", 2); !strings.Contains(p, `topic="`+discordtest.Thread+`"`) {
		t.Errorf("the thread's prompt lacks its topic:\n%s", p)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
