package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testwait"
)

var (
	groupChat = adapters.JID("telegram:group/1001234")
	dmChat    = adapters.JID("telegram:user/7")
)

func newAdapter(f *telegramtest.Server, log *slog.Logger) *Adapter {
	return New(Options{Token: telegramtest.Token, APIURL: f.URL(), Logger: log, PollTimeout: 2 * time.Second, PerChat: -1, PerGroup: -1, Global: -1})
}

// fakePlatform is the fake Telegram as the conformance suite sees it.
type fakePlatform struct{ f *telegramtest.Server }

func (p fakePlatform) NewAdapter(t *testing.T) adapters.Adapter { return newAdapter(p.f, nil) }
func (p fakePlatform) Features() adaptertest.Features {
	return adaptertest.Features{Edits: true, Reactions: true} // Telegram tells bots of no deletes
}
func (p fakePlatform) Group() (adapters.JID, string) { return groupChat, "42" }
func (p fakePlatform) DM() adapters.JID              { return dmChat }

func chatOf(jid adapters.JID) int64 {
	if jid == dmChat {
		return telegramtest.UserID
	}
	return telegramtest.GroupID
}

func (p fakePlatform) UserPosts(t *testing.T, post adaptertest.Post) adapters.MessageID {
	m, id := p.f.UserMessage(chatOf(post.Chat), post.Text, post.Mention, atoi(post.Topic), atoi(post.ReplyTo))
	if post.Attachment != nil {
		fileID := fmt.Sprintf("file%d", id)
		p.f.AddFile(fileID, post.Attachment)
		m["document"] = map[string]any{"file_id": fileID, "file_name": post.AttachmentName, "file_size": len(post.Attachment)}
	}
	p.f.Push("message", m)
	return messageID(id)
}

func (p fakePlatform) UserEdits(t *testing.T, chat adapters.JID, id adapters.MessageID, text string) bool {
	m, _ := p.f.UserMessage(chatOf(chat), text, false, 0, 0)
	m["message_id"], m["edit_date"] = atoi(id), time.Now().Unix()
	p.f.Push("edited_message", m)
	return true
}

func (p fakePlatform) UserDeletes(*testing.T, adapters.JID, adapters.MessageID) bool { return false }

func (p fakePlatform) UserReacts(t *testing.T, chat adapters.JID, id adapters.MessageID, emoji string) bool {
	p.f.Push("message_reaction", map[string]any{"chat": telegramtest.ChatObj(chatOf(chat)), "message_id": atoi(id), "date": time.Now().Unix(),
		"user":         map[string]any{"id": telegramtest.UserID, "is_bot": false, "first_name": "Ann"},
		"old_reaction": []any{}, "new_reaction": []any{map[string]any{"type": "emoji", "emoji": emoji}}})
	return true
}

func (p fakePlatform) BotMessages(chat adapters.JID) []adaptertest.Message {
	var out []adaptertest.Message
	for _, m := range p.f.Messages(chatOf(chat)) {
		if !m.FromBot {
			continue
		}
		msg := adaptertest.Message{ID: messageID(m.ID), Text: m.Text, Raw: m.Raw, Deleted: m.Deleted, Pinned: m.Pinned,
			Reactions: m.Reactions, File: m.File, FileData: m.FileData}
		for _, b := range m.Buttons {
			msg.Buttons = append(msg.Buttons, adapters.Button{Label: b.Text, Data: b.Data, Style: adapters.ButtonStyle(b.Style)})
		}
		if m.Thread != 0 {
			msg.Topic = strconv.Itoa(m.Thread)
		}
		if m.ReplyTo != 0 {
			msg.ReplyTo = messageID(m.ReplyTo)
		}
		out = append(out, msg)
	}
	return out
}

func (p fakePlatform) UserPresses(t *testing.T, chat adapters.JID, id adapters.MessageID, data string) string {
	return p.f.WaitAnswered(t, p.f.Press(chatOf(chat), atoi(id), data))
}

func (p fakePlatform) RateLimitFiles(wait time.Duration) { p.f.RateLimitFiles(wait) }

