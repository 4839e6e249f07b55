package discord

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
	"switchboard/internal/testwait"
)

var (
	channelChat = adapters.JID("discord:" + discordtest.GuildID + "/" + discordtest.Channel)
	dmChat      = adapters.JID("discord:dm/" + discordtest.DMChan)
)

func newAdapter(f *discordtest.Server, log *slog.Logger) *Adapter {
	return New(Options{Token: discordtest.Token, APIURL: f.URL(), Logger: log})
}

// fakePlatform is the fake Discord as the conformance suite sees it.
type fakePlatform struct{ f *discordtest.Server }

func (p fakePlatform) NewAdapter(t *testing.T) adapters.Adapter { return newAdapter(p.f, nil) }
func (p fakePlatform) Group() (adapters.JID, string)            { return channelChat, discordtest.Thread }
func (p fakePlatform) DM() adapters.JID                         { return dmChat }

func channelOfJID(chat adapters.JID, topic string) string {
	if topic != "" {
		return topic
	}
	if chat == dmChat {
		return discordtest.DMChan
	}
	return discordtest.Channel
}

func (p fakePlatform) UserPosts(t *testing.T, post adaptertest.Post) adapters.MessageID {
	return adapters.MessageID(p.f.UserPosts(discordtest.Post{Channel: channelOfJID(post.Chat, post.Topic), Content: post.Text, MentionBot: post.Mention,
		ReplyTo: string(post.ReplyTo), File: post.AttachmentName, FileData: post.Attachment}))
}

func (p fakePlatform) RateLimitFiles(wait time.Duration) { p.f.RateLimitFiles(wait) }

func (p fakePlatform) UserEdits(t *testing.T, chat adapters.JID, id adapters.MessageID, text string) bool {
	p.f.UserEdits(channelOfJID(chat, ""), string(id), text)
	return true
}

func (p fakePlatform) UserDeletes(t *testing.T, chat adapters.JID, id adapters.MessageID) bool {
	p.f.UserDeletes(channelOfJID(chat, ""), string(id))
	return true
}

func (p fakePlatform) UserReacts(t *testing.T, chat adapters.JID, id adapters.MessageID, emoji string) bool {
	p.f.UserReacts(channelOfJID(chat, ""), string(id), emoji)
	return true
}

// BotMessages lists the bot's messages in the chat and its thread, as users
// see them (Discord renders the Markdown).
func (p fakePlatform) BotMessages(chat adapters.JID) []adaptertest.Message {
	var out []adaptertest.Message
	chans := []string{channelOfJID(chat, "")}
	if chat == channelChat {
		chans = append(chans, discordtest.Thread)
	}
	for _, ch := range chans {
		for _, m := range p.f.Messages(ch) {
			if m.AuthorID != discordtest.BotID {
				continue
			}
			msg := adaptertest.Message{ID: adapters.MessageID(m.ID), Text: rendered(m.Content), Raw: m.Content, ReplyTo: adapters.MessageID(m.ReplyTo), Deleted: m.Deleted,
				Pinned: m.Pinned, Reactions: m.Reactions, File: m.File, FileData: m.FileData}
			if ch == discordtest.Thread {
				msg.Topic = discordtest.Thread
			}
			for _, b := range m.Buttons {
				msg.Buttons = append(msg.Buttons, adapters.Button{Label: b.Label, Data: b.CustomID, Style: buttonStyles[b.Style]})
			}
			out = append(out, msg)
		}
	}
	return out
}

var buttonStyles = map[int]adapters.ButtonStyle{1: adapters.StylePrimary, 4: adapters.StyleDanger}

// UserPresses presses a button of the bot's message (in the channel or its
// thread) and returns the ephemeral answer the presser saw.
func (p fakePlatform) UserPresses(t *testing.T, chat adapters.JID, id adapters.MessageID, data string) string {
	ch := channelOfJID(chat, "")
	for _, m := range p.f.Messages(discordtest.Thread) {
		if m.ID == string(id) {
			ch = discordtest.Thread
		}
	}
	a := p.f.WaitAnswered(t, p.f.UserPresses(ch, string(id), data))
	switch {
	case a.Late:
		t.Fatalf("the interaction was answered after Discord's 3 s")
	case a.Type == 4 && a.Flags&64 == 0:
		t.Fatalf("the answer %q was posted for everyone; want it ephemeral (flags 64)", a.Content)
	}
	return a.Content
}

