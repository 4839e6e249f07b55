package slack_test

import (
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

// like with an emoji, as an agent writes it for any platform (and as
// Telegram requires), reacts on Slack too: reactions.add takes Slack's
// name of it. Before, Slack refused every emoji with invalid_name.
func TestLikeWithAnEmoji(t *testing.T) {
	s := slacktest.New(t)
	a := start(t, s, slack.ModeSocket, adaptertest.NewHost())
	chat := adapters.JID("slack:T1/channel/C1")
	for _, tc := range []struct{ reaction, want string }{
		{"👍", "+1"},
		{"❤️", "heart"},
		{"👍🏽", "+1::skin-tone-4"},
		{"✅", "white_check_mark"},
		{":tada:", "tada"},
		{"eyes", "eyes"},
	} {
		ts := s.AddMessage("C1", "U1", "ship it?", "")
		if err := a.React(t.Context(), adapters.MessageRef{Chat: chat, ID: adapters.MessageID(ts)}, tc.reaction); err != nil {
			t.Errorf("like %q: %v", tc.reaction, err)
			continue
		}
		found := false
		for _, m := range s.Messages("C1") {
			if m.TS != ts {
				continue
			}
			found = true
			if len(m.Reactions) != 1 || m.Reactions[0] != tc.want {
				t.Errorf("like %q: the message has reactions %q; want %q", tc.reaction, m.Reactions, tc.want)
			}
		}
		if !found {
			t.Errorf("like %q: message %s is not in the fake's channel, so its reaction went unchecked", tc.reaction, ts)
		}
	}
}