func (p fakePlatform) RateLimit(wait time.Duration)      { p.f.RateLimit(wait) }
func (p fakePlatform) RateLimited() (at, next time.Time) { return p.f.RateLimited() }

func (p fakePlatform) RejectFormatting() {
	p.f.RejectFormatting()
}

func (p fakePlatform) Disconnect() {
	p.f.Drop()
}

// WatchLive records what the fake chat shows of the bot from now on.
func (p fakePlatform) WatchLive(t *testing.T, chat adapters.JID) func() []string {
	from := len(p.f.Shown(chatOf(chat)))
	return func() []string { return p.f.Shown(chatOf(chat))[from:] }
}

func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adaptertest.Platform { return fakePlatform{telegramtest.New(t)} })
}

func start(t *testing.T, f *telegramtest.Server, host *adaptertest.Host) *Adapter {
	t.Helper()
	a := newAdapter(f, nil)
	adaptertest.Start(t, a, host)
	return a
}

// Normalization of what a Telegram group, forum and private chat send.
func TestInboundNormalization(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host)
	if self, ok := a.Self(); !ok || self != "telegram:user/999" {
		t.Errorf("Self = %q, %v", self, ok)
	}
	if f.WebhookSet() {
		t.Error("the stale webhook was not deleted")
	}
	// A reply to the bot's message is a mention, without naming it.
	botID, err := a.Send(t.Context(), adapters.Outbound{Chat: groupChat, Text: "hi all"})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := f.UserMessage(telegramtest.GroupID, "thanks", false, 0, atoi(botID))
	f.Push("message", m)
	// A command addressed to the bot.
	m, _ = f.UserMessage(telegramtest.GroupID, "/status@"+telegramtest.BotName, false, 0, 0)
	m["entities"] = []map[string]any{{"type": "bot_command", "offset": 0, "length": len("/status@" + telegramtest.BotName)}}
	f.Push("message", m)
	// A mention in a photo caption, in a forum topic.
	m, _ = f.UserMessage(telegramtest.GroupID, "look", true, 42, 0)
	m["caption"], m["caption_entities"], m["entities"] = m["text"], m["entities"], nil
	delete(m, "text")
	m["photo"] = []map[string]any{{"file_id": "small", "file_size": 10}, {"file_id": "big", "file_size": 999}}
	f.Push("message", m)
	// A document and a sticker from another bot.
	m, _ = f.UserMessage(telegramtest.GroupID, "", false, 0, 0)
	m["document"] = map[string]any{"file_id": "doc1", "file_name": "report.pdf", "mime_type": "application/pdf", "file_size": 1234}
	m["from"] = map[string]any{"id": 55, "is_bot": true, "first_name": "OtherBot"}
	f.Push("message", m)
	m, _ = f.UserMessage(telegramtest.GroupID, "", false, 0, 0)
	m["sticker"] = map[string]any{"file_id": "st", "emoji": "😀"}
	f.Push("message", m)

	evs := host.WaitEvents(t, 5)
	if evs[0].Verb != adapters.VerbMention || evs[0].ReplyTo != botID {
		t.Errorf("a reply to the bot: %+v; want a mention replying to %s", evs[0], botID)
	}
	if evs[1].Verb != adapters.VerbMention {
		t.Errorf("/status@bot: verb %q", evs[1].Verb)
	}
	if e := evs[2]; e.Verb != adapters.VerbMention || e.Topic != "42" || !strings.Contains(e.Text, "look") ||
		len(e.Attachments) != 1 || e.Attachments[0].Ref != "big" || strings.Contains(e.Attachments[0].Ref, "http") {
		t.Errorf("captioned photo in a topic: %+v", e)
	}
	if e := evs[3]; !e.OtherBot || len(e.Attachments) != 1 || e.Attachments[0].Name != "report.pdf" || e.Attachments[0].MIME != "application/pdf" {
		t.Errorf("another bot's document: %+v", e)
	}
	if e := evs[4]; e.Text != "[sticker 😀]" || e.Verb != adapters.VerbMessage {
		t.Errorf("sticker: %+v", e)
	}
	if e := evs[0]; e.Chat != groupChat || e.Sender != "telegram:user/7" || e.SenderName != "Ann" || e.ChatName != "Ops" {
		t.Errorf("identity of the group message: %+v", e)
	}
}

