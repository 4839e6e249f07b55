package gateway

import (
	"fmt"
	"path/filepath"
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
)

// livePlatform is one platform's real adapter against its fake, for the
// live-reply tests: where a user's message starts a turn and what the
// chat shows of the bot.
type livePlatform struct {
	name    string
	adapter adapters.Adapter
	limits  adapters.Limits
	chat    adapters.JID
	ready   func(t *testing.T)
	say     func(t *testing.T, text string)
	showing func() []string // the bot's messages, not deleted, in order
	// live reports that the live reply shows (a draft, or a message)
	live func() bool
	// fail makes the platform fail the request that ends the live reply
	// (or the next write) once with a server error; nil: not on this fake.
	fail func()
	// calls counts the bot's requests that showed its reply: sent
	// messages, edits, and native live requests (drafts, streams).
	calls func() (sent, edits, native int)
	// rateLimit makes the fake answer the next write 429, asking to wait.
	rateLimit func(wait time.Duration)
	// rateLimited is when the fake answered 429 and when the next write came.
	rateLimited func() (at, next time.Time)
}

func livePlatforms(t *testing.T) []func(t *testing.T) livePlatform {
	return []func(t *testing.T) livePlatform{
		func(t *testing.T) livePlatform {
			fake := telegramtest.New(t)
			tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
				PerChat: 10 * time.Millisecond, PerGroup: 10 * time.Millisecond, Global: -1})
			chat := int64(telegramtest.UserID)
			return livePlatform{name: "telegram private", rateLimit: fake.RateLimit, rateLimited: fake.RateLimited, fail: func() { fake.Fail5xx(1) },
				live: func() bool { return len(fake.Drafts(chat)) > 0 },
				calls: func() (int, int, int) {
					return len(fake.Calls("sendMessage")), len(fake.Calls("editMessageText")), len(fake.Calls("sendMessageDraft"))
				}, adapter: tg, limits: tg.Limits(), chat: adapters.JID(fmt.Sprintf("telegram:user/%d", chat)),
				ready: func(*testing.T) {},
				say: func(t *testing.T, text string) {
					m, _ := fake.UserMessage(chat, text, false, 0, 0)
					fake.Push("message", m)
				},
				showing: func() []string {
					var out []string
					for _, m := range fake.Messages(chat) {
						if m.FromBot && !m.Deleted {
							out = append(out, m.Text)
						}
					}
					return out
				}}
		},
		func(t *testing.T) livePlatform {
			fake := telegramtest.New(t)
			tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
				PerChat: 10 * time.Millisecond, PerGroup: 10 * time.Millisecond, Global: -1})
			chat := int64(telegramtest.GroupID)
			return livePlatform{name: "telegram group", rateLimit: fake.RateLimit, rateLimited: fake.RateLimited, fail: func() { fake.Fail5xx(1) },
				calls: func() (int, int, int) {
					return len(fake.Calls("sendMessage")), len(fake.Calls("editMessageText")), len(fake.Calls("sendMessageDraft"))
				},
				adapter: tg, limits: tg.Limits(), chat: "telegram:group/1001234",
				ready: func(*testing.T) {},
				say: func(t *testing.T, text string) {
					m, _ := fake.UserMessage(chat, text, true, 0, 0)
					fake.Push("message", m)
				},
				showing: func() []string {
					var out []string
					for _, m := range fake.Messages(chat) {
						if m.FromBot && !m.Deleted {
							out = append(out, m.Text)
						}
					}
					return out
				}}
		},
		func(t *testing.T) livePlatform {
			f := discordtest.New(t)
			d := discord.New(discord.Options{Token: discordtest.Token, APIURL: f.URL()})
			return livePlatform{name: "discord", rateLimit: f.RateLimit, rateLimited: f.RateLimited,
				calls: func() (int, int, int) {
					sent := map[string]bool{}
					shown := f.Shown(discordtest.Channel)
					for _, s := range shown {
						sent[s.ID] = true
					}
					return len(sent), len(shown) - len(sent), 0
				}, adapter: d, limits: d.Limits(), chat: adapters.JID("discord:" + discordtest.GuildID + "/" + discordtest.Channel),
				ready: func(t *testing.T) { f.WaitFor(t, "the bot connected", f.Connected) },
				say: func(t *testing.T, text string) {
					f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: text, MentionBot: true})
				},
				showing: func() []string {
					var out []string
					for _, m := range f.Messages(discordtest.Channel) {
						if m.AuthorID == discordtest.BotID && !m.Deleted {
							out = append(out, m.Content)
						}
					}
					return out
				}}
		},
		func(t *testing.T) livePlatform {
			s := slacktest.New(t)
			a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
				APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond})
			return livePlatform{name: "slack", rateLimit: s.RateLimit, rateLimited: s.RateLimited, fail: func() { s.Outage("chat.stopStream", 1) },
				calls: func() (int, int, int) {
					return len(s.Calls("chat.postMessage")), len(s.Calls("chat.update")),
						len(s.Calls("chat.startStream")) + len(s.Calls("chat.appendStream")) + len(s.Calls("chat.stopStream"))
				}, adapter: a, limits: a.Limits(), chat: "slack:T1/channel/C1",
				ready: func(t *testing.T) {
					testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
				},
				say: func(t *testing.T, text string) {
					if _, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> " + text, Mention: true}); err != nil {
						t.Fatal(err)
					}
				},
				showing: func() []string {
					var out []string
					for _, m := range s.Messages("C1") {
						if m.User == slacktest.BotUser && !m.Deleted {
							out = append(out, m.Text)
						}
					}
					return out
				}}
		},
	}
}

