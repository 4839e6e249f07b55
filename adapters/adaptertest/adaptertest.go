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
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
)

// Post is a user's message as the fake platform emits it to the bot.
type Post struct {
	Chat    adapters.JID
	Topic   string // a thread / forum topic of Chat; "" for the main timeline
	Text    string
	Mention bool               // the text addresses the bot the platform's way (@bot, <@U..>)
	ReplyTo adapters.MessageID // platform id of a message this one replies to
	// Attachment, when not empty, is the content of a file attached to the
	// post (named Name), served by the fake for download.
	Attachment     []byte
	AttachmentName string
}

// Message is a message the fake platform holds from the bot, as a user of
// the platform would see it.
type Message struct {
	ID        adapters.MessageID
	Text      string // as the platform shows it: formatting applied, markup gone
	Raw       string // as the adapter sent it (with its markup)
	Topic     string
	ReplyTo   adapters.MessageID
	Deleted   bool
	Pinned    bool
	Reactions []string // emoji the bot added
	File      string   // name of an uploaded file; "" for text
	FileData  []byte
	Buttons   []adapters.Button // the buttons shown under it (Label and Data; Style where the platform keeps it)
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
	UserPosts(t *testing.T, p Post) adapters.MessageID
	// UserEdits, UserDeletes and UserReacts change a user's message (no-ops
	// returning false when the platform does not deliver that event).
	UserEdits(t *testing.T, chat adapters.JID, id adapters.MessageID, text string) bool
	UserDeletes(t *testing.T, chat adapters.JID, id adapters.MessageID) bool
	UserReacts(t *testing.T, chat adapters.JID, id adapters.MessageID, emoji string) bool
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

// FileRateLimiter is implemented by a Platform whose fake file server can
// rate-limit downloads: the next one is answered 429 with a Retry-After of
// wait (whole seconds).
type FileRateLimiter interface {
	RateLimitFiles(wait time.Duration)
}

// LiveWatcher is implemented by a Platform whose adapter is an
// adapters.Streamer: it records a chat as its users see it.
type LiveWatcher interface {
	// WatchLive starts recording chat and returns once it records; shown
	// lists what the chat showed of the bot since, oldest first, as a user
	// sees it (formatting applied, markup gone): each text a live reply
	// showed (a draft; a message as sent and as each edit left it) and each
	// message the bot sent.
	WatchLive(t *testing.T, chat adapters.JID) (shown func() []string)
}

// RateLimitWatcher is implemented by a Platform whose fake rate-limits
// (every platform without Features.NoRateLimits): RateLimited reports when
// the fake last answered a write with the 429 RateLimit asked for, and when
// the next write came (zero: none yet), so the suite sees the 429 reach
// the adapter and the write sent again after the wait.
type RateLimitWatcher interface {
	RateLimited() (at, next time.Time)
}

// Features says what a platform's fake can show; the suite skips what the
// platform does not have, and checks everything it has.
type Features struct {
	// EveryMessageMentions: every message addresses the bot (the web chat),
	// so an unmentioned group message is still verb mention.
	EveryMessageMentions bool
	// Edits, Deletes, Reactions: the platform delivers users' edits,
	// deletes and reactions to the bot.
	Edits, Deletes, Reactions bool
	// NoRateLimits: the platform never answers 429 (the web chat).
	NoRateLimits bool
}

// Featured is implemented by a Platform whose features differ from the
// default (everything but EveryMessageMentions).
type Featured interface {
	Features() Features
}

func features(p Platform) Features {
	if f, ok := p.(Featured); ok {
		return f.Features()
	}
	return Features{Edits: true, Deletes: true, Reactions: true}
}

// Run runs the conformance suite. newPlatform builds a fresh fake per subtest.
func Run(t *testing.T, newPlatform func(t *testing.T) Platform) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, Platform)
	}{
		{"inbound message", testInbound},
		{"direct message is a mention", testDM},
		{"topic", testTopic},
		{"edit, delete, reaction", testUserEvents},
		{"send", testSend},
		{"reply into the topic", testReply},
		{"download", testDownload},
		{"verbs", testVerbs},
		{"longest part accepted", testLongest},
		{"formatting fallback", testFormatFallback},
		{"rate limit", testRateLimit},
		{"reconnect", testReconnect},
		{"no ack before deliver", testNoAckBeforeDeliver},
		{"live reply", testLive},
		{"buttons", testButtons},
		{"live reply past the length limit", testLiveLong},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newPlatform(t)) })
	}
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

