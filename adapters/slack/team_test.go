package slack_test

import (
	"errors"
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

// TestChatOfAnotherWorkspaceReachesNothing: Slack addresses a conversation
// by its id alone, and the gateway authorizes a call by its chat JID. A
// group that owns every slack chat but slack:T1/channel/C1 (a catch-all
// route behind another group's pinned one) must not reach C1 as
// slack:T9/channel/C1: the bot is in T1 only, so that JID names no chat.
// Once an event has shown the bot its workspace, a send, a live reply and
// an edit are refused for good, naming the workspace;
// slack:T1/channel/C1 itself still works.
func TestChatOfAnotherWorkspaceReachesNothing(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	a := start(t, s, slack.ModeSocket, host)
	// A member's message: the bot now knows its workspace from an event.
	post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "hello"})
	host.WaitEvents(t, 1)
	before := len(s.Messages("C1"))
	other := adapters.JID("slack:T9/channel/C1")
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: other, Text: "to T9"}); !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "T9") {
		t.Errorf("send to %s: %v; want a permanent error naming workspace T9", other, err)
	}
	if _, err := a.StartLive(t.Context(), adapters.Outbound{Chat: other}, "turn-1"); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("live reply in %s: %v; want a permanent error", other, err)
	}
	if err := a.Edit(t.Context(), adapters.MessageRef{Chat: other, ID: "1700000000.000100"}, "edited"); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("edit in %s: %v; want a permanent error", other, err)
	}
	if n := len(s.Messages("C1")) - before; n != 0 {
		t.Errorf("C1 got %d messages from sends to %s; want none", n, other)
	}
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: "slack:" + slacktest.Team + "/channel/C1", Text: "to T1"}); err != nil {
		t.Errorf("send to C1 in the bot's workspace: %v", err)
	}
}
