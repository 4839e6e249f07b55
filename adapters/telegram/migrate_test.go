package telegram

import (
	"errors"
	"strconv"
	"strings"
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

// The group's messages from before it became a supergroup keep their
// plain ids; Telegram reaches none of them any more. A reaction to one
// (or a reply to one) must not land on the supergroup's message of the
// same number, an unrelated one: the reaction is refused for good, the
// reply goes without its quote.
func TestGroupMessageIDAfterMigrationReachesNoSupergroupMessage(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host)
	const old, super = int64(-5556), int64(-1009998)
	before, _ := f.UserMessage(old, "in the group", true, 0, 0)
	f.Push("message", before)
	m, _ := f.UserMessage(old, "", false, 0, 0)
	m["migrate_to_chat_id"] = super
	f.Push("message", m)
	after, _ := f.UserMessage(super, "in the supergroup", true, 0, 0)
	f.Push("message", after)
	evs := host.WaitEvents(t, 2)
	groupMsg := evs[0]
	err := a.React(t.Context(), adapters.MessageRef{Chat: groupMsg.Chat, ID: groupMsg.ID}, "👍")
	if !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("react to the group's message %s after the migration: %v; want a permanent refusal", groupMsg.ID, err)
	}
	if c := f.Calls("setMessageReaction"); len(c) > 0 {
		t.Errorf("reacted with %v: a supergroup message that happens to share the group message's number", c[len(c)-1].Params)
	}
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: groupMsg.Chat, Text: "answer", ReplyTo: groupMsg.ID}); err != nil {
		t.Fatal(err)
	}
	if c := f.Calls("sendMessage"); c[len(c)-1].Params["reply_parameters"] != "" {
		t.Errorf("the answer quotes a supergroup message for the group's %s: %v", groupMsg.ID, c[len(c)-1].Params)
	}
}

// A supergroup that a group became keeps the group's JID, by which the
// gateway routes and authorizes the chat. Its own id's JID
// (telegram:group/1009997) must not reach it: a route that pins the old
// JID to one group would not see it, and a catch-all of another group
// would own it. Such a send is refused for good, naming the chat's JID;
// the old JID reaches the supergroup.
func TestSupergroupsOwnJIDReachesNothing(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host)
	const old, super = int64(-5557), int64(-1009997)
	m, _ := f.UserMessage(old, "", false, 0, 0)
	m["migrate_to_chat_id"] = super
	f.Push("message", m)
	after, _ := f.UserMessage(super, "in the supergroup", true, 0, 0)
	f.Push("message", after)
	chat := host.WaitEvents(t, 1)[0].Chat
	if chat != "telegram:group/5557" {
		t.Fatalf("the supergroup's message is in %s; want the group's JID telegram:group/5557", chat)
	}
	own := adapters.JID("telegram:group/1009997")
	_, err := a.Send(t.Context(), adapters.Outbound{Chat: own, Text: "under the supergroup's own JID"})
	if !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "telegram:group/5557") {
		t.Errorf("send to %s: %v; want a permanent refusal naming telegram:group/5557", own, err)
	}
	for _, c := range f.Calls("sendMessage") {
		if c.Params["text"] == "under the supergroup's own JID" {
			t.Errorf("sent to the supergroup under its own JID: %v", c.Params)
		}
	}
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: "under the group's JID"}); err != nil {
		t.Errorf("send to %s: %v", chat, err)
	}
	if c := f.Calls("sendMessage"); len(c) == 0 || c[len(c)-1].Params["chat_id"] != "-1009997" {
		t.Errorf("the send under the group's JID went to %v; want the supergroup -1009997", c)
	}
}