// A reply to the bot's message in a supergroup without topics (or in a
// forum's General topic) carries the replied-to message's id as its
// message_thread_id (the reply thread's root), without is_topic_message:
// it is still a reply to the bot, so a mention, and it has no topic. Only
// a forum topic's root (the topic's creation) is not a reply.
func TestReplyToBotInReplyThread(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host)
	botID, err := a.Send(t.Context(), adapters.Outbound{Chat: groupChat, Text: "the nightly build failed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, forum := range []bool{false, true} {
		m, _ := f.UserMessage(telegramtest.GroupID, "why?", false, 0, atoi(botID))
		m["message_thread_id"] = atoi(botID) // as Telegram sends it; no is_topic_message
		chat := telegramtest.ChatObj(telegramtest.GroupID)
		chat["is_forum"] = forum
		m["chat"] = chat
		f.Push("message", m)
	}
	// In a topic whose first message is the bot's, every message replies to
	// that one: neither a reply nor a mention.
	m, _ := f.UserMessage(telegramtest.GroupID, "in the topic", false, atoi(botID), atoi(botID))
	f.Push("message", m)
	evs := host.WaitEvents(t, 3)
	for i, e := range evs[:2] {
		if e.Verb != adapters.VerbMention || e.ReplyTo != botID || e.Topic != "" {
			t.Errorf("reply %d to the bot in a reply thread: verb %q, reply_to %q, topic %q; want a mention replying to %s, no topic",
				i, e.Verb, e.ReplyTo, e.Topic, botID)
		}
	}
	if e := evs[2]; e.Verb != adapters.VerbMessage || e.ReplyTo != "" || e.Topic != string(botID) {
		t.Errorf("a message in a topic the bot opened: verb %q, reply_to %q, topic %q; want a message in topic %s", e.Verb, e.ReplyTo, e.Topic, botID)
	}
}

// Attachments are fetched through getFile; the file URL (with the token)
// never shows.
func TestDownload(t *testing.T) {
	f := telegramtest.New(t)
	f.AddFile("doc1", []byte("%PDF-1.7 report"))
	a := start(t, f, adaptertest.NewHost())
	rc, err := a.Download(t.Context(), adapters.Attachment{Ref: "doc1"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "%PDF-1.7 report" {
		t.Errorf("downloaded %q", b)
	}
	_, err = a.Download(t.Context(), adapters.Attachment{Ref: "missing"})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("missing file: %v", err)
	}
}

// A crash between receiving an update and storing it loses nothing: the
// update is confirmed to Telegram only once stored, and a new adapter on
// the same stored offset resumes after the last stored update, without
// storing any twice.
func TestNoLossNoDuplicateAcrossCrash(t *testing.T) {
	f := telegramtest.New(t)
	var mu sync.Mutex
	stored := map[adapters.MessageID]int{}
	failing, refused := true, make(chan struct{}, 100)
	host := adaptertest.NewHost()
	host.DeliverFunc = func(_ context.Context, m adapters.Inbound) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing && strings.HasSuffix(m.Text, "second") {
			refused <- struct{}{}
			return 0, errors.New("disk full")
		}
		stored[m.ID]++
		return 0, nil
	}
	a := newAdapter(f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, host) }()
	m1, _ := f.UserMessage(telegramtest.GroupID, "first", true, 0, 0)
	u1 := f.Push("message", m1)
	f.WaitConfirmed(t, u1)
	m2, _ := f.UserMessage(telegramtest.GroupID, "second", true, 0, 0)
	u2 := f.Push("message", m2)
	// The gateway keeps refusing "second": the adapter retries and never
	// asks Telegram for more, which would confirm it.
	for range 2 {
		select {
		case <-refused:
		case <-time.After(10 * time.Second):
			t.Fatal("the refused update was not retried")
		}
	}
	confirmedBeforeCrash := f.Confirmed()
	if confirmedBeforeCrash > u2 {
		t.Fatalf("update %d was confirmed to Telegram although it was never stored", u2)
	}
	cancel() // the crash
	<-done
	mu.Lock()
	failing = false
	mu.Unlock()
	a2 := newAdapter(f, nil)
	adaptertest.Start(t, a2, host)
	f.WaitConfirmed(t, u2)
	mu.Lock()
	defer mu.Unlock()
	if stored[messageID(m1["message_id"].(int))] != 1 || stored[messageID(m2["message_id"].(int))] != 1 {
		t.Errorf("stored %v; want each update once", stored)
	}
	if v, _, _ := host.Value(t.Context(), "offset"); v != strconv.FormatInt(u2, 10) {
		t.Errorf("persisted offset %q; want %d", v, u2)
	}
}

