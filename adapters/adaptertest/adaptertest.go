// Package adaptertest is the conformance suite every platform adapter passes
// against its own fake platform server (an httptest server that the
// adapter's real SDK talks to), plus Host, an in-memory adapters.Host for
// adapter tests. It is imported by tests only.
//
// A platform package implements Platform over its fake server and calls Run
// from a test:
//
//	func TestConformance(t *testing.T) { adaptertest.Run(t, newFakePlatform) }
package adaptertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
)

// Post is a user's message as the fake platform emits it to the bot.
type Post struct {
	Chat    adapters.JID
	Topic   string // a thread / forum topic of Chat; "" for the main timeline
	Text    string
	Mention bool   // the text addresses the bot the platform's way (@bot, <@U..>)
	ReplyTo string // platform id of a message this one replies to
	// Attachment, when not empty, is the content of a file attached to the
	// post (named Name), served by the fake for download.
	Attachment     []byte
	AttachmentName string
}

// Message is a message the fake platform holds from the bot, as a user of
// the platform would see it.
type Message struct {
	ID        string
	Text      string // as the platform shows it: formatting applied, markup gone
	Raw       string // as the adapter sent it (with its markup)
	Topic     string
	ReplyTo   string
	Deleted   bool
	Pinned    bool
	Reactions []string // emoji the bot added
	File      string   // name of an uploaded file; "" for text
	FileData  []byte
}

// Platform is a fake platform server for one test: New returns a fresh one
// (the suite calls it once per subtest, so state never leaks between them).
// Methods that change the fake fail t on error. Each must be safe to call
// while the adapter runs.
type Platform interface {
	// NewAdapter returns a new adapter, configured to talk to this fake,
	// not yet running.
	NewAdapter(t *testing.T) adapters.Adapter
	// Group is a chat with several users where the bot must be mentioned;
	// Topic is a thread or forum topic in it ("" when the platform has none).
	Group() (chat adapters.JID, topic string)
	// DM is a direct chat with the bot ("" when the platform has none).
	DM() adapters.JID
	// UserPosts makes a user post p; it returns the platform message id.
	UserPosts(t *testing.T, p Post) string
	// UserEdits, UserDeletes and UserReacts change a user's message (no-ops
	// returning false when the platform does not deliver that event).
	UserEdits(t *testing.T, chat adapters.JID, id, text string) bool
	UserDeletes(t *testing.T, chat adapters.JID, id string) bool
	UserReacts(t *testing.T, chat adapters.JID, id, emoji string) bool
	// BotMessages lists what the platform holds from the bot in chat, oldest first.
	BotMessages(chat adapters.JID) []Message
	// RateLimit makes the platform answer the bot's next write with a rate
	// limit (HTTP 429) asking it to wait wait.
	RateLimit(wait time.Duration)
	// RejectFormatting makes the platform refuse the bot's next formatted
	// message as unparsable, the way the real one does.
	RejectFormatting()
	// Disconnect drops the adapter's live connection (websocket, long poll)
	// once; the platform keeps events that happen meanwhile.
	Disconnect()
}

// Run runs the conformance suite. newPlatform builds a fresh fake per subtest.
func Run(t *testing.T, newPlatform func(t *testing.T) Platform) {
	t.Run("inbound message", func(t *testing.T) { testInbound(t, newPlatform(t)) })
	t.Run("send", func(t *testing.T) { testSend(t, newPlatform(t)) })
}

// Start runs a's Run in the background with host until the test ends, and
// waits until it reports StateConnected.
func Start(t *testing.T, a adapters.Adapter, host *Host) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, host) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("%s: Run returned %v after cancel", a.Name(), err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: Run did not return within 10s of cancel", a.Name())
		}
	})
	host.Wait(t, 10*time.Second, a.Name()+" connected", func(h *Host) bool {
		st, _ := h.States()
		return len(st) > 0 && st[len(st)-1] == adapters.StateConnected
	})
}

func testInbound(t *testing.T, p Platform) {
	a := p.NewAdapter(t)
	host := NewHost()
	Start(t, a, host)
	chat, _ := p.Group()
	id := p.UserPosts(t, Post{Chat: chat, Text: "hello there", Mention: true})
	ev := host.WaitEvents(t, 1)[0]
	if ev.Chat != chat || ev.ID != id || !strings.Contains(ev.Text, "hello there") || ev.Verb != adapters.VerbMention {
		t.Errorf("delivered %+v; want chat %s id %s text \"hello there\" verb mention", ev, chat, id)
	}
	if ev.Sender == "" || ev.Sender.Platform() != a.Name() {
		t.Errorf("sender %q is not a %s JID", ev.Sender, a.Name())
	}
}

func testSend(t *testing.T, p Platform) {
	a := p.NewAdapter(t)
	host := NewHost()
	Start(t, a, host)
	chat, _ := p.Group()
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: "**done**: all good", Key: "k1"})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	msgs := p.BotMessages(chat)
	if len(msgs) != 1 || msgs[0].ID != id || !strings.Contains(msgs[0].Text, "done: all good") {
		t.Errorf("platform holds %+v; want one message %q reading \"done: all good\"", msgs, id)
	}
}
