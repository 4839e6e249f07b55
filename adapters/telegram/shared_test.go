package telegram

import (
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// What a person shares without text in a private chat (a round video
// message, a location, a venue, a contact, a poll, a die) reaches the
// gateway: the video as an attachment with its file id as reference, the
// rest as a short text. Before, each was dropped as a service message and
// the bot ignored the person.
func TestSharedItemsDelivered(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host)
	push := func(key string, v any) {
		m, _ := f.UserMessage(7, "", false, 0, 0)
		delete(m, "text")
		m[key] = v
		f.Push("message", m)
	}
	push("video_note", map[string]any{"file_id": "vn1", "file_unique_id": "u", "length": 240, "duration": 3, "file_size": 4096})
	push("location", map[string]any{"latitude": 52.52, "longitude": 13.405})
	push("contact", map[string]any{"phone_number": "+4930123", "first_name": "Bo"})
	push("poll", map[string]any{"id": "p", "question": "Lunch?", "options": []any{}})
	push("dice", map[string]any{"emoji": "🎲", "value": 4})
	m, _ := f.UserMessage(7, "", false, 0, 0)
	delete(m, "text")
	m["location"] = map[string]any{"latitude": 1.5, "longitude": 2.5}
	m["venue"] = map[string]any{"location": m["location"], "title": "Cafe", "address": "Main St 1"}
	f.Push("message", m)

	evs := host.WaitEvents(t, 6)
	if e := evs[0]; len(e.Attachments) != 1 || e.Attachments[0].Ref != "vn1" || e.Attachments[0].MIME != "video/mp4" || e.Attachments[0].Size != 4096 {
		t.Errorf("a round video message: %+v; want one video/mp4 attachment with reference vn1", e)
	}
	want := []string{"[location 52.520000, 13.405000]", "[contact Bo +4930123]", "[poll Lunch?]", "[dice 🎲 4]", "[venue Cafe, Main St 1 (1.500000, 2.500000)]"}
	for i, w := range want {
		if got := evs[i+1].Text; got != w {
			t.Errorf("shared item %d: text %q; want %q", i+1, got, w)
		}
	}
}

// like with an emoji's shortcode (":thumbsup:", "fire"), as Slack names
// reactions, reacts with the emoji on Telegram, which takes emoji only.
func TestLikeWithAShortcode(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: groupChat, Text: "deployed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ reaction, want string }{{":thumbsup:", "👍"}, {"fire", "🔥"}, {"+1", "👍"}} {
		if err := a.React(t.Context(), adapters.MessageRef{Chat: groupChat, ID: id}, tc.reaction); err != nil {
			t.Errorf("like %q: %v", tc.reaction, err)
			continue
		}
		c := f.Calls("setMessageReaction")
		if got := c[len(c)-1].Params["reaction"]; !strings.Contains(got, tc.want) {
			t.Errorf("like %q: sent reaction %s; want %s", tc.reaction, got, tc.want)
		}
	}
}

// A forwarded message says so, and whose it was: the agent must not take
// another's words (or a forwarded "/stop") for the sender's own. A
// channel's post mirrored into its discussion group is no forward.
func TestForwardSaysSo(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host)
	m, _ := f.UserMessage(7, "the build is green", false, 0, 0)
	m["forward_origin"] = map[string]any{"type": "user", "date": 1, "sender_user": map[string]any{"id": 8, "is_bot": false, "first_name": "Bo"}}
	f.Push("message", m)
	m, _ = f.UserMessage(7, "/stop", false, 0, 0)
	m["forward_origin"] = map[string]any{"type": "channel", "date": 1, "chat": map[string]any{"id": -100777, "type": "channel", "title": "News"}, "message_id": 3}
	f.Push("message", m)
	// A forwarded photo without a caption: the note alone, no trailing space.
	m, _ = f.UserMessage(7, "", false, 0, 0)
	delete(m, "text")
	m["photo"] = []map[string]any{{"file_id": "ph1", "file_unique_id": "u1", "width": 10, "height": 10, "file_size": 4}}
	m["forward_origin"] = map[string]any{"type": "user", "date": 1, "sender_user": map[string]any{"id": 8, "is_bot": false, "first_name": "Bo"}}
	f.Push("message", m)
	evs := host.WaitEvents(t, 3)
	if got, want := evs[2].Text, "[forwarded from Bo]"; got != want || len(evs[2].Attachments) != 1 {
		t.Errorf("a forwarded photo reads %q with %d files; want %q and the photo", got, len(evs[2].Attachments), want)
	}
	if got, want := evs[0].Text, "[forwarded from Bo] the build is green"; got != want {
		t.Errorf("a forwarded message reads %q; want %q", got, want)
	}
	if got, want := evs[1].Text, "[forwarded from News] /stop"; got != want {
		t.Errorf("a forwarded post reads %q; want %q", got, want)
	}
}
