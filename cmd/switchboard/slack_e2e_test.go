package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters/slack/slacktest"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
)

// A Slack user's message in a thread reaches the scripted agent through the
// real binary, and the reply lands in the same thread, in both modes.
func TestE2ESlack(t *testing.T) {
	for _, mode := range []string{"socket", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			s := slacktest.New(t)
			slackCfg := "  slack: {enabled: true, mode: " + mode + ", bot_token: " + slacktest.BotToken +
				", app_token: " + slacktest.AppToken + ", signing_secret: " + slacktest.Secret +
				`, listen: "127.0.0.1:0", api_url: "` + s.URL() + `"}` + "\n"
			dir := newE2E(t, e2eConfig{agent: replyAgent, adapters: slackCfg,
				routes: "  - {match: {platform: slack}, target: main}\n  - {match: {platform: web}, target: main}\n"})
			g := startGW(t, dir)
			switch mode {
			case "events":
				testwait.For(t, 20*time.Second, "slack events listener", func() bool {
					rec := g.findLog("slack events api listening")
					if rec != nil {
						s.EventsURL = "http://" + rec["addr"].(string) + "/slack/events"
					}
					return rec != nil
				})
			default:
				testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
			}

			parent := s.AddMessage("C1", "U2", "a thread about deploys", "")
			if _, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@UBOT> how did it go?", ThreadTS: parent, Mention: true}); err != nil {
				t.Fatal(err)
			}
			var reply slacktest.Msg
			testwait.For(t, 20*time.Second, "the bot's reply in slack", func() bool {
				for _, m := range s.Messages("C1") {
					if m.User == slacktest.BotUser {
						reply = m
						return true
					}
				}
				return false
			})
			if reply.Text != "reply 1 from main" || reply.ThreadTS != parent {
				t.Fatalf("bot posted %+v; want \"reply 1 from main\" in thread %s", reply, parent)
			}
			prompt := turnFile(t, dir, "main", "prompt", 1)
			if !strings.Contains(prompt, `chat="slack:T1/channel/C1"`) || !strings.Contains(prompt, `verb="mention" topic="`+parent+`">@switchboard how did it go?</message>`) {
				t.Errorf("prompt:\n%s", prompt)
			}
		})
	}
}

// A Slack chat JID's kind is the conversation's: a group owning every DM
// (a route for slack:T1/dm/*) must not post into a channel or private
// channel through slack:T1/dm/<its id>, nor a group owning private
// channels into a public one. The adapter addressed the id alone.
func TestE2ESlackChatJIDKindIsTheConversations(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	slackCfg := "  slack: {enabled: true, mode: socket, bot_token: " + slacktest.BotToken +
		", app_token: " + slacktest.AppToken + `, api_url: "` + s.URL() + `"}` + "\n"
	dir := newE2E(t, e2eConfig{agent: replyAgent, adapters: slackCfg,
		routes: "  - {match: {platform: slack, room: \"T1/dm/*\"}, target: main}\n" +
			"  - {match: {platform: slack, room: \"T1/group/*\"}, target: main}\n"})
	g := startGW(t, dir)
	testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
	c, err := testmcp.Connect(filepath.Join(dir, "data", "ipc", "main", "mcp.sock"), testmcp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, jid := range []string{"slack:T1/dm/C1", "slack:T1/dm/G1", "slack:T1/group/C1"} {
		r, err := c.CallTool("send", map[string]any{"chat_jid": jid, "text": "via " + jid})
		if err != nil {
			t.Fatal(err)
		}
		if !r.IsError || !strings.Contains(r.Text(), "not a ") {
			t.Errorf("send to %s: %s; want an error saying what the conversation is", jid, r.Text())
		}
	}
	// The conversations the group owns still work.
	for _, jid := range []string{"slack:T1/dm/D1", "slack:T1/group/G1"} {
		if r, err := c.CallTool("send", map[string]any{"chat_jid": jid, "text": "hello"}); err != nil || r.IsError {
			t.Errorf("send to %s: %+v %v", jid, r, err)
		}
	}
	for _, ch := range []string{"C1", "G1", "D1"} {
		for _, m := range s.Messages(ch) {
			if strings.HasPrefix(m.Text, "via ") {
				t.Errorf("%s shows %q", ch, m.Text)
			}
		}
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}