// rendered is roughly what Discord's client shows for Markdown.
func rendered(s string) string {
	return strings.NewReplacer("**", "", "__", "", "_", "", "*", "", "`", "").Replace(s)
}

// WatchLive implements adaptertest.LiveWatcher: what the chat and its
// thread showed of the bot since, each message as sent and as each edit
// left it.
func (p fakePlatform) WatchLive(t *testing.T, chat adapters.JID) func() []string {
	chans := []string{channelOfJID(chat, "")}
	if chat == channelChat {
		chans = append(chans, discordtest.Thread)
	}
	from := len(p.f.Shown(chans...))
	return func() []string {
		var out []string
		for _, s := range p.f.Shown(chans...)[from:] {
			out = append(out, rendered(s.Content))
		}
		return out
	}
}

func (p fakePlatform) RateLimit(wait time.Duration)      { p.f.RateLimit(wait) }
func (p fakePlatform) RateLimited() (at, next time.Time) { return p.f.RateLimited() }

// RejectFormatting: Discord never refuses Markdown.
func (p fakePlatform) RejectFormatting() {}

func (p fakePlatform) Disconnect() { p.f.Disconnect(true) }

func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adaptertest.Platform { return fakePlatform{discordtest.New(t)} })
}

func start(t *testing.T, f *discordtest.Server, host *adaptertest.Host, log *slog.Logger) *Adapter {
	t.Helper()
	a := newAdapter(f, log)
	adaptertest.Start(t, a, host)
	return a
}

// Normalization: channel, thread (parent's JID, thread as topic), DM; a
// mention by user and by the bot's role; replies to the bot; other bots.
func TestInbound(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	if self, _ := a.Self(); self != "discord:user/"+discordtest.BotID {
		t.Errorf("Self = %s", self)
	}
	botMsg, err := a.Send(t.Context(), adapters.Outbound{Chat: channelChat, Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{
		f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "plain"}),
		f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "by role", MentionRole: true}),
		f.UserPosts(discordtest.Post{Channel: discordtest.Thread, Content: "in the thread", MentionBot: true}),
		f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "thanks", ReplyTo: string(botMsg)}),
		f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "beep", Author: "55", Bot: true}),
		f.UserPosts(discordtest.Post{Channel: discordtest.DMChan, Content: "psst"}),
	}
	evs := host.WaitEvents(t, len(ids))
	byID := map[string]adapters.Inbound{}
	for _, ev := range evs {
		byID[ev.ID.String()] = ev
	}
	check := func(i int, chat adapters.JID, topic string, verb adapters.Verb, other bool) {
		t.Helper()
		ev := byID[ids[i]]
		if ev.Chat != chat || ev.Topic != topic || ev.Verb != verb || ev.OtherBot != other {
			t.Errorf("message %d: %+v; want chat %s topic %q verb %s other bot %v", i, ev, chat, topic, verb, other)
		}
	}
	check(0, channelChat, "", adapters.VerbMessage, false)
	check(1, channelChat, "", adapters.VerbMention, false)
	check(2, channelChat, discordtest.Thread, adapters.VerbMention, false)
	check(3, channelChat, "", adapters.VerbMention, false)
	check(4, channelChat, "", adapters.VerbMessage, true)
	check(5, dmChat, "", adapters.VerbMention, false)
	if ev := byID[ids[2]]; ev.Text != "@switchboard in the thread" || ev.Sender != "discord:user/"+discordtest.UserID || ev.SenderName != "Ann" {
		t.Errorf("mention text and sender: %+v", ev)
	}
}

// A bot whose username has spaces: its mention renders as one word, so
// that "<@bot> stop" stays the two words of a stop request (the gateway
// reads "@name stop"); the rest of the name is not lost.
func TestBotMentionWithSpacesIsOneWord(t *testing.T) {
	f := discordtest.New(t)
	f.SetBotName("My  Bot")
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "stop", MentionBot: true})
	ev := host.WaitEvents(t, 1)[0]
	if ev.Text != "@My_Bot stop" || ev.Verb != adapters.VerbMention {
		t.Errorf("a mention of the bot %q then stop: text %q, verb %s; want %q, mention", "My  Bot", ev.Text, ev.Verb, "@My_Bot stop")
	}
}

