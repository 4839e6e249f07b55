package discord

import (
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// Discord takes at most 2000 characters with a file. A longer caption does
// not fail the file: the file goes without it, and the caption follows as
// messages of their own, in order, in the same thread.
func TestSendFileLongCaptionFollows(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	caption := strings.Repeat("All figures are in euros. ", 100) + "The end."
	id, err := a.SendFile(t.Context(), adapters.Outbound{Chat: channelChat, Topic: discordtest.Thread, Text: caption},
		adapters.File{Name: "c.png", MIME: "image/png", Size: 3, Content: strings.NewReader("PNG")})
	if err != nil || id == "" {
		t.Fatalf("send_file with a %d-character caption: id %q, %v; want the file sent", len(caption), id, err)
	}
	msgs := f.Messages(discordtest.Thread)
	file := -1
	var text []string
	for i, m := range msgs {
		switch {
		case m.File == "c.png":
			file = i
			if string(m.FileData) != "PNG" {
				t.Errorf("the file as sent: %q", m.FileData)
			}
		case file >= 0 && m.AuthorID == discordtest.BotID:
			text = append(text, m.Content)
		}
	}
	if file < 0 {
		t.Fatal("the file was not sent into the thread")
	}
	if got := strings.Join(text, " "); strings.Join(strings.Fields(got), " ") != strings.TrimSpace(caption) {
		t.Errorf("the caption after the file reads %q; want %q", got, caption)
	}
}
