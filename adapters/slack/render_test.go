package slack

import (
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
