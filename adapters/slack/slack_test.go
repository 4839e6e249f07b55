package slack_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
	"switchboard/internal/testlog"
)

// start runs an adapter against s in mode with host until the test ends.
func start(t *testing.T, s *slacktest.Server, mode string, host *adaptertest.Host) *slack.Adapter {
	t.Helper()
	a := newAdapter(s, mode)
	adaptertest.Start(t, a, host)
	if mode == slack.ModeEvents {
		s.EventsURL = "http://" + a.Addr().String() + slack.EventsPath
	}
	return a
}

func post(t *testing.T, s *slacktest.Server, p slacktest.Post) string {
	t.Helper()
	ts, err := s.UserPosts(p)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestInboundChannelThreadDM(t *testing.T) {
	for _, mode := range []string{slack.ModeSocket, slack.ModeEvents} {
		t.Run(mode, func(t *testing.T) {
			s := slacktest.New(t)
			host := adaptertest.NewHost()
			start(t, s, mode, host)

			top := post(t, s, slacktest.Post{Channel: "C1", User: "U1",
				Text: "hi <@U2>, see <#C9|random> and <https://x.io/a?b=1&amp;c=2|the docs>, <!here> &lt;b&gt; &amp; co"})
			reply := post(t, s, slacktest.Post{Channel: "C1", User: "U2", Text: "in the thread", ThreadTS: top})
			dm := post(t, s, slacktest.Post{Channel: "D1", User: "U1", Text: "just us"})
			grp := post(t, s, slacktest.Post{Channel: "G1", User: "U1", Text: "private"})
			ev := host.WaitEvents(t, 4)

			want := []struct {
				chat, id, sender, name, topic, verb, text string
			}{
				{"slack:T1/channel/C1", top, "slack:T1/user/U1", "alice", "", "message",
					"hi @bob, see #random and the docs (https://x.io/a?b=1&c=2), @here <b> & co"},
				{"slack:T1/channel/C1", reply, "slack:T1/user/U2", "bob", top, "message", "in the thread"},
				{"slack:T1/dm/D1", dm, "slack:T1/user/U1", "alice", "", "mention", "just us"},
				{"slack:T1/group/G1", grp, "slack:T1/user/U1", "alice", "", "message", "private"},
			}
			for i, w := range want {
				e := ev[i]
				if string(e.Chat) != w.chat || e.ID.String() != w.id || string(e.Sender) != w.sender || e.SenderName != w.name ||
					e.Topic != w.topic || string(e.Verb) != w.verb || e.Text != w.text || e.FromBot || e.OtherBot {
					t.Errorf("event %d = %+v\nwant %+v", i, e, w)
				}
			}
			if ev[0].ChatName != "general" {
				t.Errorf("chat name %q, want general", ev[0].ChatName)
			}
		})
	}
}

func TestMessageAndAppMentionStoredOnceAsMention(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	ts := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "<@UBOT> help", Mention: true})
	s.WaitFor(t, "both envelopes acknowledged", func() bool { return acked(s) == 2 })
	// The host stores messages once per (chat, id), like the gateway: the
	// second delivery is a duplicate, and both said mention.
	ev := host.Events()
	if len(ev) != 1 || ev[0].ID.String() != ts || ev[0].Verb != adapters.VerbMention || ev[0].Text != "@switchboard help" {
		t.Fatalf("stored %+v; want one mention %s", ev, ts)
	}
}

func acked(s *slacktest.Server) int {
	n := 0
	for _, e := range s.Envelopes() {
		if e.Acked {
			n++
		}
	}
	return n
}