// @everyone in the agent's reply does not ping: allowed mentions are users only.
func TestEveryoneDoesNotPing(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	uid := adapters.MessageID(f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "hi", MentionBot: true}))
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: channelChat, Text: "@everyone the deploy is done <@&701>", ReplyTo: uid}); err != nil {
		t.Fatal(err)
	}
	m := f.Messages(discordtest.Channel)
	got := m[len(m)-1].AllowedJSON
	if !strings.Contains(got, `"parse":["users"]`) || strings.Contains(got, "everyone") || strings.Contains(got, "roles") {
		t.Errorf("allowed_mentions %s; want users only", got)
	}
}

// Rate limits: a 429, per route or global, is waited out by discordgo and
// the message arrives once; errors map to permanent where they are.
func TestRateLimitsAndErrors(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	for _, global := range []bool{false, true} {
		if global {
			f.RateLimitGlobal(50 * time.Millisecond)
		} else {
			f.RateLimit(50 * time.Millisecond)
		}
		if _, err := a.Send(t.Context(), adapters.Outbound{Chat: channelChat, Text: "after the limit"}); err != nil {
			t.Fatalf("send after a 429 (global %v): %v", global, err)
		}
	}
	if n := len(f.Messages(discordtest.Channel)); n != 2 {
		t.Errorf("%d messages; want each once", n)
	}
	_, err := a.Send(t.Context(), adapters.Outbound{Chat: adapters.JID("discord:" + discordtest.GuildID + "/" + discordtest.NoAccess), Text: "x"})
	if !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), "invite it") {
		t.Errorf("missing access: %v", err)
	}
	if err := a.React(t.Context(), adapters.MessageRef{Chat: channelChat, ID: adapters.MessageID(f.Messages(discordtest.Channel)[0].ID)}, ":shipit:"); err != nil {
		t.Errorf("custom emoji by name: %v", err)
	}
	if r := f.Messages(discordtest.Channel)[0].Reactions; len(r) != 1 || r[0] != "shipit:55" {
		t.Errorf("reactions %q; want the custom emoji by id", r)
	}
}

// A forwarded message (a message reference of type forward) is no reply:
// the message it copies is in another chat. Its text, in the snapshot,
// reaches the agent marked as forwarded.
func TestForwardIsNoReply(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	f.WaitFor(t, "connected", func() bool { return f.Connected() })
	f.DispatchRaw("MESSAGE_CREATE", `{"id":"9002","channel_id":"`+discordtest.Channel+`","guild_id":"`+discordtest.GuildID+
		`","content":"","author":{"id":"`+discordtest.UserID+`","username":"ann"},"timestamp":"2026-11-27T00:00:00Z",`+
		`"mentions":[],"mention_roles":[],"attachments":[],`+
		`"message_reference":{"type":1,"message_id":"5555","channel_id":"6666","guild_id":"7777"},`+
		`"message_snapshots":[{"message":{"content":"the build is red","attachments":[{"id":"1","filename":"log.txt"}],"timestamp":"2026-11-26T23:00:00Z"}}]}`)
	e := host.WaitEvents(t, 1)[0]
	if e.ReplyTo != "" || e.Text != "[forwarded] the build is red [file log.txt]" {
		t.Errorf("forward: reply_to %q, text %q; want no reply_to and \"[forwarded] the build is red [file log.txt]\"", e.ReplyTo, e.Text)
	}
}

// A moderator's bulk delete (MESSAGE_DELETE_BULK, one event for many
// messages) marks each of them deleted, like single deletes.
func TestBulkDeleteMarksEach(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	f.WaitFor(t, "connected", func() bool { return f.Connected() })
	a := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "spam 1"})
	b := f.UserPosts(discordtest.Post{Channel: discordtest.Thread, Content: "spam 2"})
	host.WaitEvents(t, 2)
	f.DispatchRaw("MESSAGE_DELETE_BULK", `{"ids":["`+a+`"],"channel_id":"`+discordtest.Channel+`","guild_id":"`+discordtest.GuildID+`"}`)
	f.DispatchRaw("MESSAGE_DELETE_BULK", `{"ids":["`+b+`"],"channel_id":"`+discordtest.Thread+`","guild_id":"`+discordtest.GuildID+`"}`)
	evs := host.WaitEvents(t, 4)
	for i, want := range []struct{ id, topic string }{{a, ""}, {b, discordtest.Thread}} {
		e := evs[2+i]
		if e.Kind != adapters.KindDelete || e.ID.String() != want.id || e.Chat != channelChat || e.Topic != want.topic {
			t.Errorf("bulk delete %d came as %s of %s in %s/%q; want the delete of %s in %s/%q", i, e.Kind.Name(), e.ID, e.Chat, e.Topic, want.id, channelChat, want.topic)
		}
	}
}

