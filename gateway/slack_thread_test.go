package gateway

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
	"switchboard/internal/testwait"
	"switchboard/routing"
	"switchboard/store"
)

// On Slack a reply to a top-level channel message opens a thread under it
// (docs/slack.md). Every part of a reply too long for one message goes into
// that thread, the bot's reply is stored in it, and the thread counts as
// where the bot spoke: a follow-up written there without a mention reaches
// the folder on a mention-only route, as any follow-up in a chat/topic where
// the bot spoke (CONTRACT §5, §4: a reply goes to the chat and topic of the
// message it answers).
func TestSlackReplyThreadIsWhereTheBotSpoke(t *testing.T) {
	long := strings.Repeat("word ", 1500) // 7,500 characters: two parts at Slack's 4,000
	dir := t.TempDir()
	script := filepath.Join(dir, "agent.sh")
	body := `cat > /dev/null
if [ -e "` + dir + `/ran" ]; then echo "short answer"; else touch "` + dir + `/ran"; echo "` + long + `"; fi
`
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	h, s := slackThreadHarness(t, script, []routing.Route{ // mention-only: a mention triggers, the rest is context
		{Seq: 1, Match: map[string]string{"platform": "slack", "verb": "mention"}, Target: "main"},
		{Seq: 2, Match: map[string]string{"platform": "slack"}, Target: "main", Mode: routing.Observe},
	})
	ts, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> report please", Mention: true})
	if err != nil {
		t.Fatal(err)
	}
	bot := func() []slacktest.Msg {
		var out []slacktest.Msg
		for _, m := range s.Messages("C1") {
			if m.User == slacktest.BotUser && !m.Deleted {
				out = append(out, m)
			}
		}
		return out
	}
	testwait.For(t, 30*time.Second, "both parts of the reply, stored", func() bool {
		return len(bot()) >= 2 && len(h.botMessages("slack:T1/channel/C1")) >= 2
	})
	for i, m := range bot() {
		if m.ThreadTS != ts {
			t.Errorf("part %d of the reply went to thread %q; want the thread under the message it answers (%s)", i+1, m.ThreadTS, ts)
		}
	}
	for i, m := range h.botMessages("slack:T1/channel/C1") {
		if m.Topic != ts {
			t.Errorf("part %d of the reply is stored in topic %q; want %s, the thread it is in", i+1, m.Topic, ts)
		}
	}
	// A follow-up in that thread, without a mention, on the observe route.
	if _, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "and the totals?", ThreadTS: ts}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the answer to the follow-up in the thread", func() bool {
		for _, m := range bot() {
			if m.Text == "short answer" {
				if m.ThreadTS != ts {
					t.Errorf("the follow-up's answer went to thread %q; want %s", m.ThreadTS, ts)
				}
				return true
			}
		}
		return false
	})
}

// A turn answering a top-level Slack channel message fails: its failure
// notice goes where its reply would have, into the thread under that
// message, not into the channel.
func TestSlackFailureNoticeInTheReplyThread(t *testing.T) {
	script := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(script, []byte("cat > /dev/null\necho broken >&2\nexit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, s := slackThreadHarness(t, script, []routing.Route{{Match: map[string]string{"platform": "slack"}, Target: "main"}})
	ts, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> report please", Mention: true})
	if err != nil {
		t.Fatal(err)
	}
	var notice slacktest.Msg
	testwait.For(t, 30*time.Second, "the failure notice", func() bool {
		for _, m := range s.Messages("C1") {
			if m.User == slacktest.BotUser && strings.Contains(m.Text, "went wrong") {
				notice = m
				return true
			}
		}
		return false
	})
	if notice.ThreadTS != ts {
		t.Errorf("the failure notice went to thread %q; want the thread under the message it answers (%s)", notice.ThreadTS, ts)
	}
}

// slackThreadHarness runs the shell agent script with routes over a real
// Slack adapter (Socket Mode, no live replies) against a fake Slack, and
// waits until the adapter is connected.
func slackThreadHarness(t *testing.T, script string, routes []routing.Route) (*harness, *slacktest.Server) {
	t.Helper()
	s := slacktest.New(t)
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
		APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond})
	h := newHarness(t, harnessConfig{agent: []string{"/bin/sh", script}, routes: routes,
		modify: func(o *Options) {
			o.Adapters = append(o.Adapters, a)
			o.Streams = map[string]Stream{"slack": {Mode: StreamOff}}
		}})
	testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
	return h, s
}