func TestAckOnlyAfterStored(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	entered, release := make(chan string, 4), make(chan error)
	host.DeliverFunc = func(ctx context.Context, m adapters.Inbound) (int64, error) {
		entered <- m.ID.String()
		select {
		case err := <-release:
			return 0, err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	start(t, s, slack.ModeSocket, host)

	first := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "one"})
	if id := <-entered; id != first {
		t.Fatalf("delivering %s, want %s", id, first)
	}
	// Deliver is blocked: the fake has seen no ack (an ack would have been
	// written before Deliver was called).
	if n := acked(s); n != 0 {
		t.Fatalf("%d envelopes acknowledged while Deliver blocks", n)
	}
	release <- errors.New("database is locked") // not stored: no ack
	second := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "two"})
	<-entered
	release <- nil
	s.WaitFor(t, "one envelope acknowledged", func() bool { return acked(s) == 1 })
	envs := s.Envelopes()
	if len(envs) != 2 || envs[0].Acked || !envs[1].Acked {
		t.Fatalf("envelopes %+v: want the failed one unacknowledged, the stored one acknowledged", envs)
	}
	// Slack redelivers the unacknowledged envelope; now it is stored.
	s.Redeliver()
	if id := <-entered; id != first {
		t.Fatalf("redelivered %s, want %s", id, first)
	}
	release <- nil
	s.WaitFor(t, "two envelopes acknowledged", func() bool { return acked(s) == 2 })
	ids := []string{}
	for _, e := range host.Events() {
		ids = append(ids, e.ID.String())
	}
	if strings.Join(ids, ",") != second+","+first {
		t.Fatalf("stored %v, want %s then %s", ids, second, first)
	}
}

// Deleting a message that has thread replies leaves a tombstone: Slack
// sends message_changed whose message has subtype "tombstone" and the text
// "This message was deleted." (from USLACKBOT). That is a delete: the
// stored message is marked deleted, its text not replaced by the notice.
func TestThreadParentDeletedIsADelete(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	ts := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "incident: db down"})
	post(t, s, slacktest.Post{Channel: "C1", User: "U2", Text: "on it", ThreadTS: ts})
	host.WaitEvents(t, 2)
	prev := map[string]any{"type": "message", "user": "U1", "text": "incident: db down", "ts": ts, "thread_ts": ts, "reply_count": 1}
	tomb := map[string]any{"type": "message", "subtype": "tombstone", "user": "USLACKBOT", "text": "This message was deleted.", "hidden": true,
		"ts": ts, "thread_ts": ts, "reply_count": 1}
	if _, status, err := s.Emit(map[string]any{"type": "message", "subtype": "message_changed", "channel": "C1", "channel_type": "channel",
		"hidden": true, "message": tomb, "previous_message": prev, "event_ts": "1795740999.000100", "ts": "1795740999.000100"}); err != nil || status >= 300 {
		t.Fatalf("emit: %d %v", status, err)
	}
	e := host.WaitEvents(t, 3)[2]
	if e.Kind != adapters.KindDelete || e.ID.String() != ts || e.Chat != "slack:T1/channel/C1" {
		t.Errorf("the tombstone came as %s of %s in %s (text %q); want the delete of %s", e.Kind.Name(), e.ID, e.Chat, e.Text, ts)
	}
}

func TestEditsDeletesReactionsBots(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	ts := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "typo"})
	if err := s.UserEdits("C1", ts, "fixed"); err != nil {
		t.Fatal(err)
	}
	if err := s.UserReacts("C1", ts, "U2", "thumbsup"); err != nil {
		t.Fatal(err)
	}
	if err := s.UserDeletes("C1", ts); err != nil {
		t.Fatal(err)
	}
	other := post(t, s, slacktest.Post{Channel: "C1", Text: "deploy done", Bot: true})
	own := post(t, s, slacktest.Post{Channel: "C1", User: slacktest.BotUser, Text: "my own echo"})
	ev := host.WaitEvents(t, 6)
	checks := []struct {
		what string
		ok   bool
	}{
		{"message", ev[0].Kind == "" && ev[0].Text == "typo"},
		{"edit", ev[1].Kind == adapters.KindEdit && ev[1].ID.String() == ts && ev[1].Text == "fixed"},
		{"reaction", ev[2].Kind == adapters.KindReaction && ev[2].ID.String() == ts && ev[2].Reaction == "thumbsup" && ev[2].Sender == "slack:T1/user/U2"},
		{"delete", ev[3].Kind == adapters.KindDelete && ev[3].ID.String() == ts && ev[3].Chat == "slack:T1/channel/C1"},
		{"other bot", ev[4].ID.String() == other && ev[4].OtherBot && !ev[4].FromBot},
		{"own echo", ev[5].ID.String() == own && ev[5].FromBot && !ev[5].OtherBot},
	}
	for i, c := range checks {
		if !c.ok {
			t.Errorf("%s: %+v", c.what, ev[i])
		}
	}
}