// Channel and role mentions reach the agent as people read them (#general,
// @ops), not as Discord's markup (<#100>, <@&701>); an unknown channel keeps
// its markup, and so does the bot's own role.
func TestChannelAndRoleMentionsRendered(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	f.WaitFor(t, "connected", func() bool { return f.Connected() })
	f.DispatchRaw("MESSAGE_CREATE", `{"id":"9001","channel_id":"`+discordtest.Channel+`","guild_id":"`+discordtest.GuildID+
		`","content":"<@&701> see <#`+discordtest.Channel+`> and <#4242>, <@&`+discordtest.BotRole+`>","author":{"id":"`+discordtest.UserID+
		`","username":"ann"},"timestamp":"2026-11-27T00:00:00Z","mentions":[],"mention_roles":["701","`+discordtest.BotRole+`"],"attachments":[]}`)
	want := "@ops see #general and <#4242>, <@&" + discordtest.BotRole + ">" // the bot's role stays one word (@bot stop)
	if e := host.WaitEvents(t, 1)[0]; e.Text != want {
		t.Errorf("text %q; want %q", e.Text, want)
	}
}

// A 429 pauses the whole adapter for its retry_after (CONTRACT §13), not
// only the route it answered: a send to another channel (here the thread,
// its own bucket for discordgo) made during the wait reaches Discord only
// after it.
func TestRateLimitPausesTheWholeAdapter(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	wait := time.Second
	f.RateLimit(wait)
	first := make(chan error, 1)
	go func() {
		_, err := a.Send(t.Context(), adapters.Outbound{Chat: channelChat, Text: "answered 429"})
		first <- err
	}()
	// The 429 has reached the adapter (not only left the fake).
	testwait.For(t, 10*time.Second, "the 429", func() bool { return a.held.Left() > 0 })
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: channelChat, Topic: discordtest.Thread, Text: "to the thread, during the wait"}); err != nil {
		t.Fatalf("send to the thread: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("send after the 429: %v", err)
	}
	at, next := f.RateLimited()
	if next.Sub(at) < wait {
		t.Errorf("the next request reached Discord %v after the 429; want the whole adapter paused for retry_after (%v)", next.Sub(at), wait)
	}
	if n, m := len(f.Messages(discordtest.Channel)), len(f.Messages(discordtest.Thread)); n != 1 || m != 1 {
		t.Errorf("%d messages in the channel, %d in the thread; want each once", n, m)
	}
}

// A connection that could not resume is followed by a backfill: messages
// posted while the bot was away are delivered once, marked backfilled,
// with their own times (old ones will not trigger).
func TestBackfillAfterNewSession(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	seen := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "before"})
	host.Chats = []adapters.ChatCursor{{Chat: channelChat, LastID: adapters.MessageID(seen), Last: time.Now().Add(-time.Hour)}}
	start(t, f, host, nil)
	f.WaitFor(t, "connected", func() bool { return f.Connected() })
	f.Disconnect(false)
	old := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "while away, long ago", Time: time.Now().Add(-30 * time.Minute)})
	recent := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "while away, just now", MentionBot: true})
	inThread := f.UserPosts(discordtest.Post{Channel: discordtest.Thread, Content: "in the thread, while away"})
	f.WaitFor(t, "a new session", func() bool { return f.Sessions() >= 2 })
	evs := host.WaitEvents(t, 3)
	count := map[string]int{}
	for _, ev := range host.Events() {
		count[ev.ID.String()]++
		if (ev.ID.String() == old || ev.ID.String() == recent) && !ev.Backfilled {
			t.Errorf("%s not marked backfilled", ev.ID)
		}
		if ev.ID.String() == old && time.Since(ev.Time) < 20*time.Minute {
			t.Errorf("the old message carries time %v, not its own", ev.Time)
		}
	}
	for _, ev := range host.Events() {
		if ev.ID.String() == inThread && (ev.Chat != channelChat || ev.Topic != discordtest.Thread || !ev.Backfilled) {
			t.Errorf("the thread's missed message came as %+v; want the channel's JID with the thread as topic, backfilled", ev)
		}
	}
	if count[old] != 1 || count[recent] != 1 || count[inThread] != 1 || count[seen] != 0 {
		t.Errorf("delivered %v from %d events; want each missed message once and nothing already stored", count, len(evs))
	}
}