// Outbound: HTML rendering, reply into the topic, 429 → RetryAfterError,
// a 502 burst is transient, dead chats are permanent, unknown emoji refused.
func TestOutbound(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	ctx := t.Context()
	id, err := a.Send(ctx, adapters.Outbound{Chat: groupChat, Topic: "42", ReplyTo: "5", Text: "**Done** — see `a<b` and [docs](https://x.io/a?b&c)"})
	if err != nil {
		t.Fatal(err)
	}
	sent := f.Calls("sendMessage")
	last := sent[len(sent)-1].Params
	if last["parse_mode"] != "HTML" || last["text"] != `<b>Done</b> — see <code>a&lt;b</code> and <a href="https://x.io/a?b&amp;c">docs</a>` ||
		last["message_thread_id"] != "42" || !strings.Contains(last["reply_parameters"], `"message_id":5`) || last["chat_id"] != "-1001234" {
		t.Errorf("sendMessage params %v", last)
	}
	if id == "" {
		t.Error("no id")
	}
	f.RateLimit(3 * time.Second)
	_, err = a.Send(ctx, adapters.Outbound{Chat: groupChat, Text: "x"})
	var ra *adapters.RetryAfterError
	if !errors.As(err, &ra) || ra.Wait != 3*time.Second {
		t.Errorf("429: %v; want RetryAfterError of 3s", err)
	}
	f.Fail5xx(3)
	for range 3 {
		if _, err := a.Send(ctx, adapters.Outbound{Chat: dmChat, Text: "x"}); err == nil || errors.Is(err, adapters.ErrPermanent) {
			t.Errorf("502: %v; want a transient error", err)
		}
	}
	if _, err := a.Send(ctx, adapters.Outbound{Chat: dmChat, Text: "after the burst"}); err != nil {
		t.Errorf("after the 502 burst: %v", err)
	}
	for _, chat := range []adapters.JID{"telegram:group/4040", "telegram:user/4030"} {
		if _, err := a.Send(ctx, adapters.Outbound{Chat: chat, Text: "x"}); !errors.Is(err, adapters.ErrPermanent) {
			t.Errorf("send to %s: %v; want permanent", chat, err)
		}
	}
	if err := a.React(ctx, adapters.MessageRef{Chat: groupChat, ID: id}, "🦖"); !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "👍") {
		t.Errorf("unknown emoji: %v; want a permanent error listing the allowed ones", err)
	}
	if err := a.React(ctx, adapters.MessageRef{Chat: groupChat, ID: id}, "❤️"); err != nil {
		t.Errorf("❤️: %v", err)
	}
	if err := a.Typing(ctx, groupChat, "42"); err != nil {
		t.Fatal(err)
	}
	if c := f.Calls("sendChatAction"); len(c) != 1 || c[0].Params["action"] != "typing" || c[0].Params["message_thread_id"] != "42" {
		t.Errorf("typing calls %v", c)
	}
	fid, err := a.SendFile(ctx, adapters.Outbound{Chat: groupChat, Text: "chart"}, adapters.File{Name: "c.png", MIME: "image/png", Content: strings.NewReader("PNG")})
	if err != nil || len(f.Calls("sendPhoto")) != 1 || fid == "" {
		t.Errorf("an image goes as a photo: %v, %v", fid, err)
	}
}