func TestFilesInAndOut(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	a := start(t, s, slack.ModeSocket, host)
	post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "the log", File: &slacktest.File{Name: "app.log", MIME: "text/plain", Data: []byte("line 1\n")}})
	ev := host.WaitEvents(t, 1)[0]
	if len(ev.Attachments) != 1 || ev.Attachments[0].Name != "app.log" || ev.Attachments[0].Size != 7 ||
		strings.Contains(ev.Attachments[0].Ref, "/") || strings.Contains(ev.Attachments[0].Ref, "xox") {
		t.Fatalf("attachments %+v: want app.log with an opaque file id", ev.Attachments)
	}
	rc, err := a.Download(t.Context(), ev.Attachments[0])
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "line 1\n" {
		t.Fatalf("downloaded %q", data)
	}

	content := "report body"
	id, err := a.SendFile(t.Context(), adapters.Outbound{Chat: "slack:T1/channel/C1", Text: "**the** report", Topic: ev.ID.String()},
		adapters.File{Name: "report.txt", Size: int64(len(content)), Content: strings.NewReader(content)})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Calls("files.getUploadURLExternal")) != 1 || len(s.Calls("files.completeUploadExternal")) != 1 {
		t.Fatal("the external upload flow was not used")
	}
	var found bool
	for _, m := range s.Messages("C1") {
		if m.TS == id.String() && len(m.Files) == 1 {
			found = true
			if string(m.Files[0].Data) != content || m.ThreadTS != ev.ID.String() || m.Text != "*the* report" {
				t.Errorf("uploaded %+v: want the bytes in thread %s with the caption", m, ev.ID)
			}
		}
	}
	if !found {
		t.Fatalf("no message %s holds the file", id)
	}
}

func TestOutboundVerbs(t *testing.T) {
	s := slacktest.New(t)
	a := start(t, s, slack.ModeSocket, adaptertest.NewHost())
	ctx, chat := t.Context(), adapters.JID("slack:T1/channel/C1")
	parent := s.AddMessage("C1", "U1", "question", "")

	inThread, err := a.Send(ctx, adapters.Outbound{Chat: chat, Text: "in the topic", Topic: parent})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := a.Send(ctx, adapters.Outbound{Chat: chat, Text: "a reply", ReplyTo: adapters.MessageID(parent)})
	if err != nil {
		t.Fatal(err)
	}
	dmQ := s.AddMessage("D1", "U1", "dm question", "")
	dmReply, err := a.Send(ctx, adapters.Outbound{Chat: "slack:T1/dm/D1", Text: "dm answer", ReplyTo: adapters.MessageID(dmQ)})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range s.Messages("D1") {
		if m.TS == dmReply.String() && m.ThreadTS != "" {
			t.Errorf("a DM reply went into a thread: %+v", m)
		}
	}
	ref := adapters.MessageRef{Chat: chat, ID: reply, Topic: parent}
	for _, step := range []struct {
		verb string
		err  error
	}{
		{"edit", a.Edit(ctx, ref, "an _edited_ reply")},
		{"like", a.React(ctx, ref, ":white_check_mark:")},
		{"pin", a.Pin(ctx, ref)},
	} {
		if step.err != nil {
			t.Fatalf("%s: %v", step.verb, step.err)
		}
	}
	msgs := map[string]slacktest.Msg{}
	for _, m := range s.Messages("C1") {
		msgs[m.TS] = m
	}
	if m := msgs[inThread.String()]; m.ThreadTS != parent {
		t.Errorf("send with topic: %+v, want thread %s", m, parent)
	}
	if m := msgs[reply.String()]; m.ThreadTS != parent || m.Text != "an _edited_ reply" || !m.Pinned ||
		len(m.Reactions) != 1 || m.Reactions[0] != "white_check_mark" {
		t.Errorf("reply after edit, like, pin: %+v", m)
	}
	// The plain fallback drops the markup but still escapes what Slack
	// reads in any text: <!channel> must not ping the channel.
	s.RejectFormatting()
	plain, err := a.Send(ctx, adapters.Outbound{Chat: chat, Text: "**bold** claim <!channel> & co"})
	if err != nil {
		t.Fatalf("send after refused formatting: %v", err)
	}
	const escaped = "bold claim &lt;!channel&gt; &amp; co"
	for _, m := range s.Messages("C1") {
		if m.TS == plain.String() && m.Text != escaped {
			t.Errorf("resent as %q; want %q", m.Text, escaped)
		}
	}
	s.RejectFormatting()
	if err := a.Edit(ctx, adapters.MessageRef{Chat: chat, ID: plain}, "**bold** claim <!channel> & co"); err != nil {
		t.Fatalf("edit after refused formatting: %v", err)
	}
	updates := s.Calls("chat.update")
	if last := updates[len(updates)-1].Form; last.Get("text") != escaped || last.Get("mrkdwn") != "false" {
		t.Errorf("edit fell back to text %q mrkdwn=%q; want %q with mrkdwn=false", last.Get("text"), last.Get("mrkdwn"), escaped)
	}
	if err := a.Unpin(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, ref); err != nil {
		t.Fatal(err)
	}
	for _, m := range s.Messages("C1") {
		if m.TS == reply.String() && (m.Pinned || !m.Deleted) {
			t.Errorf("after unpin and delete: %+v", m)
		}
	}
}