// Empty content from a user means the privileged intent is off: said once.
func TestEmptyContentWarnsOnce(t *testing.T) {
	f := discordtest.New(t)
	var logs adaptertest.Logs
	host := adaptertest.NewHost()
	start(t, f, host, slog.New(slog.NewTextHandler(&logs, nil)))
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: ""})
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: ""})
	host.WaitEvents(t, 2)
	if n := strings.Count(logs.String(), "Message Content Intent"); n != 1 {
		t.Errorf("the intent hint was logged %d times:\n%s", n, logs.String())
	}
}

// Attachments are fetched through a fresh message read.
func TestDownload(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "see", File: "log.txt", FileData: []byte("panic: at the disco")})
	ev := host.WaitEvents(t, 1)[0]
	if len(ev.Attachments) != 1 || strings.Contains(ev.Attachments[0].Ref, "http") {
		t.Fatalf("attachments %+v", ev.Attachments)
	}
	rc, err := a.Download(t.Context(), ev.Attachments[0])
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "panic: at the disco" {
		t.Errorf("downloaded %q", b)
	}
}

// A bad token is a start-up error naming the key.
func TestBadToken(t *testing.T) {
	f := discordtest.New(t)
	err := New(Options{Token: "wrong", APIURL: f.URL()}).Run(context.Background(), adaptertest.NewHost())
	if !errors.Is(err, adapters.ErrBadToken) || !strings.Contains(err.Error(), "adapters.discord.token") {
		t.Fatalf("bad token: %v", err)
	}
}

// A start-up error names the server the adapter talked to and the key
// that points there: with api_url set, never discord.com, which was never
// asked. An api_url that is no http(s) URL is a configuration error, not
// a silent fallback to discord.com with the token.
func TestStartupErrorsNameTheAPIURL(t *testing.T) {
	f := discordtest.New(t)
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // nothing listens there now
	for _, tc := range []struct {
		name, token, apiURL string
		is                  error
		want                []string
	}{
		{"bad token", "wrong", f.URL(), adapters.ErrBadToken, []string{"adapters.discord.token", f.URL(), "adapters.discord.api_url", "401"}},
		{"server down", discordtest.Token, downURL, nil, []string{downURL, "adapters.discord.api_url"}},
		{"not a URL", discordtest.Token, "discord-proxy:8080", adapters.ErrConfig, []string{"adapters.discord.api_url", "discord-proxy:8080"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := New(Options{Token: tc.token, APIURL: tc.apiURL}).Run(ctx, adaptertest.NewHost())
			if err == nil || tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("Run: %v; want an error wrapping %v", err, tc.is)
			}
			if strings.Contains(err.Error(), "discord.com") {
				t.Errorf("error %q names discord.com; the adapter talked to %s", err, tc.apiURL)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
}

// When discordgo cannot restore a lost connection in time, Run gives the
// session up and returns an error, so the gateway starts a fresh one.
func TestStuckReconnectEndsRun(t *testing.T) {
	f := discordtest.New(t)
	a := New(Options{Token: discordtest.Token, APIURL: f.URL(), ReconnectDeadline: 300 * time.Millisecond})
	host := adaptertest.NewHost()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, host) }()
	host.Wait(t, 10*time.Second, "connected", func(h *adaptertest.Host) bool {
		st, _ := h.States()
		return len(st) > 0 && st[len(st)-1] == adapters.StateConnected
	})
	f.RefuseConnections(true)
	f.Disconnect(true)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not restored") {
			t.Errorf("Run returned %v; want the stuck-reconnect error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not give up on a connection that could not be restored")
	}
}