func started(t *testing.T, p Platform) (adapters.Adapter, *Host) {
	t.Helper()
	a := p.NewAdapter(t)
	host := NewHost()
	Start(t, a, host)
	return a, host
}

// waitEvent waits for the first delivered event that matches.
func waitEvent(t *testing.T, host *Host, what string, match func(adapters.Inbound) bool) adapters.Inbound {
	t.Helper()
	var found adapters.Inbound
	host.Wait(t, 10*time.Second, what, func(h *Host) bool {
		for _, ev := range h.Events() {
			if match(ev) {
				found = ev
				return true
			}
		}
		return false
	})
	return found
}

// testDownload: a file a user posts is fetched by the adapter's Download;
// a file server's 429 is a RetryAfterError waiting what its Retry-After
// says, with no URL (it may hold a token) in the error, and the next try
// gets the file. Adapters that download nothing skip it.
func testDownload(t *testing.T, p Platform) {
	a, host := started(t, p)
	dl, ok := a.(adapters.Downloader)
	if !ok {
		t.Skip("the adapter downloads no files")
	}
	chat, _ := p.Group()
	const content = "panic: at the disco"
	p.UserPosts(t, Post{Chat: chat, Text: "see the log", Mention: true, Attachment: []byte(content), AttachmentName: "log.txt"})
	ev := waitEvent(t, host, "the post with a file", func(ev adapters.Inbound) bool { return len(ev.Attachments) == 1 })
	if rl, ok := p.(FileRateLimiter); ok {
		rl.RateLimitFiles(7 * time.Second)
		_, err := dl.Download(t.Context(), ev.Attachments[0])
		var ra *adapters.RetryAfterError
		if !errors.As(err, &ra) || ra.Wait != 7*time.Second {
			t.Fatalf("rate-limited download: %v; want a RetryAfterError of 7s", err)
		}
		if strings.Contains(err.Error(), "://") {
			t.Errorf("the error shows a URL: %v", err)
		}
	}
	rc, err := dl.Download(t.Context(), ev.Attachments[0])
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(b) != content {
		t.Errorf("downloaded %q (%v); want %q", b, err, content)
	}
}

func testInbound(t *testing.T, p Platform) {
	a, host := started(t, p)
	chat, _ := p.Group()
	id := p.UserPosts(t, Post{Chat: chat, Text: "hello there", Mention: true})
	ev := waitEvent(t, host, "the mention", func(ev adapters.Inbound) bool { return ev.ID == id })
	if ev.Chat != chat || !strings.Contains(ev.Text, "hello there") || ev.Verb != adapters.VerbMention || ev.FromBot || ev.OtherBot {
		t.Errorf("delivered %+v; want chat %s, text \"hello there\", verb mention, from a user", ev, chat)
	}
	if ev.Sender == "" || ev.Sender.Platform() != a.Name() || ev.Time.IsZero() {
		t.Errorf("sender %q, time %v: want a %s JID and the message's time", ev.Sender, ev.Time, a.Name())
	}
	id2 := p.UserPosts(t, Post{Chat: chat, Text: "just chatting"})
	ev2 := waitEvent(t, host, "the plain message", func(ev adapters.Inbound) bool { return ev.ID == id2 })
	want := adapters.VerbMessage
	if features(p).EveryMessageMentions {
		want = adapters.VerbMention
	}
	if ev2.Verb != want {
		t.Errorf("a message that does not address the bot has verb %q; want %q", ev2.Verb, want)
	}
}

func testDM(t *testing.T, p Platform) {
	dm := p.DM()
	if dm == "" {
		t.Skip("the platform has no direct messages")
	}
	_, host := started(t, p)
	id := p.UserPosts(t, Post{Chat: dm, Text: "psst"})
	if ev := waitEvent(t, host, "the DM", func(ev adapters.Inbound) bool { return ev.ID == id }); ev.Verb != adapters.VerbMention || ev.Chat != dm {
		t.Errorf("DM delivered as %+v; want verb mention in %s", ev, dm)
	}
}

func testTopic(t *testing.T, p Platform) {
	chat, topic := p.Group()
	if topic == "" {
		t.Skip("the platform has no threads or topics")
	}
	_, host := started(t, p)
	id := p.UserPosts(t, Post{Chat: chat, Topic: topic, Text: "in the thread", Mention: true})
	if ev := waitEvent(t, host, "the thread message", func(ev adapters.Inbound) bool { return ev.ID == id }); ev.Chat != chat || ev.Topic != topic {
		t.Errorf("thread message delivered in %s topic %q; want %s topic %q", ev.Chat, ev.Topic, chat, topic)
	}
}