// A group that becomes a supergroup keeps its JID: routes and history carry
// on, and sends to the old JID reach the supergroup.
func TestSupergroupMigration(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	var logs adaptertest.Logs
	a := newAdapter(f, slog.New(slog.NewTextHandler(&logs, nil)))
	adaptertest.Start(t, a, host)
	const old, new = int64(-5555), int64(-1009999)
	m, _ := f.UserMessage(old, "", false, 0, 0)
	m["migrate_to_chat_id"] = new
	f.Push("message", m)
	m2, _ := f.UserMessage(new, "hello from the supergroup", true, 0, 0)
	f.Push("message", m2)
	ev := host.WaitEvents(t, 1)[0]
	if ev.Chat != "telegram:group/5555" {
		t.Errorf("the supergroup's message arrived as %s; want the old group's JID", ev.Chat)
	}
	if !strings.Contains(logs.String(), "became a supergroup") {
		t.Errorf("the operator was not told:\n%s", logs.String())
	}
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: "telegram:group/5555", Text: "still here"}); err != nil {
		t.Fatal(err)
	}
	if c := f.Calls("sendMessage"); c[len(c)-1].Params["chat_id"] != "-1009999" {
		t.Errorf("sent to %s; want the supergroup", c[len(c)-1].Params["chat_id"])
	}
	// A restarted adapter remembers the migration.
	a2 := newAdapter(f, nil)
	h2 := adaptertest.NewHost()
	v, _, _ := host.Value(t.Context(), "migrations")
	h2.SetValue(t.Context(), "migrations", v, 0)
	adaptertest.Start(t, a2, h2)
	if id, _ := a2.chatID("telegram:group/5555"); id != new {
		t.Errorf("after restart the old JID maps to %d", id)
	}
}

// A bad token is a start-up error naming the config key.
func TestBadToken(t *testing.T) {
	f := telegramtest.New(t)
	a := New(Options{Token: "1:wrong", APIURL: f.URL(), PollTimeout: 2 * time.Second})
	err := a.Run(t.Context(), adaptertest.NewHost())
	if !errors.Is(err, adapters.ErrBadToken) || !strings.Contains(err.Error(), "adapters.telegram.token") {
		t.Fatalf("Run with a bad token: %v", err)
	}
}

func atoi[S ~string](s S) int { n, _ := strconv.Atoi(string(s)); return n }

// Webhook mode: the webhook is registered with its secret; an update is
// answered 200 once stored, 503 when it could not be (Telegram resends),
// and a request without the secret is refused and stores nothing.
func TestWebhook(t *testing.T) {
	f := telegramtest.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), WebhookURL: "https://bot.example.com/tg", Listen: addr, Secret: "s3cret"})
	failing := true
	var mu sync.Mutex
	host := adaptertest.NewHost()
	host.DeliverFunc = func(context.Context, adapters.Inbound) (int64, error) {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			failing = false
			return 0, errors.New("store busy")
		}
		return 0, nil
	}
	adaptertest.Start(t, a, host)
	if url, secret := f.Webhook(); url != "https://bot.example.com/tg" || secret != "s3cret" {
		t.Errorf("registered webhook %q with secret %q", url, secret)
	}
	m, _ := f.UserMessage(telegramtest.GroupID, "via webhook", true, 0, 0)
	body, _ := json.Marshal(map[string]any{"update_id": 1, "message": m})
	post := func(secret string) int {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", bytes.NewReader(body))
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong secret: %d", code)
	}
	if code := post("s3cret"); code != http.StatusServiceUnavailable {
		t.Errorf("store refused: %d; want 503 so that Telegram resends", code)
	}
	if code := post("s3cret"); code != http.StatusOK {
		t.Errorf("stored: %d", code)
	}
	if evs := host.Events(); len(evs) != 1 || !strings.Contains(evs[0].Text, "via webhook") {
		t.Errorf("delivered %+v; want the update once", evs)
	}
}