// An application without the Message Content intent is refused at the
// gateway (close 4014): Run fails with a configuration error that says
// where to turn the intent on, so start-up stops instead of reconnecting.
func TestMessageContentIntentDisallowed(t *testing.T) {
	f := discordtest.New(t)
	f.DisallowMessageContent()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := newAdapter(f, nil).Run(ctx, adaptertest.NewHost())
	if !errors.Is(err, adapters.ErrConfig) {
		t.Fatalf("Run: %v; want a configuration error", err)
	}
	for _, want := range []string{"adapters.discord", "Privileged Gateway Intents", "Message Content Intent", "4014"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// A server that serves no channel lookups (GET /channels/{id} answers
// 404: a proxy or a test server that serves only the message calls) still
// gets the adapter's sends, in a channel, its thread and a DM, and the
// adapter's inbound messages still say where they are: the lookup that
// confirms a JID names its channel (address) is skipped when it cannot
// be had, as the send itself then fails wherever Discord would not show
// the channel to the bot. Where Discord answers, a JID naming another
// server's channel is still refused.
func TestSendsWithoutChannelLookups(t *testing.T) {
	f := discordtest.New(t)
	f.NoChannelLookups()
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	for _, out := range []adapters.Outbound{
		{Chat: channelChat, Text: "in the channel"},
		{Chat: channelChat, Topic: discordtest.Thread, Text: "in the thread"},
		{Chat: adapters.JID("discord:dm/" + discordtest.DMChan), Text: "in the DM"},
	} {
		if _, err := a.Send(t.Context(), out); err != nil {
			t.Errorf("send %q to %s (topic %q): %v; want it sent", out.Text, out.Chat, out.Topic, err)
		}
	}
	for ch, want := range map[string]string{discordtest.Channel: "in the channel", discordtest.Thread: "in the thread", discordtest.DMChan: "in the DM"} {
		if ms := f.Messages(ch); len(ms) != 1 || ms[0].Content != want {
			t.Errorf("channel %s holds %d messages; want %q once", ch, len(ms), want)
		}
	}

	g := discordtest.New(t)
	b := start(t, g, adaptertest.NewHost(), nil)
	other := adapters.JID("discord:" + discordtest.GuildID + "/" + discordtest.OtherChannel)
	if _, err := b.Send(t.Context(), adapters.Outbound{Chat: other, Text: "x"}); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("send to %s, a channel of another server: %v; want it refused", other, err)
	}
}

// A member whose username reads as the bot's mention ("bob", the bot
// "Bob") is not taken for the bot: "@bob stop" to that member, written as
// a reply to the bot, would otherwise stop the bot's turn (the gateway
// asks MentionsSelf of the text's first word).
func TestMentionOfAMemberNamedLikeTheBotIsNotTheBots(t *testing.T) {
	f := discordtest.New(t)
	f.SetBotName("Bob")
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "stop", MentionBob: true})
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "stop", MentionBot: true})
	evs := host.WaitEvents(t, 2)
	for i, want := range []bool{false, true} {
		first := strings.Fields(evs[i].Text)[0]
		if self, known := a.MentionsSelf(first); !known || self != want {
			t.Errorf("message %q: MentionsSelf(%q) = %v, %v; want %v, true", evs[i].Text, first, self, known, want)
		}
	}
}

// A role named like the bot ("ops", the bot "Ops") is not the bot's
// mention either; the bot's managed role is.
func TestMentionOfARoleNamedLikeTheBotIsNotTheBots(t *testing.T) {
	f := discordtest.New(t)
	f.SetBotName("Ops")
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "stop", MentionOps: true})
	f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "stop", MentionRole: true})
	evs := host.WaitEvents(t, 2)
	for i, want := range []bool{false, true} {
		first := strings.Fields(evs[i].Text)[0]
		if self, known := a.MentionsSelf(first); !known || self != want {
			t.Errorf("message %q: MentionsSelf(%q) = %v, %v; want %v, true", evs[i].Text, first, self, known, want)
		}
	}
}

// Custom emoji, timestamps and command mentions reach the agent as people
// read them (:partyblob:, an RFC 3339 time, /deploy), not as Discord's
// markup, in DMs as in servers.
func TestEmojiAndTimestampMarkupRendered(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	start(t, f, host, nil)
	f.WaitFor(t, "connected", func() bool { return f.Connected() })
	content := `shipped <:partyblob:1234567890> <a:dance:42>, call at <t:1700000000:R> (<t:1700000000>), run </deploy:99>, keep <3 and <b>`
	want := `shipped :partyblob: :dance:, call at 2023-11-14T22:13:20Z (2023-11-14T22:13:20Z), run /deploy, keep <3 and <b>`
	for i, guild := range []string{`,"guild_id":"` + discordtest.GuildID + `"`, ""} {
		ch := discordtest.Channel
		if guild == "" {
			ch = discordtest.DMChan
		}
		f.DispatchRaw("MESSAGE_CREATE", `{"id":"93`+strconv.Itoa(i)+`","channel_id":"`+ch+`"`+guild+`,"content":"`+strings.ReplaceAll(content, `"`, `\"`)+
			`","author":{"id":"`+discordtest.UserID+`","username":"ann"},"timestamp":"2026-11-27T00:00:00Z","mentions":[],"attachments":[]}`)
	}
	for _, e := range host.WaitEvents(t, 2) {
		if e.Text != want {
			t.Errorf("%s: text %q; want %q", e.Chat, e.Text, want)
		}
	}
}

