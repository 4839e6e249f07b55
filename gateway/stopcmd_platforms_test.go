package gateway

import (
	"cmp"
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/discord"
	"switchboard/adapters/discord/discordtest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
	"switchboard/adapters/telegram"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/routing"
	"switchboard/store"
)

// On Telegram, through the real SDK and the fake Bot API, a group member
// stops the group's running turn with "/stop@<bot>" (the command addressed
// to the bot, as Telegram's clients send it in groups) or "@<bot> stop":
// the turn is recorded stopped and the stop message is never prompted.
func TestStopCommandTelegramGroup(t *testing.T) {
	for _, c := range []struct {
		name string
		msg  func(fake *telegramtest.Server) map[string]any
	}{
		{"/stop@bot", func(fake *telegramtest.Server) map[string]any {
			m, _ := fake.UserMessage(telegramtest.GroupID, "/stop@"+telegramtest.BotName, false, 0, 0)
			m["entities"] = []map[string]any{{"type": "bot_command", "offset": 0, "length": len("/stop@" + telegramtest.BotName)}}
			return m
		}},
		{"@bot stop", func(fake *telegramtest.Server) map[string]any {
			m, _ := fake.UserMessage(telegramtest.GroupID, "stop", true, 0, 0)
			return m
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, fake := stopTelegram(t, 6)
			msg, _ := fake.UserMessage(telegramtest.GroupID, "run it", true, 0, 0)
			fake.Push("message", msg)
			testwait.For(t, 20*time.Second, "the live reply", func() bool {
				s := botShowing(fake, telegramtest.GroupID)
				return len(s) > 0 && s[0].Text != ""
			})
			fake.Push("message", c.msg(fake))
			if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
				t.Fatalf("turn %+v; want stopped", ts[0])
			}
			testwait.For(t, 20*time.Second, "the live reply ended", func() bool {
				s := botShowing(fake, telegramtest.GroupID)
				return len(s) == 1 && len(s[0].Buttons) == 0
			})
			h.stop()
			if n := len(h.turns("main")); n != 1 {
				t.Errorf("%d turns; want the stopped one alone (the stop message is never prompted)", n)
			}
		})
	}
}

// stopOn runs the gateway with adapter a (routed to main by its platform)
// and a streaming agent that prints the first six lines of the tool
// fixture and then waits for good.
func stopOn(t *testing.T, a adapters.Adapter, platform string) *harness {
	t.Helper()
	argv, _ := streamAgent(t, toolFixture, 6, 0)
	h := newHarness(t, harnessConfig{agent: argv, noStart: true, routes: []routing.Route{{Match: map[string]string{"platform": platform}, Target: "main"}},
		modify: func(o *Options) {
			o.Agent.Output = "claude-stream"
			o.Agent.Timeout = time.Minute
			o.Adapters = append(o.Adapters, a)
			o.Streams = map[string]Stream{platform: {Mode: StreamNative, Interval: 20 * time.Millisecond}}
		}})
	h.start()
	return h
}

// On Discord, "<@bot> stop" from a channel member stops the channel's
// running turn; the stop message is never prompted. So it does when the
// bot's username has spaces ("My Bot"), whatever the mention renders as,
// and after a mention of the bot's managed role ("<@&role> stop").
func TestStopCommandDiscord(t *testing.T) {
	for _, name := range []string{"", "My Bot"} {
		t.Run("bot named "+cmp.Or(name, "switchboard"), func(t *testing.T) {
			f := discordtest.New(t)
			if name != "" {
				f.SetBotName(name)
			}
			stopOnDiscord(t, f, discordtest.Post{Channel: discordtest.Channel, Content: "stop", MentionBot: true})
		})
	}
	t.Run("by the bot's role", func(t *testing.T) {
		f := discordtest.New(t)
		stopOnDiscord(t, f, discordtest.Post{Channel: discordtest.Channel, Content: "stop", MentionRole: true})
	})
}