// A reply three times the platform's length limit, streamed natively: at
// the end the chat shows it whole, in order, each part once, as a final of
// that text is split, and the store holds each part once.
func TestLiveReplyContinuesPastTheLimitPlatforms(t *testing.T) {
	for _, mk := range livePlatforms(t) {
		p := mk(t)
		t.Run(p.name, func(t *testing.T) {
			var b strings.Builder
			for i := 0; b.Len() < 3*p.limits.MaxText; i++ {
				fmt.Fprintf(&b, "Line %03d of the long answer, with a few more words to fill it.\n", i)
			}
			reply := strings.TrimSpace(b.String())
			argv, gate := longStreamAgent(t, reply)
			h := p.harness(t, argv, StreamNative, nil)
			p.ready(t)
			parts := adapters.SplitRendered(reply, p.limits.MaxText, p.limits.Measure)
			if len(parts) < 3 {
				t.Fatalf("the reply makes %d parts; want 3 or more", len(parts))
			}
			p.say(t, "tell me everything")
			testwait.For(t, 30*time.Second, "the first part shown", func() bool {
				s := p.showing()
				return len(s) >= 1 && s[0] == parts[0]
			})
			openGate(t, gate)
			testwait.For(t, 30*time.Second, "the whole reply, delivered", func() bool {
				s := p.showing()
				return len(s) == len(parts) && s[len(s)-1] == parts[len(parts)-1] && len(h.botMessages(p.chat)) >= len(parts)
			})
			h.stop()
			s := p.showing()
			for i, part := range parts {
				if i >= len(s) || s[i] != part {
					t.Errorf("message %d of %d does not read as part %d of the reply", i+1, len(s), i+1)
				}
			}
			if len(s) != len(parts) {
				t.Errorf("the chat shows %d messages from the bot; want the %d parts, each once", len(s), len(parts))
			}
			if bots := h.botMessages(p.chat); len(bots) != len(parts) {
				t.Errorf("stored %d bot messages; want the %d parts, each once", len(bots), len(parts))
			}
		})
	}
}