func TestRateLimitAndPermanentErrors(t *testing.T) {
	s := slacktest.New(t)
	a := start(t, s, slack.ModeSocket, adaptertest.NewHost())
	ctx := t.Context()
	s.RateLimit(3 * time.Second)
	_, err := a.Send(ctx, adapters.Outbound{Chat: "slack:T1/channel/C1", Text: "hi"})
	var ra *adapters.RetryAfterError
	if !errors.As(err, &ra) || ra.Wait != 3*time.Second {
		t.Fatalf("send under 429: %v; want RetryAfterError of 3s", err)
	}
	for code, hint := range map[string]string{"not_in_channel": "/invite", "is_archived": "unarchive", "channel_not_found": "/invite"} {
		s.SetChannelError("G1", code)
		_, err := a.Send(ctx, adapters.Outbound{Chat: "slack:T1/group/G1", Text: "hi"})
		if !errors.Is(err, adapters.ErrPermanent) || !strings.Contains(err.Error(), hint) {
			t.Errorf("%s: %v; want a permanent error saying %s", code, err, hint)
		}
	}
}

func TestBadTokens(t *testing.T) {
	for _, c := range []struct {
		bot, app bool
		key      string
	}{
		{true, false, "adapters.slack.bot_token"},
		{false, true, "adapters.slack.app_token"},
	} {
		s := slacktest.New(t)
		s.SetBadTokens(c.bot, c.app)
		a := newAdapter(s, slack.ModeSocket)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		err := a.Run(ctx, adaptertest.NewHost())
		cancel()
		if !errors.Is(err, adapters.ErrBadToken) || !strings.Contains(err.Error(), c.key) {
			t.Errorf("run with a bad token: %v; want ErrBadToken naming %s", err, c.key)
		}
	}
}

func TestDisconnectWarningReconnects(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	var logs testlog.Buffer
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: s.URL(),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	adaptertest.Start(t, a, host)
	// The client can report connected before the fake's handler holds
	// the connection.
	s.WaitFor(t, "the first connection", func() bool { return s.Connections() == 1 })
	for i, reason := range []string{"warning", "refresh_requested"} {
		s.WarnDisconnect(reason)
		s.WaitFor(t, fmt.Sprintf("a reconnection after disconnect %q", reason), func() bool { return s.Connections() == i+2 })
	}
	s.Disconnect() // and an abrupt drop
	s.WaitFor(t, "a reconnection after the drop", func() bool { return s.Connections() == 4 })
	ts := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "still there?"})
	if ev := host.WaitEvents(t, 1); ev[0].ID.String() != ts {
		t.Fatalf("after reconnecting got %+v", ev)
	}
	if out := logs.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") ||
		!strings.Contains(out, "slack socket mode reconnected") {
		t.Errorf("routine reconnects logged as problems (or not at all):\n%s", out)
	}
	states, _ := host.States()
	for _, st := range states {
		if st == adapters.StateFailed {
			t.Fatalf("states %v: a routine reconnect is not a failure", states)
		}
	}
}