func testUserEvents(t *testing.T, p Platform) {
	f := features(p)
	if !f.Edits && !f.Deletes && !f.Reactions {
		t.Skip("the platform delivers no edits, deletes or reactions")
	}
	_, host := started(t, p)
	chat, _ := p.Group()
	id := p.UserPosts(t, Post{Chat: chat, Text: "first draft", Mention: true})
	waitEvent(t, host, "the message", func(ev adapters.Inbound) bool { return ev.ID == id })
	kindOf := func(k adapters.Kind) func(adapters.Inbound) bool {
		return func(ev adapters.Inbound) bool { return ev.Kind == k && ev.ID == id && ev.Chat == chat }
	}
	if f.Edits && p.UserEdits(t, chat, id, "second draft") {
		if ev := waitEvent(t, host, "the edit", kindOf(adapters.KindEdit)); !strings.Contains(ev.Text, "second draft") {
			t.Errorf("edit delivered with text %q", ev.Text)
		}
	}
	if f.Reactions && p.UserReacts(t, chat, id, "👍") {
		if ev := waitEvent(t, host, "the reaction", kindOf(adapters.KindReaction)); ev.Reaction == "" || ev.Sender == "" {
			t.Errorf("reaction delivered as %+v; want an emoji and a sender", ev)
		}
	}
	if f.Deletes && p.UserDeletes(t, chat, id) {
		waitEvent(t, host, "the delete", kindOf(adapters.KindDelete))
	}
}

func testSend(t *testing.T, p Platform) {
	a, _ := started(t, p)
	chat, _ := p.Group()
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: "**done**: all good", Key: "k1"})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	msgs := p.BotMessages(chat)
	if len(msgs) != 1 || msgs[0].ID != id || !strings.Contains(msgs[0].Text, "done: all good") || strings.Contains(msgs[0].Text, "**") {
		t.Errorf("platform holds %+v; want one message %q reading \"done: all good\" (formatting rendered)", msgs, id)
	}
}

func testReply(t *testing.T, p Platform) {
	a, host := started(t, p)
	chat, topic := p.Group()
	uid := p.UserPosts(t, Post{Chat: chat, Topic: topic, Text: "question?", Mention: true})
	waitEvent(t, host, "the question", func(ev adapters.Inbound) bool { return ev.ID == uid })
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Topic: topic, ReplyTo: uid, Text: "answer", Key: "r1"})
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	msgs := p.BotMessages(chat)
	if len(msgs) != 1 || msgs[0].ID != id || msgs[0].Topic != topic {
		t.Fatalf("platform holds %+v; want the reply in topic %q", msgs, topic)
	}
	if msgs[0].ReplyTo != "" && msgs[0].ReplyTo != uid {
		t.Errorf("reply refers to %q; want %q", msgs[0].ReplyTo, uid)
	}
}

