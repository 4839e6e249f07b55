package main

import (
	"strings"
	"testing"
	"time"

	"switchboard/adapters/slack/slacktest"
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
