package slack

import (
	"strings"
	"testing"

	"switchboard/adapters/slack/slacktest"
)

func TestRenderMarkup(t *testing.T) {
	s := slacktest.New(t)
	a := New(Options{BotToken: slacktest.BotToken, APIURL: s.URL()})
	for _, c := range []struct{ in, want string }{
		{"hi <@U1>", "hi @alice"},
		{"hi <@U1|ally>", "hi @ally"},
		{"hi <@UNKNOWN>", "hi @UNKNOWN"},
		{"in <#C1|general> and <#C1>", "in #general and #C1"},
		{"<https://x.io/a?b=1&amp;c=2|the docs>", "the docs (https://x.io/a?b=1&c=2)"},
		{"<https://x.io>", "https://x.io"},
		{"<http://x.io|x.io>", "http://x.io"},
		{"<mailto:a@b.io|a@b.io>", "a@b.io"},
		{"<!here> <!channel> <!everyone>", "@here @channel @everyone"},
		{"<!subteam^S1|@oncall> ping", "@oncall ping"},
		{"<!date^1392734382^{date}|Feb 18, 2014>", "Feb 18, 2014"},
		{"a &lt;b&gt; &amp;lt; c", "a <b> &lt; c"},
		{"no markup at all", "no markup at all"},
	} {
		if got := a.render(t.Context(), c.in); got != c.want {
			t.Errorf("render(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A mention of someone named like the bot's handle (a display name, a
// label, a user group "switchboard") does not read as the bot's mention:
// the gateway asks MentionsSelf of a message's first word, and "@bob stop"
// to that person in the bot's thread would otherwise stop the bot's turn.
// It stays markup; the bot's own mention is its handle.
func TestMentionNamedLikeTheBotIsNotTheBots(t *testing.T) {
	s := slacktest.New(t)
	s.SetUserName("U1", "Switchboard")
	a := New(Options{BotToken: slacktest.BotToken, APIURL: s.URL()})
	if err := a.authenticate(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   string
		self bool
	}{
		{"<@U1> stop", false},
		{"<@U1|switchboard> stop", false},
		{"<!subteam^S1|@switchboard> stop", false},
		{"<@" + slacktest.BotUser + "> stop", true},
	} {
		text := a.render(t.Context(), c.in)
		first := strings.Fields(text)[0]
		if self, known := a.MentionsSelf(first); !known || self != c.self {
			t.Errorf("%q renders %q: MentionsSelf(%q) = %v, %v; want %v, true", c.in, text, first, self, known, c.self)
		}
	}
}
