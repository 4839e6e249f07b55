package gateway

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
	"switchboard/adapters/telegram"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testwait"
	"switchboard/routing"
	"switchboard/store"
)

// stopTelegram runs the gateway with the real Telegram adapter against the
// fake Bot API, streaming natively, an agent that prints the first n lines
// of the tool fixture and then waits for good, and a Stop button after
// 200 ms.
func stopTelegram(t *testing.T, n int) (*harness, *telegramtest.Server) {
	t.Helper()
	argv, _ := streamAgent(t, toolFixture, n, 0) // the gate never opens
	fake := telegramtest.New(t)
	tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
		PerChat: 10 * time.Millisecond, PerGroup: 10 * time.Millisecond, Global: -1})
	h := newHarness(t, harnessConfig{agent: argv, noStart: true, routes: []routing.Route{{Match: map[string]string{"platform": "telegram"}, Target: "main"}},
		modify: func(o *Options) {
			o.Agent.Output = "claude-stream"
			o.Agent.Timeout = time.Minute
			o.Adapters = append(o.Adapters, tg)
			o.Streams = map[string]Stream{"telegram": {Mode: StreamNative, Interval: 20 * time.Millisecond}}
		}})
	h.g.turns.buttons.delay = 200 * time.Millisecond
	h.start()
	return h, fake
}

// botShowing is what the bot's messages in chat show, deleted ones left out.
func botShowing(fake *telegramtest.Server, chat int64) []telegramtest.Msg {
	var out []telegramtest.Msg
	for _, m := range fake.Messages(chat) {
		if m.FromBot && !m.Deleted {
			out = append(out, m)
		}
	}
	return out
}

// pressStop presses the Stop button of message m as user 7 and checks the
// answer and that the turn was recorded stopped.
func pressStop(t *testing.T, h *harness, fake *telegramtest.Server, chat int64, m telegramtest.Msg) {
	t.Helper()
	if len(m.Buttons) != 1 || m.Buttons[0].Text != "Stop" || !strings.HasPrefix(m.Buttons[0].Data, stopPressPrefix) {
		t.Fatalf("message %q has buttons %+v; want one Stop button", m.Text, m.Buttons)
	}
	if answer := fake.WaitAnswered(t, fake.Press(chat, m.ID, m.Buttons[0].Data)); answer != stopStopping {
		t.Fatalf("press answered %q; want %q", answer, stopStopping)
	}
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
		t.Fatalf("turn %+v; want stopped", ts[0])
	}
}

// In a Telegram group the live reply is one message the bot edits: it
// carries the Stop button while the turn runs (no message of its own for
// it), pressing it stops the turn, and the live reply's last edit, its
// stop marker, has no button. A turn that said nothing yet shows a
// placeholder to carry the button, edited at the end to say it stopped.
func TestStopButtonOnLiveReplyTelegramGroup(t *testing.T) {
	const said = "Let me run that."
	for _, c := range []struct {
		name  string
		lines int
		shows string // what the live reply shows when the button is pressed
		final string // what the chat shows of the bot at the end
	}{
		{"text so far", 6, said, said + liveEndStopped.marker()},
		{"nothing said yet", 0, "Working on it…", stopStopped},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, fake := stopTelegram(t, c.lines)
			msg, _ := fake.UserMessage(telegramtest.GroupID, "run it", true, 0, 0)
			fake.Push("message", msg)
			var shown []telegramtest.Msg
			testwait.For(t, 20*time.Second, "the live reply with its Stop button", func() bool {
				shown = botShowing(fake, telegramtest.GroupID)
				return len(shown) > 0 && shown[0].Text == c.shows && len(shown[0].Buttons) > 0
			})
			if len(shown) != 1 {
				t.Fatalf("the bot shows %d messages; want the live reply alone, carrying the button", len(shown))
			}
			pressStop(t, h, fake, telegramtest.GroupID, shown[0])
			testwait.For(t, 20*time.Second, "the live reply ended", func() bool {
				s := botShowing(fake, telegramtest.GroupID)
				return len(s) == 1 && s[0].Text == c.final
			})
			h.stop()
			s := botShowing(fake, telegramtest.GroupID)
			if len(s) != 1 || len(s[0].Buttons) != 0 {
				t.Errorf("the bot shows %+v; want the stop marker's edit, without buttons", s)
			}
			var all int
			for _, m := range fake.Messages(telegramtest.GroupID) {
				if m.FromBot {
					all++
				}
			}
			if all != 1 {
				for _, m := range fake.Messages(telegramtest.GroupID) {
					t.Logf("%+v", m)
				}
				t.Errorf("the bot sent %d messages; want the live reply alone", all)
			}
		})
	}
}

// In a private chat the live reply is a draft, which carries no buttons:
// the Stop button is a message of its own, gone once the turn stopped; the
// chat keeps the stop marker as the final, without buttons.
func TestStopButtonMessageTelegramPrivate(t *testing.T) {
	h, fake := stopTelegram(t, 6)
	chat := int64(telegramtest.UserID)
	msg, _ := fake.UserMessage(chat, "run it", false, 0, 0)
	fake.Push("message", msg)
	var shown []telegramtest.Msg
	testwait.For(t, 20*time.Second, "the Stop button's message", func() bool {
		shown = botShowing(fake, chat)
		return len(shown) > 0
	})
	if len(shown) != 1 || !strings.Contains(shown[0].Text, "Press Stop") {
		t.Fatalf("the bot shows %+v; want the Stop button's message alone (the reply is a draft)", shown)
	}
	pressStop(t, h, fake, chat, shown[0])
	want := "Let me run that." + liveEndStopped.marker()
	testwait.For(t, 20*time.Second, "the stop marker, the Stop message gone", func() bool {
		s := botShowing(fake, chat)
		return len(s) == 1 && s[0].Text == want
	})
	h.stop()
	if s := botShowing(fake, chat); len(s) != 1 || len(s[0].Buttons) != 0 {
		t.Errorf("the bot shows %+v; want the final alone, without buttons", s)
	}
}