func testVerbs(t *testing.T, p Platform) {
	a, _ := started(t, p)
	chat, _ := p.Group()
	ctx := t.Context()
	id, err := a.Send(ctx, adapters.Outbound{Chat: chat, Text: "status: pending", Key: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	ref := adapters.MessageRef{Chat: chat, ID: id}
	bot := func() Message {
		for _, m := range p.BotMessages(chat) {
			if m.ID == id {
				return m
			}
		}
		t.Fatalf("message %s is gone from the platform", id)
		return Message{}
	}
	if e, ok := a.(adapters.Editor); ok {
		if err := e.Edit(ctx, ref, "status: _done_"); err != nil {
			t.Errorf("edit: %v", err)
		} else if m := bot(); !strings.Contains(m.Text, "status: done") {
			t.Errorf("after edit the message reads %q", m.Text)
		}
	}
	if r, ok := a.(adapters.Reactor); ok {
		if err := r.React(ctx, ref, "👍"); err != nil {
			t.Errorf("react: %v", err)
		} else if m := bot(); len(m.Reactions) != 1 {
			t.Errorf("after react the message has reactions %q", m.Reactions)
		}
	}
	if pn, ok := a.(adapters.Pinner); ok {
		if err := pn.Pin(ctx, ref); err != nil || !bot().Pinned {
			t.Errorf("pin: %v, pinned %v", err, bot().Pinned)
		}
		if err := pn.Unpin(ctx, ref); err != nil || bot().Pinned {
			t.Errorf("unpin: %v, pinned %v", err, bot().Pinned)
		}
	}
	if fs, ok := a.(adapters.FileSender); ok {
		fid, err := fs.SendFile(ctx, adapters.Outbound{Chat: chat, Text: "the report", Key: "f1"},
			adapters.File{Name: "report.txt", MIME: "text/plain", Size: 9, Content: strings.NewReader("all green")})
		if err != nil {
			t.Errorf("send file: %v", err)
		} else {
			var got Message
			for _, m := range p.BotMessages(chat) {
				if m.ID == fid {
					got = m
				}
			}
			if got.File != "report.txt" || string(got.FileData) != "all green" {
				t.Errorf("uploaded file %q with %q; want report.txt with \"all green\"", got.File, got.FileData)
			}
		}
	}
	if d, ok := a.(adapters.Deleter); ok {
		if err := d.Delete(ctx, ref); err != nil || !bot().Deleted {
			t.Errorf("delete: %v, deleted %v", err, bot().Deleted)
		}
	}
}

func testLongest(t *testing.T, p Platform) {
	a, _ := started(t, p)
	l, ok := a.(adapters.Limiter)
	if !ok || l.Limits().MaxText == 0 {
		t.Skip("the platform declares no length limit")
	}
	max := l.Limits().MaxText
	chat, _ := p.Group()
	text := strings.Repeat("long message ", max)
	parts := adapters.SplitRendered(text, max, l.Limits().Measure)
	for i, part := range parts {
		if _, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: part, Key: fmt.Sprint("long/", i)}); err != nil {
			t.Fatalf("part %d of %d (%d units, limit %d) refused: %v", i+1, len(parts), adapters.UTF16Len(part), max, err)
		}
	}
	if n := len(p.BotMessages(chat)); n != len(parts) {
		t.Errorf("platform holds %d messages; want the %d parts", n, len(parts))
	}
}

func testFormatFallback(t *testing.T, p Platform) {
	a, _ := started(t, p)
	chat, _ := p.Group()
	p.RejectFormatting()
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: "**bold** claim (with parens) and [a link](https://example.com)", Key: "fmt"}); err != nil {
		t.Fatalf("send after the platform refused the formatting: %v", err)
	}
	msgs := p.BotMessages(chat)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "bold claim (with parens)") {
		t.Errorf("platform holds %+v; want the message as plain text", msgs)
	}
}

func testRateLimit(t *testing.T, p Platform) {
	a, _ := started(t, p)
	chat, _ := p.Group()
	const wait = 50 * time.Millisecond
	p.RateLimit(wait)
	var err error
	for try := 0; try < 5; try++ {
		_, err = a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: "after the limit", Key: "rl"})
		var ra *adapters.RetryAfterError
		if !errors.As(err, &ra) {
			break
		}
		if ra.Wait < wait {
			t.Errorf("RetryAfterError asks for %s; the platform said %s", ra.Wait, wait)
		}
		time.Sleep(ra.Wait)
	}
	if err != nil {
		t.Fatalf("send after a rate limit: %v", err)
	}
	if n := len(p.BotMessages(chat)); n != 1 {
		t.Errorf("platform holds %d copies; want exactly one", n)
	}
}

func testReconnect(t *testing.T, p Platform) {
	_, host := started(t, p)
	chat, _ := p.Group()
	p.Disconnect()
	id := p.UserPosts(t, Post{Chat: chat, Text: "after the drop", Mention: true})
	waitEvent(t, host, "the message posted after the connection dropped", func(ev adapters.Inbound) bool { return ev.ID == id })
	host.Wait(t, 10*time.Second, "connected again", func(h *Host) bool {
		st, _ := h.States()
		return len(st) > 0 && st[len(st)-1] == adapters.StateConnected
	})
}

func testNoAckBeforeDeliver(t *testing.T, p Platform) {
	a := p.NewAdapter(t)
	host := NewHost()
	var failed atomicBool
	host.DeliverFunc = func(_ context.Context, m adapters.Inbound) (int64, error) {
		if strings.Contains(m.Text, "must survive") && failed.setOnce() {
			return 0, errors.New("store unavailable")
		}
		return 0, nil
	}
	Start(t, a, host)
	chat, _ := p.Group()
	id := p.UserPosts(t, Post{Chat: chat, Text: "this must survive", Mention: true})
	waitEvent(t, host, "the message delivered again after the first delivery failed", func(ev adapters.Inbound) bool { return ev.ID == id })
}

// atomicBool is set once; setOnce reports whether this call set it.
type atomicBool struct {
	mu  sync.Mutex
	set bool
}

func (b *atomicBool) setOnce() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	was := b.set
	b.set = true
	return !was
}
