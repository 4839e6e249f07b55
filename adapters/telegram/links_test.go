package telegram

import (
	"testing"

	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// A word a person linked (Telegram's text_link: the URL is not in the
// text) keeps its URL in what the agent reads; in a caption too, after an
// emoji (entity offsets count UTF-16 units). Before, the URL was lost and
// "read the docs" reached the agent without the docs.
func TestTextLinksKeepTheirURL(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host)
	m, _ := f.UserMessage(7, "read the docs please", false, 0, 0)
	m["entities"] = []map[string]any{{"type": "text_link", "offset": 9, "length": 4, "url": "https://example.com/docs"}}
	f.Push("message", m)
	m, _ = f.UserMessage(7, "", false, 0, 0)
	delete(m, "text")
	m["caption"] = "🎉 release notes and https://x.io"
	m["caption_entities"] = []map[string]any{
		{"type": "text_link", "offset": 3, "length": 7, "url": "https://example.com/notes"},
		{"type": "url", "offset": 21, "length": 12},
		{"type": "text_link", "offset": 21, "length": 12, "url": "https://x.io"},
	}
	m["document"] = map[string]any{"file_id": "d1", "file_name": "notes.pdf"}
	f.Push("message", m)
	evs := host.WaitEvents(t, 2)
	if got, want := evs[0].Text, "read the docs (https://example.com/docs) please"; got != want {
		t.Errorf("a linked word reads %q; want %q", got, want)
	}
	if got, want := evs[1].Text, "🎉 release (https://example.com/notes) notes and https://x.io"; got != want {
		t.Errorf("a caption with a linked word reads %q; want %q", got, want)
	}
}