// A reaction in a server carries who reacted by name (the member's nick),
// as messages do: the reaction note in the folder's next prompt names them.
func TestReactionNamesTheMember(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	a := start(t, f, host, nil)
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: channelChat, Text: "deployed"})
	if err != nil {
		t.Fatal(err)
	}
	f.UserReacts(discordtest.Channel, string(id), "👍")
	e := host.WaitEvents(t, 1)[0]
	if e.Kind != adapters.KindReaction || e.Reaction != "👍" || e.Sender != "discord:user/"+discordtest.UserID || e.SenderName != "Ann" {
		t.Errorf("reaction %+v; want 👍 from discord:user/%s named Ann", e, discordtest.UserID)
	}
}

// After downtime in a busy channel, backfill stores the newest messages
// missed (at most 100), so the question asked a minute ago is answered.
// Discord answers a history request with `after` with the messages right
// after it, the oldest: asked that way, the 100 oldest missed were stored
// and the newest, the ones that trigger, never.
func TestBackfillKeepsTheNewest(t *testing.T) {
	f := discordtest.New(t)
	host := adaptertest.NewHost()
	seen := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "before", Time: time.Now().Add(-3 * time.Hour)})
	host.Chats = []adapters.ChatCursor{{Chat: channelChat, LastID: adapters.MessageID(seen), Last: time.Now().Add(-3 * time.Hour)}}
	// Posted while the gateway was down: the bot connects after them, and
	// its first session backfills once (a drop and reconnect while they are
	// posted could backfill twice, some delivered live in between).
	for i := range 150 {
		f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "chatter " + strconv.Itoa(i), Time: time.Now().Add(-2*time.Hour + time.Duration(i)*time.Second)})
	}
	recent := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "anyone there?", MentionBot: true})
	start(t, f, host, nil)
	host.Wait(t, 20*time.Second, "the newest missed message (a mention a moment ago) backfilled", func(h *adaptertest.Host) bool {
		for _, e := range h.Events() {
			if e.ID.String() == recent && e.Backfilled {
				return true
			}
		}
		return false
	})
	backfilled := 0
	for _, e := range host.Events() {
		if e.Backfilled && e.Chat == channelChat && e.Topic == "" {
			backfilled++
		}
	}
	if backfilled > 100 {
		t.Errorf("%d messages backfilled; want at most 100", backfilled)
	}
}

// like with a standard emoji's shortcode, as Slack names reactions and
// people type them (":thumbsup:", "+1", "fire"), reacts with the emoji:
// Discord takes the emoji itself (a bare name is taken for a custom emoji
// of the server, which has none by that name).
func TestLikeWithAShortcode(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	for _, tc := range []struct{ reaction, want string }{{":thumbsup:", "👍"}, {"+1", "👍"}, {"fire", "🔥"}, {"white_check_mark", "✅"},
		{"heart", "❤\ufe0f"}, {":warning:", "⚠\ufe0f"}, {"heart_on_fire", "❤\u200d🔥"}} {
		id := f.UserPosts(discordtest.Post{Channel: discordtest.Channel, Content: "ship it?"})
		if err := a.React(t.Context(), adapters.MessageRef{Chat: channelChat, ID: adapters.MessageID(id)}, tc.reaction); err != nil {
			t.Errorf("like %q: %v", tc.reaction, err)
			continue
		}
		for _, m := range f.Messages(discordtest.Channel) {
			if m.ID == id && (len(m.Reactions) != 1 || m.Reactions[0] != tc.want) {
				t.Errorf("like %q: the message has reactions %q; want %q", tc.reaction, m.Reactions, tc.want)
			}
		}
	}
}
