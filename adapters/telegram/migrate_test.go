package telegram

import (
	"strconv"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// A supergroup that a group became keeps the group's JID, but Telegram
// counts its message ids afresh: its message 2 is not the group's message
// 2. Both are stored, under ids of their own, so the supergroup's is not
// dropped as a message already stored (the bot silently ignored it); the
// bot's replies, edits and reactions there reach the supergroup's message.
func TestSupergroupMessageIDsDoNotMeetTheGroups(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host)
	const old, super = int64(-5555), int64(-1009999)
	after, n := f.UserMessage(super, "in the supergroup", true, 0, 0)
	before, _ := f.UserMessage(old, "in the group", true, 0, 0)
	before["message_id"] = n // the same number in the group
	f.Push("message", before)
	m, _ := f.UserMessage(old, "", false, 0, 0)
	m["migrate_to_chat_id"] = super
	f.Push("message", m)
	f.Push("message", after)
	evs := host.WaitEvents(t, 2)
	if evs[0].Chat != evs[1].Chat || evs[0].ID == evs[1].ID {
		t.Fatalf("the group's message 2 is %s/%s and the supergroup's %s/%s; want one JID, two identities", evs[0].Chat, evs[0].ID, evs[1].Chat, evs[1].ID)
	}
	ref := adapters.MessageRef{Chat: evs[1].Chat, ID: evs[1].ID}
	if err := a.React(t.Context(), ref, "👍"); err != nil {
		t.Fatalf("like the supergroup's message: %v", err)
	}
	if c := f.Calls("setMessageReaction"); c[len(c)-1].Params["chat_id"] != "-1009999" || c[len(c)-1].Params["message_id"] != strconv.Itoa(n) {
		t.Errorf("reacted with %v; want message %d of the supergroup", c[len(c)-1].Params, n)
	}
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: evs[1].Chat, Text: "answer", ReplyTo: evs[1].ID})
	if err != nil {
		t.Fatal(err)
	}
	if c := f.Calls("sendMessage"); c[len(c)-1].Params["reply_parameters"] == "" {
		t.Errorf("the answer does not reply to the supergroup's message: %v", c[len(c)-1].Params)
	}
	if err := a.Edit(t.Context(), adapters.MessageRef{Chat: evs[1].Chat, ID: id}, "answer, edited"); err != nil {
		t.Errorf("edit the bot's message %s in the supergroup: %v", id, err)
	}
}
