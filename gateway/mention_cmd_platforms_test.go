package gateway

import (
	"context"
	"fmt"
	"slices"
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

// mentionPlatform is one platform's real adapter against its fake, where
// a member writes to the bot in a message that starts with a mention:
// the bot's own, or another member's (bob) in a message that addresses
// the bot all the same, as a reply to its latest message (a Telegram
// group, a Discord channel) or in a DM (Slack).
type mentionPlatform struct {
	name    string
	adapter adapters.Adapter
	chat    adapters.JID
	ready   func(t *testing.T)
	// say posts text after the bot's mention (ours) or after bob's.
	say func(t *testing.T, text string, ours bool)
	// botSaid is the bot's messages in the chat, in order (their text).
	botSaid func() []string
}

func mentionPlatforms() []func(t *testing.T) mentionPlatform {
	return []func(t *testing.T) mentionPlatform{
		func(t *testing.T) mentionPlatform {
			fake := telegramtest.New(t)
			tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
				PerChat: 10 * time.Millisecond, PerGroup: 10 * time.Millisecond, Global: -1})
			const chat = telegramtest.GroupID
			return mentionPlatform{name: "telegram", adapter: tg, chat: "telegram:group/1001234", ready: func(*testing.T) {},
				say: func(t *testing.T, text string, ours bool) {
					replyTo := 0
					if bot := botShowing(fake, chat); len(bot) > 0 {
						replyTo = bot[len(bot)-1].ID
					}
					m, _ := fake.UserMessage(chat, text, ours, 0, replyTo)
					if !ours {
						m["text"] = "@bob " + text
						m["entities"] = []map[string]any{{"type": "mention", "offset": 0, "length": len("@bob")}}
					}
					fake.Push("message", m)
				},
				botSaid: func() []string {
					var out []string
					for _, m := range botShowing(fake, chat) {
						out = append(out, m.Text)
					}
					return out
				}}
		},
		func(t *testing.T) mentionPlatform {
			f := discordtest.New(t)
			return mentionPlatform{name: "discord", adapter: discord.New(discord.Options{Token: discordtest.Token, APIURL: f.URL()}),
				chat:  adapters.JID("discord:" + discordtest.GuildID + "/" + discordtest.Channel),
				ready: func(t *testing.T) { f.WaitFor(t, "the bot connected", f.Connected) },
				say: func(t *testing.T, text string, ours bool) {
					p := discordtest.Post{Channel: discordtest.Channel, Content: text, MentionBot: ours, MentionBob: !ours}
					for _, m := range f.Messages(discordtest.Channel) {
						if m.AuthorID == discordtest.BotID && !m.Deleted {
							p.ReplyTo = m.ID
						}
					}
					f.UserPosts(p)
				},
				botSaid: func() []string {
					var out []string
					for _, m := range f.Messages(discordtest.Channel) {
						if m.AuthorID == discordtest.BotID && !m.Deleted {
							out = append(out, m.Content)
						}
					}
					return out
				}}
		},
		func(t *testing.T) mentionPlatform {
			s := slacktest.New(t)
			return mentionPlatform{name: "slack", chat: "slack:T1/dm/D1",
				adapter: slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
					APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond}),
				ready: func(t *testing.T) {
					testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
				},
				say: func(t *testing.T, text string, ours bool) {
					who := "U2" // bob
					if ours {
						who = slacktest.BotUser
					}
					if _, err := s.UserPosts(slacktest.Post{Channel: "D1", User: "U1", Text: "<@" + who + "> " + text, Mention: ours}); err != nil {
						t.Fatal(err)
					}
				},
				botSaid: func() []string {
					var out []string
					for _, m := range s.Messages("D1") {
						if m.User == slacktest.BotUser && !m.Deleted {
							out = append(out, m.Text)
						}
					}
					return out
				}}
		},
	}
}