// A 429 from the platform while a reply streams: the adapter waits as
// asked before its next request (the final's too: no request comes before
// the Retry-After); the chat ends showing the whole reply once, and the
// store holds it once.
func TestLiveReplyRateLimitedMidStreamPlatforms(t *testing.T) {
	for _, mk := range livePlatforms(t) {
		p := mk(t)
		t.Run(p.name, func(t *testing.T) {
			reply := fortyLines()
			argv, gate := longStreamAgent(t, reply)
			h := p.harness(t, argv, StreamNative, nil)
			p.ready(t)
			p.say(t, "tell me")
			p.waitLive(t)
			p.rateLimit(time.Second)
			openGate(t, gate)
			testwait.For(t, 30*time.Second, "the whole reply, delivered", func() bool {
				s := p.showing()
				return len(s) > 0 && s[len(s)-1] == reply && len(h.botMessages(p.chat)) > 0
			})
			h.stop()
			at, next := p.rateLimited()
			if at.IsZero() {
				t.Fatal("the fake never answered 429")
			}
			if next.Sub(at) < 900*time.Millisecond {
				t.Errorf("the next write came %s after a 429 asking to wait 1s", next.Sub(at))
			}
			p.wantOnce(t, h, reply)
		})
	}
}

// adapters.<name>.stream: edit shows the reply as one message edited in
// place, never the platform's native live reply (drafts, streams); off
// sends the final alone, once, with no edits. Either way the chat ends
// showing the reply once and the store holds it once.
func TestLiveReplyModesPlatforms(t *testing.T) {
	for _, mode := range []StreamMode{StreamEdit, StreamOff} {
		for _, mk := range livePlatforms(t) {
			p := mk(t)
			t.Run(string(mode)+"/"+p.name, func(t *testing.T) {
				reply := fortyLines()
				argv, gate := longStreamAgent(t, reply)
				h := p.harness(t, argv, mode, nil)
				p.ready(t)
				p.say(t, "tell me")
				if mode == StreamEdit {
					testwait.For(t, 30*time.Second, "the live message", func() bool { return len(p.showing()) > 0 })
				}
				openGate(t, gate)
				testwait.For(t, 30*time.Second, "the whole reply, delivered", func() bool {
					s := p.showing()
					return len(s) > 0 && s[len(s)-1] == reply && len(h.botMessages(p.chat)) > 0
				})
				h.stop()
				sent, edits, native := p.calls()
				switch {
				case native != 0:
					t.Errorf("%d native live requests (drafts, streams); stream: %s uses none", native, mode)
				case sent != 1:
					t.Errorf("%d messages sent; want one", sent)
				case mode == StreamEdit && edits == 0:
					t.Errorf("no edits; stream: edit shows the reply as it grows")
				case mode == StreamOff && edits != 0:
					t.Errorf("%d edits; stream: off sends the final alone", edits)
				}
				p.wantOnce(t, h, reply)
			})
		}
	}
}

// A turn that fails while its reply streams finalizes the live reply with
// the failure marker on every platform (a Slack stream stopped, a Telegram
// draft followed by the marked message), and leaves no live reply showing
// the unfinished text; the marked reply is not stored as the turn's reply.
func TestLiveReplyFailedMarkerPlatforms(t *testing.T) {
	const said = "Let me run that."
	for _, mk := range livePlatforms(t) {
		p := mk(t)
		t.Run(p.name, func(t *testing.T) {
			abs, err := filepath.Abs(toolFixture)
			if err != nil {
				t.Fatal(err)
			}
			gate := filepath.Join(t.TempDir(), "go")
			argv := testagent.Script(t, fmt.Sprintf(`cat >/dev/null
head -n 6 %q
while [ ! -e %q ]; do sleep 0.01; done
exit 3`, abs, gate))
			h := p.harness(t, argv, StreamNative, nil)
			p.ready(t)
			p.say(t, "run it")
			p.waitLive(t)
			openGate(t, gate)
			testwait.For(t, 30*time.Second, "the live reply marked failed", func() bool {
				return slices.Contains(p.showing(), said+liveEndFailed.marker())
			})
			h.stop()
			for _, s := range p.showing() {
				if s == said {
					t.Errorf("a live reply still shows the unfinished %q", s)
				}
			}
			for _, m := range h.botMessages(p.chat) {
				if strings.HasPrefix(m.Text, said) {
					t.Errorf("the marked live reply was stored as a reply: %+v", m)
				}
			}
		})
	}
}

