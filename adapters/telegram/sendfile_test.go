package telegram

import (
	"strings"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// A file's caption is Markdown like any reply: when Telegram cannot parse
// its HTML rendering, the file goes again with the caption as plain text,
// rather than the file failing for good.
func TestSendFileCaptionFallsBackToPlainText(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	f.RejectFormatting()
	id, err := a.SendFile(t.Context(), adapters.Outbound{Chat: groupChat, Text: "the **weekly** report"},
		adapters.File{Name: "r.pdf", MIME: "application/pdf", Size: 9, Content: strings.NewReader("%PDF-1.7!")})
	if err != nil || id == "" {
		t.Fatalf("send_file with a caption Telegram refused to parse: id %q, %v; want the file sent with a plain caption", id, err)
	}
	msgs := f.Messages(telegramtest.GroupID)
	last := msgs[len(msgs)-1]
	if last.Text != "the weekly report" || string(last.FileData) != "%PDF-1.7!" {
		t.Errorf("the file as sent: caption %q, data %q; want the plain caption and the whole file", last.Text, last.FileData)
	}
}

// Telegram takes captions of at most 1024 characters. A longer one does
// not fail the file: the file goes without it, and the caption follows as
// messages of its own, in order, in the same topic.
func TestSendFileLongCaptionFollows(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	caption := strings.Repeat("All figures are in euros. ", 60) + "The end."
	id, err := a.SendFile(t.Context(), adapters.Outbound{Chat: groupChat, Topic: "42", Text: caption},
		adapters.File{Name: "c.png", MIME: "image/png", Size: 3, Content: strings.NewReader("PNG")})
	if err != nil || id == "" {
		t.Fatalf("send_file with a %d-character caption: id %q, %v; want the file sent", len(caption), id, err)
	}
	msgs := f.Messages(telegramtest.GroupID)
	var file int = -1
	var text []string
	for i, m := range msgs {
		if m.File == "c.png" {
			file = i
		} else if file >= 0 && m.FromBot {
			text = append(text, m.Text)
			if m.Thread != 42 {
				t.Errorf("a caption part went to topic %d; want 42", m.Thread)
			}
		}
	}
	if file < 0 {
		t.Fatal("the file was not sent")
	}
	if got := strings.Join(text, " "); strings.Join(strings.Fields(got), " ") != strings.TrimSpace(caption) {
		t.Errorf("the caption after the file reads %q; want %q", got, caption)
	}
}

// A reply whose Telegram rendering shows nothing is still delivered: an
// image link without alt text shows its URL (it rendered as an empty
// link), and a reply of bare markup ("#") goes as its text, not refused
// for good as an empty message.
func TestSendNothingShownFallsBack(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	for _, tc := range []struct{ text, want string }{
		{"![](https://x.io/chart.png)", "https://x.io/chart.png"},
		{"see ![](https://x.io/chart.png)", "see https://x.io/chart.png"},
		{"#", "#"},
	} {
		if _, err := a.Send(t.Context(), adapters.Outbound{Chat: groupChat, Text: tc.text}); err != nil {
			t.Errorf("send %q: %v", tc.text, err)
			continue
		}
		msgs := f.Messages(telegramtest.GroupID)
		if got := msgs[len(msgs)-1].Text; got != tc.want {
			t.Errorf("send %q: the chat shows %q; want %q", tc.text, got, tc.want)
		}
	}
}

// An image Telegram will not take as a photo (a long screenshot:
// PHOTO_INVALID_DIMENSIONS, or one over the photo size limit) is sent as
// a document, whole, rather than failing for good.
func TestSendFileRefusedPhotoGoesAsDocument(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	f.RefusePhotos()
	id, err := a.SendFile(t.Context(), adapters.Outbound{Chat: groupChat, Text: "the whole page"},
		adapters.File{Name: "page.png", MIME: "image/png", Size: 8, Content: strings.NewReader("PNG tall")})
	if err != nil || id == "" {
		t.Fatalf("send_file of an image Telegram refuses as a photo: id %q, %v; want it sent as a document", id, err)
	}
	if len(f.Calls("sendDocument")) != 1 {
		t.Errorf("sendDocument calls %d; want 1", len(f.Calls("sendDocument")))
	}
	msgs := f.Messages(telegramtest.GroupID)
	if last := msgs[len(msgs)-1]; last.File != "page.png" || string(last.FileData) != "PNG tall" || last.Text != "the whole page" {
		t.Errorf("sent %q with %q, caption %q; want page.png whole with its caption", last.File, last.FileData, last.Text)
	}
}