// A turn answering a top-level Slack channel message is stopped while its
// live reply shows in the thread under that message: the live reply, ended
// "(stopped)", is stored as the bot's message in that thread's topic, as
// its final would have been.
func TestSlackStoppedReplyStoredInItsThread(t *testing.T) {
	s := slacktest.New(t)
	h := stopOn(t, slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
		APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond}), "slack")
	testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
	ts, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> run it", Mention: true})
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the live reply", func() bool {
		for _, m := range s.Messages("C1") {
			if m.User == slacktest.BotUser && strings.HasPrefix(m.Text, "Let me run that.") {
				return true
			}
		}
		return false
	})
	if _, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> stop", Mention: true, ThreadTS: ts}); err != nil {
		t.Fatal(err)
	}
	var bot []store.Message
	testwait.For(t, 20*time.Second, "the stopped reply stored", func() bool {
		bot = h.botMessages("slack:T1/channel/C1")
		return len(bot) > 0
	})
	if len(bot) != 1 || bot[0].Topic != ts || !strings.HasSuffix(bot[0].Text, "(stopped)") {
		t.Fatalf("bot messages stored %+v; want the stopped reply, in topic %s (the thread it shows in)", bot, ts)
	}
}

// A reply too long for one Slack message, streamed live while a turn
// answers a top-level channel message: every part goes into the thread
// under that message, where the first one streams, and is stored in that
// thread's topic; none lands in the channel itself.
func TestSlackLongLiveReplyStaysInItsThread(t *testing.T) {
	s := slacktest.New(t)
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
		APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond})
	var b strings.Builder
	for i := 0; b.Len() < 3*slack.MaxText; i++ {
		fmt.Fprintf(&b, "Line %03d of the long answer, with a few more words to fill it.\n", i)
	}
	reply := strings.TrimSpace(b.String())
	argv, gate := longStreamAgent(t, reply)
	p := livePlatform{chat: "slack:T1/channel/C1", adapter: a}
	h := p.harness(t, argv, StreamNative, nil)
	testwait.For(t, 20*time.Second, "socket mode connection", func() bool { return s.Connections() > 0 })
	ts, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "> tell me everything", Mention: true})
	if err != nil {
		t.Fatal(err)
	}
	parts := adapters.SplitRendered(reply, a.Limits().MaxText, a.Limits().Measure)
	bot := func() []slacktest.Msg {
		var out []slacktest.Msg
		for _, m := range s.Messages("C1") {
			if m.User == slacktest.BotUser && !m.Deleted {
				out = append(out, m)
			}
		}
		return out
	}
	testwait.For(t, 30*time.Second, "the first part shown", func() bool { return len(bot()) >= 1 })
	openGate(t, gate)
	testwait.For(t, 30*time.Second, "the whole reply, delivered and stored", func() bool {
		return len(bot()) == len(parts) && len(h.botMessages(p.chat)) >= len(parts)
	})
	h.stop()
	for i, m := range bot() {
		if m.ThreadTS != ts {
			t.Errorf("part %d of %d went to thread %q; want the thread under the message it answers (%s)", i+1, len(parts), m.ThreadTS, ts)
		}
	}
	for i, m := range h.botMessages(p.chat) {
		if m.Topic != ts {
			t.Errorf("part %d is stored in topic %q; want %s, the thread it is in", i+1, m.Topic, ts)
		}
	}
}
