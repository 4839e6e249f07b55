package adaptertest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"switchboard/adapters"
)

// Presser is implemented by a Platform whose adapter is an adapters.Buttons.
type Presser interface {
	// UserPresses makes the user who posts (UserPosts) press a button
	// carrying data under the bot's message id in chat, the way the
	// platform reports it to the bot; data need not be one of the
	// message's buttons ("" is a press without a payload, the way the
	// platform sends one: a game's callback, a component without a
	// custom_id). It returns once the platform saw the press acknowledged,
	// with the text the presser was shown privately ("" when none), and
	// fails t when the press is not acknowledged within 10 s.
	UserPresses(t *testing.T, chat adapters.JID, id adapters.MessageID, data string) (answer string)
}

// testButtons: SendButtons shows the text and the buttons; a press reaches
// Host.Press with the button's data, the chat, the message and the presser
// (the JID the presser's own messages carry), and the presser is shown the
// answer; a press the gateway fails on is still acknowledged, with a
// generic answer that does not leak the error; a press without a payload
// is acknowledged and reaches nobody; EditButtons(nil) changes the text and
// removes the buttons.
func testButtons(t *testing.T, p Platform) {
	a, host := started(t, p)
	bt, ok := a.(adapters.Buttons)
	if !ok {
		t.Skip("the adapter shows no buttons")
	}
	pr, ok := p.(Presser)
	if !ok {
		t.Fatalf("%s is an adapters.Buttons but its Platform is no adaptertest.Presser", a.Name())
	}
	ctx := t.Context()
	chat, topic := p.Group()
	uid := p.UserPosts(t, Post{Chat: chat, Topic: topic, Text: "may I?", Mention: true})
	user := waitEvent(t, host, "the user's message", func(ev adapters.Inbound) bool { return ev.ID == uid })
	buttons := []adapters.Button{
		{Label: "Allow once", Data: "appr:7:allow", Style: adapters.StylePrimary},
		{Label: "Allow for this session", Data: "appr:7:session"},
		{Label: "Deny", Data: "appr:7:deny", Style: adapters.StyleDanger},
	}
	id, err := bt.SendButtons(ctx, adapters.Outbound{Chat: chat, Topic: topic, Text: "Run **rm -rf build**?", Key: "appr/7"}, buttons)
	if err != nil {
		t.Fatalf("send buttons: %v", err)
	}
	shown := func() Message {
		for _, m := range p.BotMessages(chat) {
			if m.ID == id {
				return m
			}
		}
		t.Fatalf("message %s is not on the platform", id)
		return Message{}
	}
	if m := shown(); !strings.Contains(m.Text, "Run rm -rf build?") || !sameButtons(m.Buttons, buttons) {
		t.Fatalf("the platform shows %q with buttons %+v; want \"Run rm -rf build?\" (formatting rendered) with %+v", m.Text, m.Buttons, buttons)
	}

	host.PressFunc = func(_ context.Context, p adapters.Press) (string, error) {
		switch {
		case p.Data == "appr:7:allow":
			return "Allowed once.", nil
		case strings.HasSuffix(p.Data, ":deny"):
			return "", errors.New("store: database is locked")
		}
		return "", adapters.ErrBadMessage
	}
	if answer := pr.UserPresses(t, chat, id, "appr:7:allow"); answer != "Allowed once." {
		t.Errorf("the presser was shown %q; want the gateway's answer \"Allowed once.\"", answer)
	}
	presses := host.Presses()
	if len(presses) != 1 {
		t.Fatalf("Host.Press got %d presses; want 1", len(presses))
	}
	got := presses[0]
	if got.Data != "appr:7:allow" || got.Chat != chat || got.Sender != user.Sender || (got.Message != "" && got.Message != id) {
		t.Errorf("press %+v; want data appr:7:allow, chat %s, message %s, sender %s (as the presser's messages)", got, chat, id, user.Sender)
	}

	answer := pr.UserPresses(t, chat, id, "appr:7:deny")
	if answer == "" || strings.Contains(answer, "database") {
		t.Errorf("a press the gateway failed on showed %q; want a generic answer, not the error", answer)
	}
	before := len(host.Presses())
	pr.UserPresses(t, chat, id, "")
	if n := len(host.Presses()); n != before {
		t.Errorf("a press without a payload reached Host.Press (%d presses, want %d)", n, before)
	}
	if m := shown(); !sameButtons(m.Buttons, buttons) || m.Deleted {
		t.Errorf("after the presses the message shows %+v; want it unchanged (the gateway edits it, not the adapter)", m)
	}

	if err := bt.EditButtons(ctx, adapters.MessageRef{Chat: chat, Topic: topic, ID: id}, "Allowed once by **Ann**", nil); err != nil {
		t.Fatalf("edit buttons: %v", err)
	}
	if m := shown(); !strings.Contains(m.Text, "Allowed once by Ann") || len(m.Buttons) != 0 {
		t.Errorf("after EditButtons(nil) the platform shows %q with buttons %+v; want \"Allowed once by Ann\" and none", m.Text, m.Buttons)
	}
	// Buttons may come back (a request shown again) and go for good.
	again := buttons[2:]
	if err := bt.EditButtons(ctx, adapters.MessageRef{Chat: chat, Topic: topic, ID: id}, "Still waiting", again); err != nil {
		t.Fatalf("edit buttons back: %v", err)
	}
	if m := shown(); !strings.Contains(m.Text, "Still waiting") || !sameButtons(m.Buttons, again) {
		t.Errorf("after EditButtons with one button the platform shows %q with %+v; want \"Still waiting\" with %+v", m.Text, m.Buttons, again)
	}
}

// sameButtons compares labels and data, and styles where the platform kept
// them.
func sameButtons(got, want []adapters.Button) bool {
	return slices.EqualFunc(got, want, func(g, w adapters.Button) bool {
		return strings.TrimSpace(g.Label) == w.Label && g.Data == w.Data && (g.Style == "" || g.Style == w.Style)
	})
}