// waitStored waits until p's chat holds a member's message whose text is
// text, as the adapter normalized it: intake has decided what it is.
func (p mentionPlatform) waitStored(t *testing.T, h *harness, text string) {
	t.Helper()
	testwait.For(t, 20*time.Second, fmt.Sprintf("%q stored", text), func() bool {
		ms, err := h.st.MessagesAfter(context.Background(), p.chat, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(ms, func(m store.Message) bool { return !m.FromBot && m.Text == text })
	})
}

// On Telegram, Discord and Slack, "stop" after another member's mention
// ("@bob stop") in a message that addresses the bot (a reply to its live
// reply; a DM) is that member's business: the running turn goes on, and
// the message reaches the agent like any (here: queued, a turn of its
// own). "@<the bot> stop" still stops the turn.
func TestStopCommandAfterAnotherMention(t *testing.T) {
	for _, mk := range mentionPlatforms() {
		p := mk(t)
		t.Run(p.name, func(t *testing.T) {
			argv, gate := streamAgent(t, toolFixture, 6, 0)
			h := newHarness(t, harnessConfig{agent: argv, noStart: true,
				routes: []routing.Route{{Match: map[string]string{"platform": p.chat.Platform()}, Target: "main"}},
				modify: func(o *Options) {
					o.Agent.Output = "claude-stream"
					o.Agent.Timeout = time.Minute
					o.Adapters = append(o.Adapters, p.adapter)
					o.Streams = map[string]Stream{p.chat.Platform(): {Mode: StreamNative, Interval: 20 * time.Millisecond}}
				}})
			h.start()
			p.ready(t)
			p.say(t, "run it", true)
			testwait.For(t, 20*time.Second, "the live reply", func() bool {
				s := p.botSaid()
				return len(s) > 0 && s[0] != ""
			})
			p.say(t, "stop", false)
			p.waitStored(t, h, "@bob stop")
			p.say(t, "stop", true)
			if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
				t.Fatalf("turn %+v; want stopped by the bot's own mention", ts[0])
			}
			openGate(t, gate)
			ts := h.waitTurns("main", 2) // without the fix, "@bob stop" stopped the turn and never ran
			if ts[1].Status != store.TurnSucceeded {
				t.Errorf("the turn for \"@bob stop\": %+v; want it run and succeeded", ts[1])
			}
			h.stop()
			if n := len(h.turns("main")); n != 2 {
				t.Errorf("%d turns; want the stopped one and the one for \"@bob stop\"", n)
			}
		})
	}
}

// On Telegram, Discord and Slack, "/approve ID" after another member's
// mention ("@bob /approve ID") in a message that addresses the bot is no
// approval command: it starts a turn like any message. After the bot's
// own mention it is answered as the command.
func TestApprovalCommandAfterAnotherMention(t *testing.T) {
	for _, mk := range mentionPlatforms() {
		p := mk(t)
		t.Run(p.name, func(t *testing.T) {
			h := newHarness(t, harnessConfig{agent: testagent.Script(t, "cat >/dev/null; echo ran"), noStart: true,
				routes: []routing.Route{{Match: map[string]string{"platform": p.chat.Platform()}, Target: "main"}},
				modify: func(o *Options) { o.Adapters = append(o.Adapters, p.adapter) }})
			h.start()
			p.ready(t)
			said := func(n int) []string {
				t.Helper()
				var s []string
				testwait.For(t, 20*time.Second, fmt.Sprintf("%d bot messages", n), func() bool {
					s = p.botSaid()
					return len(s) >= n
				})
				return s
			}
			p.say(t, "hello", true)
			said(1)
			p.say(t, "/approve abc1234", false)
			if s := said(2); s[1] != "ran" {
				t.Fatalf("after \"@bob /approve abc1234\" the bot said %q; want a turn's reply (ran): the command is not the bot's", s[1])
			}
			p.say(t, "/approve abc1234", true)
			if s := said(3); !strings.Contains(s[2], "There is no approval request abc1234") {
				t.Errorf("after the bot's mention and /approve abc1234 the bot said %q; want the command answered", s[2])
			}
			h.stop()
			if n := len(h.turns("main")); n != 2 {
				t.Errorf("%d turns; want two (hello, \"@bob /approve\"), the approval command never prompted", n)
			}
		})
	}
}