func TestBackfillAfterDowntime(t *testing.T) {
	for _, mode := range []string{slack.ModeSocket, slack.ModeEvents} {
		t.Run(mode, func(t *testing.T) {
			s := slacktest.New(t)
			parent := s.AddMessage("C1", "U1", "old thread", "")
			last := s.AddMessage("C1", "U2", "last stored", "")
			// While the bot was away:
			a1 := s.AddMessage("C1", "U1", "missed one", "")
			r1 := s.AddMessage("C1", "U2", "missed reply", parent)
			a2 := s.AddMessage("C1", "U1", "<@UBOT> missed two", "")
			host := adaptertest.NewHost()
			host.Chats = []adapters.ChatCursor{{Chat: "slack:T1/channel/C1", LastID: adapters.MessageID(last), Last: time.Now().Add(-time.Minute)}}
			start(t, s, mode, host)
			ev := host.WaitEvents(t, 3)
			got := map[string]adapters.Inbound{}
			for _, e := range ev {
				got[e.ID.String()] = e
			}
			if len(ev) != 3 || !got[a1].Backfilled || got[r1].Topic != parent || got[a2].Verb != adapters.VerbMention {
				t.Fatalf("backfilled %+v; want %s, %s (thread %s), %s (mention)", ev, a1, r1, parent, a2)
			}
			if _, dup := got[last]; dup {
				t.Fatal("the last stored message was delivered again")
			}
		})
	}
}

func TestSlackUnreachableAtStartIsRetried(t *testing.T) {
	s := slacktest.New(t)
	s.Outage("auth.test", 1)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host) // waits for connected
	states, _ := host.States()
	if !slices.Contains(states, adapters.StateBackingOff) || slices.Contains(states, adapters.StateFailed) {
		t.Fatalf("states %v: want backing_off then connected, never failed", states)
	}
}

func TestSocketModeReplayedEnvelopeStoredOnce(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	ts := s.AddMessage("C1", "U1", "hello", "")
	if err := s.UserReacts("C1", ts, "U2", "tada"); err != nil {
		t.Fatal(err)
	}
	acks := func(n int) func() bool {
		return func() bool { e := s.Envelopes(); return len(e) == 1 && e[0].Acks == n }
	}
	s.WaitFor(t, "reaction not acknowledged", acks(1))
	s.Replay()
	s.WaitFor(t, "replayed envelope not acknowledged", acks(2))
	// The host does not de-duplicate reactions: only the event_id does.
	if ev := host.Events(); len(ev) != 1 || ev[0].Reaction != "tada" {
		t.Fatalf("stored %+v; want the reaction once", ev)
	}
}

// TestAPIURLWithoutTrailingSlash: CONTRACT §2 gives Slack's api_url as the
// Web API base with a trailing slash (http://host:port/api/); one written
// without it means the same base. slack-go appends method names to the
// base as it is, so "http://host:port/api" reached /apichat.postMessage,
// and the config refused it outright; it is completed instead.
func TestAPIURLWithoutTrailingSlash(t *testing.T) {
	s := slacktest.New(t)
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
		APIURL: strings.TrimSuffix(s.URL(), "/"), PingInterval: 10 * time.Second, PostInterval: 10 * time.Millisecond})
	adaptertest.Start(t, a, adaptertest.NewHost())
	id, err := a.Send(t.Context(), adapters.Outbound{Chat: "slack:T1/channel/C1", Text: "hello"})
	if err != nil {
		t.Fatalf("send with api_url %q: %v", strings.TrimSuffix(s.URL(), "/"), err)
	}
	if msgs := s.Messages("C1"); len(msgs) != 1 || msgs[0].TS != id.String() {
		t.Errorf("C1 holds %+v; want the message %s", msgs, id)
	}
}

// TestMentionOfAnotherUserIsNoMention: a mention is <@BOT> or <@BOT|name>.
// The check looked for the prefix "<@BOT", so a mention of a user whose id
// starts with the bot's (<@UBOT2>) was taken for the bot's and started a
// turn (CONTRACT §4: verb mention when the bot is mentioned).
func TestMentionOfAnotherUserIsNoMention(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeSocket, host)
	other := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "ask <@" + slacktest.BotUser + "2> about it"})
	named := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + slacktest.BotUser + "|switchboard> help"})
	ev := host.WaitEvents(t, 2)
	if ev[0].ID.String() != other || ev[0].Verb != adapters.VerbMessage {
		t.Errorf("a mention of <@%s2>: %+v; want verb message", slacktest.BotUser, ev[0])
	}
	if ev[1].ID.String() != named || ev[1].Verb != adapters.VerbMention {
		t.Errorf("<@%s|switchboard>: %+v; want verb mention", slacktest.BotUser, ev[1])
	}
}

