package slack_test

import (
	"strings"
	"testing"
	"time"

	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

// Integrations (CI, monitoring, incident tools) post their news as
// legacy attachments, often with no text of their own. Such a message is
// stored as other bots' are, with the attachments' text (pretext, author,
// title, text, fields, footer), so that a folder observing the channel
// reads what it said rather than an empty message.
func TestBotAttachmentsAreText(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	if _, _, err := s.Emit(map[string]any{"type": "message", "subtype": "bot_message", "channel": "C1", "channel_type": "channel",
		"bot_id": "B2", "username": "ci", "text": "", "ts": "1700000100.000100",
		"attachments": []map[string]any{{"fallback": "Build #812 failed", "color": "danger", "title": "Build #812 failed",
			"text": "main: 3 tests failed", "fields": []map[string]any{{"title": "Branch", "value": "main", "short": true}},
			"footer": "took 4m"}}}); err != nil {
		t.Fatal(err)
	}
	ev := host.WaitEvents(t, 1)[0]
	for _, want := range []string{"Build #812 failed", "main: 3 tests failed", "Branch: main", "took 4m"} {
		if !strings.Contains(ev.Text, want) {
			t.Errorf("the integration's message reads %q; want it to hold %q", ev.Text, want)
		}
	}
	if !ev.OtherBot {
		t.Errorf("the integration's message is not marked as another bot's: %+v", ev)
	}
}

// A message a person forwarded (Slack's share: an attachment marked
// is_share) reaches the agent with the forwarded text and whose it was,
// not as an empty message or the forwarder's comment alone.
func TestForwardedMessageIsText(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	if _, _, err := s.Emit(map[string]any{"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1",
		"text": "look at this", "ts": "1700000200.000100",
		"attachments": []map[string]any{{"is_share": true, "author_name": "Bo", "text": "the build is green", "fallback": "[x] the build is green"}}}); err != nil {
		t.Fatal(err)
	}
	ev := host.WaitEvents(t, 1)[0]
	if want := "look at this\n[forwarded from Bo] the build is green"; ev.Text != want {
		t.Errorf("a forwarded message reads %q; want %q", ev.Text, want)
	}
}

// Over Socket Mode an envelope whose event the SDK does not know (one
// Slack added since) is acknowledged, as the Events API answers it 200:
// nothing to store, and no redelivery of it again and again.
func TestUnknownSocketEventAcknowledged(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	if _, _, err := s.Emit(map[string]any{"type": "brand_new_event", "channel": "C1", "event_ts": "1700000300.000100"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UserPosts(slacktest.Post{Channel: "C1", User: "U1", Text: "after it"}); err != nil {
		t.Fatal(err)
	}
	host.WaitEvents(t, 1)
	// The envelopes are taken in order: once the message after it was
	// delivered, the unknown one was handled; its ack follows at once.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		envs := s.Envelopes()
		if len(envs) > 0 && envs[0].Acked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the envelope of an unknown event was never acknowledged: %+v", envs)
		}
	}
}