// An update the SDK cannot decode ("message_id":"bad") used to fail its
// whole batch and hold the gate shut for good. Now it is logged and
// skipped: the updates around it are stored, the offset moves past it
// (confirmed to Telegram and persisted), and polling goes on.
func TestUndecodableUpdateSkipped(t *testing.T) {
	f := telegramtest.New(t)
	var logs adaptertest.Logs
	host := adaptertest.NewHost()
	m1, _ := f.UserMessage(telegramtest.GroupID, "before", true, 0, 0)
	f.Push("message", m1)
	bad, _ := f.UserMessage(telegramtest.GroupID, "bad", true, 0, 0)
	bad["message_id"] = "bad"
	badID := f.Push("message", bad)
	m2, _ := f.UserMessage(telegramtest.GroupID, "after", true, 0, 0)
	u2 := f.Push("message", m2)
	a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		PollTimeout: 2 * time.Second, PerChat: -1, PerGroup: -1, Global: -1})
	adaptertest.Start(t, a, host)
	f.WaitConfirmed(t, u2)
	m3, _ := f.UserMessage(telegramtest.GroupID, "later", true, 0, 0)
	f.Push("message", m3)
	evs := host.WaitEvents(t, 3)
	var texts []string
	for _, ev := range evs {
		texts = append(texts, strings.TrimPrefix(ev.Text, "@"+telegramtest.BotName+" "))
	}
	if strings.Join(texts, ",") != "before,after,later" {
		t.Errorf("stored %q; want the updates around the bad one, and polling to go on", texts)
	}
	if v, _, _ := host.Value(t.Context(), "offset"); atoi(v) <= int(badID) {
		t.Errorf("persisted offset %q; want past the bad update %d", v, badID)
	}
	if !strings.Contains(logs.String(), "could not be decoded") || !strings.Contains(logs.String(), "update="+strconv.FormatInt(badID, 10)) {
		t.Errorf("the skipped update is not logged with its id:\n%s", logs.String())
	}
}

// A null in getUpdates' result used to panic the SDK's poller and end the
// process. It is dropped; the updates in the same batch are stored once,
// and a batch of nothing but nulls is a failed poll that is retried.
func TestNullUpdateDoesNotPanic(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host)
	f.AnswerNext(`{"ok":true,"result":[null]}`)
	m1, _ := f.UserMessage(telegramtest.GroupID, "first", true, 0, 0)
	u1 := f.Push("message", m1)
	f.WaitConfirmed(t, u1)
	m2, _ := f.UserMessage(telegramtest.GroupID, "in a batch with nulls", true, 0, 0)
	u2 := f.ReserveUpdateID() // only the raw answer carries it
	raw, _ := json.Marshal(map[string]any{"update_id": u2, "message": m2})
	f.AnswerNext(`{"ok":true,"result":[null,` + string(raw) + `,null]}`)
	f.WaitConfirmed(t, u2)
	m3, _ := f.UserMessage(telegramtest.GroupID, "last", true, 0, 0)
	f.Push("message", m3)
	host.WaitEvents(t, 3)
	count := map[string]int{}
	for _, ev := range host.Events() {
		count[strings.TrimPrefix(ev.Text, "@"+telegramtest.BotName+" ")]++
	}
	if count["first"] != 1 || count["in a batch with nulls"] != 1 || count["last"] != 1 || len(count) != 3 {
		t.Errorf("stored %v; want each update once", count)
	}
}

// A panic while handling one update (here in the host) is recovered on the
// SDK's worker: it is logged, the update is skipped, and the next one is
// stored.
func TestHandlerPanicRecovered(t *testing.T) {
	f := telegramtest.New(t)
	var logs adaptertest.Logs
	host := adaptertest.NewHost()
	host.DeliverFunc = func(_ context.Context, m adapters.Inbound) (int64, error) {
		if strings.HasSuffix(m.Text, "boom") {
			panic("boom")
		}
		return 0, nil
	}
	a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		PollTimeout: 2 * time.Second, PerChat: -1, PerGroup: -1, Global: -1})
	adaptertest.Start(t, a, host)
	m1, _ := f.UserMessage(telegramtest.GroupID, "boom", true, 0, 0)
	f.Push("message", m1)
	m2, _ := f.UserMessage(telegramtest.GroupID, "fine", true, 0, 0)
	f.Push("message", m2)
	evs := host.WaitEvents(t, 1)
	if len(evs) != 1 || !strings.HasSuffix(evs[0].Text, "fine") {
		t.Errorf("stored %+v; want the update after the panicking one", evs)
	}
	if !strings.Contains(logs.String(), "panicked") {
		t.Errorf("the panic is not logged:\n%s", logs.String())
	}
}