// A server without conversations.info (a proxy, a test server that serves
// only the calls of sending) still gets the adapter's sends: the check that
// a JID's kind is its conversation's (address) is skipped when Slack will
// not say, as the call itself then fails wherever the bot cannot see the
// conversation. Where Slack answers, a JID of the wrong kind is still
// refused.
func TestSendsWithoutConversationInfo(t *testing.T) {
	s := slacktest.New(t)
	s.NoConversationInfo()
	a := start(t, s, slack.ModeSocket, adaptertest.NewHost())
	for _, jid := range []adapters.JID{"slack:T1/channel/C1", "slack:T1/group/G1", "slack:T1/dm/D1"} {
		if _, err := a.Send(t.Context(), adapters.Outbound{Chat: jid, Text: "to " + string(jid)}); err != nil {
			t.Errorf("send to %s: %v; want it sent", jid, err)
		}
	}
	for _, ch := range []string{"C1", "G1", "D1"} {
		if n := len(s.Messages(ch)); n != 1 {
			t.Errorf("%s holds %d messages; want 1", ch, n)
		}
	}

	s2 := slacktest.New(t)
	b := start(t, s2, slack.ModeSocket, adaptertest.NewHost())
	if _, err := b.Send(t.Context(), adapters.Outbound{Chat: "slack:T1/dm/C1", Text: "x"}); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("send to slack:T1/dm/C1, a public channel: %v; want it refused", err)
	}
}

// A conversations.info that fails for the moment (Slack's internal_error,
// which a retry may mend) leaves the kind unchecked for now: the call is
// an error to retry, as a 5xx's, and nothing goes out under a JID that
// names the conversation as another kind. Once Slack answers, the check
// refuses the JID.
func TestConversationInfoFailingForNowSendsNothing(t *testing.T) {
	s := slacktest.New(t)
	a := start(t, s, slack.ModeSocket, adaptertest.NewHost())
	for _, code := range []string{"internal_error", "fatal_error", "service_unavailable", "request_timeout"} {
		s.FailConversationInfo(code)
		_, err := a.Send(t.Context(), adapters.Outbound{Chat: "slack:T1/dm/C1", Text: "x"})
		if err == nil || errors.Is(err, adapters.ErrPermanent) {
			t.Errorf("conversations.info answering %s: send to slack:T1/dm/C1 (a public channel): %v; want an error to retry", code, err)
		}
	}
	if n := len(s.Messages("C1")); n != 0 {
		t.Errorf("C1 holds %d messages sent as slack:T1/dm/C1; want none", n)
	}
	s.FailConversationInfo("")
	if _, err := a.Send(t.Context(), adapters.Outbound{Chat: "slack:T1/dm/C1", Text: "x"}); !errors.Is(err, adapters.ErrPermanent) {
		t.Errorf("send to slack:T1/dm/C1 once Slack answers: %v; want it refused", err)
	}
}

// A reply of bare markup, whose rendering shows nothing ("[]()", "#"), is
// still delivered, as its own text: Slack refuses a message without text
// for good (no_text), and the reply was lost.
func TestSendNothingShownFallsBack(t *testing.T) {
	s := slacktest.New(t)
	a := start(t, s, slack.ModeSocket, adaptertest.NewHost())
	for _, text := range []string{"[]()", "#"} {
		if _, err := a.Send(t.Context(), adapters.Outbound{Chat: "slack:T1/channel/C1", Text: text}); err != nil {
			t.Errorf("send %q: %v; want it delivered", text, err)
		}
	}
	if got := s.Messages("C1"); len(got) != 2 || strings.TrimSpace(got[0].Text) == "" || strings.TrimSpace(got[1].Text) == "" {
		t.Errorf("channel holds %+v; want both replies, each showing something", got)
	}
}