func stopOnDiscord(t *testing.T, f *discordtest.Server, stop discordtest.Post) {
	h := stopOn(t, discord.New(discord.Options{Token: discordtest.Token, APIURL: f.URL()}), "discord")
	f.WaitFor(t, "the bot connected", f.Connected)
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "run it", MentionBot: true})
	testwait.For(t, 20*time.Second, "the live reply", func() bool {
		for _, m := range f.Messages(discordtest.Channel) {
			if m.AuthorID == discordtest.BotID && m.Content != "" {
				return true
			}
		}
		return false
	})
	f.UserPosts(stop)
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
		t.Fatalf("turn %+v; want stopped", ts[0])
	}
	h.stop()
	if n := len(h.turns("main")); n != 1 {
		t.Errorf("%d turns; want the stopped one alone (the stop message is never prompted)", n)
	}
}

// On Slack a channel's reply streams in the thread of the message it
// answers: "<@bot> stop" stops the running turn whether it is posted in
// the channel or in that thread, where the live reply shows, and whatever
// the app's display name (words with spaces between).
func TestStopCommandSlack(t *testing.T) {
	for _, c := range []struct {
		name     string
		inThread bool
		botName  string
	}{
		{"in the channel", false, ""},
		{"in the reply's thread", true, ""},
		{"the bot's display name in two words", false, "Switch Board"},
	} {
		inThread := c.inThread
		t.Run(c.name, func(t *testing.T) {
			s := slacktest.New(t)
			if c.botName != "" {
				s.SetUserName(slacktest.BotUser, c.botName)
			}
			h := stopOn(t, slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
				APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond}), "slack")
			testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
			ts, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> run it", Mention: true})
			if err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 20*time.Second, "the live reply", func() bool {
				for _, m := range s.Messages("C1") {
					if m.User == slacktest.BotUser && m.Text != "" {
						return true
					}
				}
				return false
			})
			p := slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> stop", Mention: true}
			if inThread {
				p.ThreadTS = ts
			}
			if _, err := s.UserPosts(p); err != nil {
				t.Fatal(err)
			}
			if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
				t.Fatalf("turn %+v; want stopped", ts[0])
			}
			h.stop()
			if n := len(h.turns("main")); n != 1 {
				t.Errorf("%d turns; want the stopped one alone (the stop message is never prompted)", n)
			}
		})
	}
}

// On Telegram, a command addressed to another bot in the group is that
// bot's: "/approve@other_bot ID", and "/stop@other_bot" even in reply to
// this bot's message, are ordinary messages here, which start a turn as
// any, and are never answered as this bot's commands.
func TestTelegramCommandsForAnotherBot(t *testing.T) {
	fake := telegramtest.New(t)
	tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
		PerChat: 10 * time.Millisecond, PerGroup: 10 * time.Millisecond, Global: -1})
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "cat >/dev/null; echo ran"), noStart: true,
		routes: []routing.Route{{Match: map[string]string{"platform": "telegram"}, Target: "main"}},
		modify: func(o *Options) { o.Adapters = append(o.Adapters, tg) }})
	h.start()
	command := func(text string, replyTo int) map[string]any {
		m, _ := fake.UserMessage(telegramtest.GroupID, text, false, 0, replyTo)
		m["entities"] = []map[string]any{{"type": "bot_command", "offset": 0, "length": len(strings.Fields(text)[0])}}
		return m
	}
	botSaid := func(n int) telegramtest.Msg {
		t.Helper()
		var said []telegramtest.Msg
		testwait.For(t, 20*time.Second, fmt.Sprintf("%d bot messages", n), func() bool {
			said = botShowing(fake, telegramtest.GroupID)
			return len(said) >= n
		})
		return said[n-1]
	}
	fake.Push("message", command("/approve@other_bot abc1234", 0))
	ran := botSaid(1)
	if ran.Text != "ran" {
		t.Errorf("after /approve@other_bot the bot said %q; want a turn's reply (ran), the command being the other bot's", ran.Text)
	}
	fake.Push("message", command("/stop@other_bot", ran.ID))
	if m := botSaid(2); m.Text != "ran" {
		t.Errorf("after /stop@other_bot (a reply to the bot) the bot said %q; want a turn's reply (ran)", m.Text)
	}
}