// An anonymous group admin's message, and one a member sends as a channel,
// come from Telegram's placeholder bots (GroupAnonymousBot, Channel_Bot)
// with the real author in sender_chat. They are people's messages, so they
// were wrongly marked as another bot's and could never start a turn (CONTRACT
// §4: only other bots' messages never start one); a channel's own post has
// no from at all. Each is sent by its sender_chat, a mention when it
// mentions the bot.
func TestSenderChatIsNoOtherBot(t *testing.T) {
	f := telegramtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host)
	anon, _ := f.UserMessage(telegramtest.GroupID, "deploy please", true, 0, 0)
	anon["from"] = map[string]any{"id": 1087968824, "is_bot": true, "first_name": "Group", "username": "GroupAnonymousBot"}
	anon["sender_chat"] = telegramtest.ChatObj(telegramtest.GroupID)
	f.Push("message", anon)
	asChannel, _ := f.UserMessage(telegramtest.GroupID, "news", false, 0, 0)
	asChannel["from"] = map[string]any{"id": 136817688, "is_bot": true, "first_name": "Channel", "username": "Channel_Bot"}
	asChannel["sender_chat"] = map[string]any{"id": -1009999, "type": "channel", "title": "Announcements"}
	f.Push("message", asChannel)
	evs := host.WaitEvents(t, 2)
	if e := evs[0]; e.OtherBot || e.FromBot || e.Sender != groupChat || e.SenderName != "Ops" || e.Verb != adapters.VerbMention {
		t.Errorf("anonymous admin's mention: sender %q name %q verb %q other_bot %v; want sender %s (Ops), a mention from no bot",
			e.Sender, e.SenderName, e.Verb, e.OtherBot, groupChat)
	}
	if e := evs[1]; e.OtherBot || e.Sender != "telegram:group/1009999" || e.SenderName != "Announcements" || e.Verb != adapters.VerbMessage {
		t.Errorf("a message sent as a channel: sender %q name %q verb %q other_bot %v; want telegram:group/1009999 (Announcements), a message from no bot",
			e.Sender, e.SenderName, e.Verb, e.OtherBot)
	}
}

// The webhook listener faces the internet and holds at most webhookConns
// connections at once; more wait to be accepted. Five idle clients that
// never send the secret are served three at a time.
func TestWebhookConnectionCap(t *testing.T) {
	f := telegramtest.New(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), WebhookURL: "https://bot.example.com/tg", Listen: addr, Secret: "s3cret"})
	conns := adaptertest.NewConns()
	a.webhookConns = 3
	a.connState = conns.State
	counts := conns.Counts
	adaptertest.Start(t, a, adaptertest.NewHost())
	testwait.For(t, 10*time.Second, "the webhook listening", func() bool { _, set := f.Webhook(); return set != "" })
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	testwait.For(t, 10*time.Second, "three connections accepted", func() bool { n, _ := counts(); return n >= 3 })
	for _, c := range clients {
		c.Close()
	}
	testwait.For(t, 10*time.Second, "all five connections accepted", func() bool { n, _ := counts(); return n == 5 })
	if _, p := counts(); p > 3 {
		t.Errorf("%d connections were open at once; want at most 3", p)
	}
}

// TestWebhookListenInUse: a webhook listen address another program holds is
// a configuration error that names adapters.telegram.listen and says what
// to do (the gateway stops at start with it).
func TestWebhookListenInUse(t *testing.T) {
	f := telegramtest.New(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), WebhookURL: "https://bot.example.com/tg", Listen: busy.Addr().String(), Secret: "s3cret"})
	err = a.Run(t.Context(), adaptertest.NewHost())
	if !errors.Is(err, adapters.ErrConfig) || !strings.Contains(err.Error(), "adapters.telegram.listen") || !strings.Contains(err.Error(), "change adapters.telegram.listen") {
		t.Fatalf("run: %v; want ErrConfig saying to change adapters.telegram.listen", err)
	}
}
