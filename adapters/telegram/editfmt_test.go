package telegram

import (
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// TestEditFallsBackToPlainText: an edit whose formatting Telegram refuses
// ("can't parse entities") is made again as plain text, as Send does, so
// the agent's edit_message (and a live reply's edit in a group) still
// changes the message instead of failing for good.
func TestEditFallsBackToPlainText(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	ctx := t.Context()
	id, err := a.Send(ctx, adapters.Outbound{Chat: groupChat, Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	f.RejectFormatting()
	if err := a.Edit(ctx, adapters.MessageRef{Chat: groupChat, ID: id}, "**final** answer (with parens)"); err != nil {
		t.Fatalf("edit after Telegram refused its formatting: %v", err)
	}
	ms := f.Messages(telegramtest.GroupID)
	if got := ms[len(ms)-1].Text; !strings.Contains(got, "final answer (with parens)") {
		t.Errorf("the message shows %q; want the edit as plain text", got)
	}
}