// The request that ends a streamed reply fails once (a 5xx): it is tried
// again, and the chat ends showing the reply once (no second copy sent as
// a new message), stored once.
func TestLiveReplyFinalRetriedPlatforms(t *testing.T) {
	for _, mk := range livePlatforms(t) {
		p := mk(t)
		if p.fail == nil {
			continue
		}
		t.Run(p.name, func(t *testing.T) {
			reply := fortyLines()
			argv, gate := longStreamAgent(t, reply)
			h := p.harness(t, argv, StreamNative, nil)
			p.ready(t)
			p.say(t, "tell me")
			p.waitLive(t)
			p.fail()
			openGate(t, gate)
			testwait.For(t, 30*time.Second, "the whole reply, delivered", func() bool {
				s := p.showing()
				return len(s) > 0 && s[len(s)-1] == reply && len(h.botMessages(p.chat)) > 0
			})
			h.stop()
			p.wantOnce(t, h, reply)
		})
	}
}

// A turn that runs a tool: its live reply shows a progress note naming the
// tool while it runs (on a Slack stream the note going away ends the
// stream, and the message is edited after); the final replaces the live
// reply, shown once and stored once, with no progress note left.
func TestLiveReplyProgressPlatforms(t *testing.T) {
	for _, mk := range livePlatforms(t) {
		p := mk(t)
		if p.name == "telegram private" {
			continue // drafts: the fake keeps no message for them
		}
		t.Run(p.name, func(t *testing.T) {
			argv, gate := streamAgent(t, toolFixture, 19, 0) // the tool runs
			h := p.harness(t, argv, StreamNative, func(o *Options) { o.Progress = true })
			p.ready(t)
			p.say(t, "run it")
			testwait.For(t, 30*time.Second, "the progress note", func() bool {
				s := p.showing()
				return len(s) == 1 && strings.Contains(s[0], "Bash") && strings.Contains(s[0], "echo hi from bash")
			})
			openGate(t, gate)
			const final = "The command printed: hi from bash"
			testwait.For(t, 30*time.Second, "the final, delivered", func() bool {
				bots := h.botMessages(p.chat)
				return len(bots) == 1 && bots[0].Text == final
			})
			h.stop()
			if s := p.showing(); len(s) != 1 || s[0] != final {
				t.Errorf("the chat shows %q from the bot; want the final once", s)
			}
		})
	}
}

// harness starts a gateway whose agent is argv (claude-stream output),
// with p's adapter streaming in mode, every message of p's platform routed
// to main; modify (may be nil) changes more options.
func (p livePlatform) harness(t *testing.T, argv []string, mode StreamMode, modify func(*Options)) *harness {
	t.Helper()
	return newHarness(t, harnessConfig{agent: argv, routes: []routing.Route{{Match: map[string]string{"platform": p.chat.Platform()}, Target: "main"}},
		modify: func(o *Options) {
			o.Agent.Output = "claude-stream"
			o.Adapters = append(o.Adapters, p.adapter)
			o.Streams = map[string]Stream{p.chat.Platform(): {Mode: mode, Interval: 20 * time.Millisecond}}
			if modify != nil {
				modify(o)
			}
		}})
}

// waitLive waits until p's chat shows the live reply (p.live, or any
// message of the bot's).
func (p livePlatform) waitLive(t *testing.T) {
	t.Helper()
	live := p.live
	if live == nil {
		live = func() bool { return len(p.showing()) > 0 }
	}
	testwait.For(t, 30*time.Second, "the live reply shown", live)
}

// wantOnce checks that p's chat shows one message of the bot's and that
// the store holds the reply once.
func (p livePlatform) wantOnce(t *testing.T, h *harness, reply string) {
	t.Helper()
	if s := p.showing(); len(s) != 1 {
		t.Errorf("the chat shows %d messages from the bot; want the reply once: %q", len(s), s)
	}
	if bots := h.botMessages(p.chat); len(bots) != 1 || bots[0].Text != reply {
		t.Errorf("stored %d bot messages; want the reply once", len(bots))
	}
}

// fortyLines is a reply long enough to stream in several updates.
func fortyLines() string {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "Line %03d of the answer.\n", i)
	}
	return strings.TrimSpace(b.String())
}
