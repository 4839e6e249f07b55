package discord

import (
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// TestSendWithALostAnswerPostsOnce: a message post whose answer is lost
// (Discord created it, its edge answered 502) is sent again, by discordgo
// and then by the outbox, each time with the part's idempotency key as an
// enforced nonce: the channel shows the reply once, not once per retry,
// and Send returns its id. Another key posts the same text again.
func TestSendWithALostAnswerPostsOnce(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	ctx := t.Context()
	key := "t-01JCZQ8V6X1S2M3N4P5Q6R7S8T/reply/2" // longer than a nonce may be
	f.LoseAnswers(1)
	id, err := a.Send(ctx, adapters.Outbound{Chat: channelChat, Text: "the answer", Key: key})
	if err != nil {
		t.Fatalf("send after a lost answer: %v", err)
	}
	// Every answer lost: discordgo gives up, the outbox sends the part again.
	f.LoseAnswers(10)
	if _, err := a.Send(ctx, adapters.Outbound{Chat: channelChat, Text: "second answer", Key: "k2"}); err == nil {
		t.Fatal("send with every answer lost succeeded")
	}
	f.LoseAnswers(0)
	id2, err := a.Send(ctx, adapters.Outbound{Chat: channelChat, Text: "second answer", Key: "k2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(ctx, adapters.Outbound{Chat: channelChat, Text: "the answer", Key: key + "x"}); err != nil {
		t.Fatal(err)
	}
	var texts, ids []string
	for _, m := range f.Messages(discordtest.Channel) {
		texts, ids = append(texts, m.Content), append(ids, m.ID)
	}
	if got := strings.Join(texts, " | "); got != "the answer | second answer | the answer" {
		t.Fatalf("the channel shows %q; want each part once per key", got)
	}
	if string(id) != ids[0] || string(id2) != ids[1] {
		t.Errorf("Send returned %s and %s; want the ids of the messages shown (%v)", id, id2, ids)
	}
}

// TestSendFileWithALostAnswerPostsOnce: as a text part, a file whose post
// lost its answer is shown once, and SendFile returns its message's id.
func TestSendFileWithALostAnswerPostsOnce(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	f.LoseAnswers(1)
	id, err := a.SendFile(t.Context(), adapters.Outbound{Chat: channelChat, Text: "the report", Key: "t-1/file"},
		adapters.File{Name: "report.txt", MIME: "text/plain", Size: 5, Content: strings.NewReader("hello")})
	if err != nil {
		t.Fatalf("send a file after a lost answer: %v", err)
	}
	ms := f.Messages(discordtest.Channel)
	if len(ms) != 1 || ms[0].File != "report.txt" || string(ms[0].FileData) != "hello" || ms[0].ID != string(id) {
		t.Errorf("the channel shows %+v; want the file once, with id %s", ms, id)
	}
}
