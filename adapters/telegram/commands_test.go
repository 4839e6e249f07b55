package telegram

import (
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// A command addressed to another bot ("/stop@other_bot") is marked as
// such, even in reply to this bot; one addressed to this bot (in any
// case) or to no bot is not.
func TestCommandToOtherBotMarked(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host)
	botID, err := a.Send(t.Context(), adapters.Outbound{Chat: groupChat, Text: "hi all"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text    string
		replyTo int
		other   bool
	}{
		{"/stop@other_bot", 0, true},
		{"/approve@other_bot abc1234", atoi(botID), true},
		{"/stop@" + strings.ToLower(telegramtest.BotName), 0, false},
		{"/stop", atoi(botID), false},
		{"see /stop@other_bot", 0, false}, // not a command: it does not start the message
	}
	for _, c := range cases {
		m, _ := f.UserMessage(telegramtest.GroupID, c.text, false, 0, c.replyTo)
		cmd := strings.Fields(c.text)[0]
		off := 0
		if !strings.HasPrefix(cmd, "/") {
			off = strings.Index(c.text, "/")
			cmd = c.text[off:]
		}
		m["entities"] = []map[string]any{{"type": "bot_command", "offset": off, "length": len(cmd)}}
		f.Push("message", m)
	}
	evs := host.WaitEvents(t, len(cases))
	for i, c := range cases {
		if evs[i].Text != c.text || evs[i].ToOtherBot != c.other {
			t.Errorf("%q: text %q, to another bot %v; want %v", c.text, evs[i].Text, evs[i].ToOtherBot, c.other)
		}
	}
}