// On Slack a channel turn's live reply streams in the thread under the
// message it answers, and a stream carries no buttons: the turn's Stop
// button is a message of its own, and it goes where the live reply is,
// into that thread, not into the channel (where every member would see a
// bot post appear and vanish for each long turn). Pressing it stops the
// turn; it is deleted when the turn ends.
func TestStopButtonInTheReplysThreadSlack(t *testing.T) {
	s := slacktest.New(t)
	argv, _ := streamAgent(t, toolFixture, 6, 0) // the gate never opens
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
		APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond})
	h := newHarness(t, harnessConfig{agent: argv, noStart: true, routes: []routing.Route{{Match: map[string]string{"platform": "slack"}, Target: "main"}},
		modify: func(o *Options) {
			o.Agent.Output = "claude-stream"
			o.Agent.Timeout = time.Minute
			o.Adapters = append(o.Adapters, a)
			o.Streams = map[string]Stream{"slack": {Mode: StreamNative, Interval: 20 * time.Millisecond}}
		}})
	h.g.turns.buttons.delay = 200 * time.Millisecond
	h.start()
	testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
	ts, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> run it", Mention: true})
	if err != nil {
		t.Fatal(err)
	}
	var stop slacktest.Msg
	testwait.For(t, 20*time.Second, "the Stop button", func() bool {
		for _, m := range s.Messages("C1") {
			if m.User == slacktest.BotUser && len(m.Buttons) > 0 && !m.Deleted {
				stop = m
				return true
			}
		}
		return false
	})
	if stop.ThreadTS != ts {
		t.Errorf("the Stop button %q is in thread %q; want the reply's thread %q", stop.Text, stop.ThreadTS, ts)
	}
	if _, _, err := s.UserPresses("C1", stop.TS, "U1", stop.Buttons[0].Value); err != nil {
		t.Fatal(err)
	}
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
		t.Fatalf("turn %+v; want stopped", ts[0])
	}
	testwait.For(t, 20*time.Second, "the Stop button gone", func() bool {
		for _, m := range s.Messages("C1") {
			if m.TS == stop.TS {
				return m.Deleted
			}
		}
		return true
	})
}

// gatedButtonAdapter is a platform with buttons and edits, whose downloads
// wait for gate: its live reply is a message the bot edits, which can
// carry the Stop button.
type gatedButtonAdapter struct {
	*fakeAdapter
	gate chan struct{}

	bmu     sync.Mutex
	buttons []adapters.Outbound // messages sent with a Stop button
}

func (a *gatedButtonAdapter) SendButtons(ctx context.Context, m adapters.Outbound, b []adapters.Button) (adapters.MessageID, error) {
	a.bmu.Lock()
	a.buttons = append(a.buttons, m)
	a.bmu.Unlock()
	return a.Send(ctx, m)
}

func (a *gatedButtonAdapter) EditButtons(context.Context, adapters.MessageRef, string, []adapters.Button) error {
	return nil
}

func (a *gatedButtonAdapter) Edit(context.Context, adapters.MessageRef, string) error { return nil }

func (a *gatedButtonAdapter) Delete(context.Context, adapters.MessageRef) error { return nil }

func (a *gatedButtonAdapter) Download(ctx context.Context, _ adapters.Attachment) (io.ReadCloser, error) {
	select {
	case <-a.gate:
		return io.NopCloser(strings.NewReader("data")), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (a *gatedButtonAdapter) withButtons() []string {
	a.bmu.Lock()
	defer a.bmu.Unlock()
	var out []string
	for _, m := range a.buttons {
		out = append(out, m.Text)
	}
	return out
}

// A turn whose attachments download for longer than the Stop button's
// delay shows its button as a message of its own (the live reply has not
// started), and then only there: the live reply that starts afterwards
// does not carry a second one.
func TestStopButtonOnceWhenTheTurnStartsLate(t *testing.T) {
	argv, agentGate := streamAgent(t, toolFixture, 6, 0)
	ba := &gatedButtonAdapter{fakeAdapter: newFakeAdapter("test"), gate: make(chan struct{})}
	h := newHarness(t, harnessConfig{agent: argv, noStart: true, modify: func(o *Options) {
		o.Agent.Output = "claude-stream"
		o.Agent.Timeout = time.Minute
		o.Adapters = []adapters.Adapter{ba}
		o.Streams = map[string]Stream{"test": {Mode: StreamEdit, Interval: 20 * time.Millisecond}}
	}})
	h.fa = ba.fakeAdapter
	h.g.turns.buttons.delay = 10 * time.Millisecond
	h.start()
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "look at this", Verb: adapters.VerbMention,
		Attachments: []adapters.Attachment{{Name: "f.bin", Size: 4, Ref: "f"}}})
	testwait.For(t, 20*time.Second, "the Stop button's message while the file downloads", func() bool { return len(ba.withButtons()) == 1 })
	close(ba.gate)
	testwait.For(t, 20*time.Second, "the live reply", func() bool {
		for _, m := range ba.sentTo(testChat) {
			if strings.HasSuffix(m.Key, "/reply/live") { // its first state; edits follow
				return true
			}
		}
		return false
	})
	if got := ba.withButtons(); len(got) != 1 || !strings.Contains(got[0], "Press Stop") {
		t.Errorf("messages with a Stop button: %q; want the button's own message alone", got)
	}
	openGate(t, agentGate)
	h.waitTurns("main", 1)
}
