package slack_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

const (
	c1    = adapters.JID("slack:T1/channel/C1")
	alice = adapters.JID("slack:T1/user/U1") // who asks (U1)
)

// liveSetup runs an adapter and has alice ask a question in C1 (in thread
// when not ""); it returns the question's ts once the adapter received it.
func liveSetup(t *testing.T, s *slacktest.Server, thread string) (*slack.Adapter, string) {
	t.Helper()
	host := adaptertest.NewHost()
	a := start(t, s, slack.ModeSocket, host)
	q := post(t, s, slacktest.Post{Channel: "C1", User: "U1", Text: "<@UBOT> run the tests", ThreadTS: thread})
	host.Wait(t, 10*time.Second, "the question", func(h *adaptertest.Host) bool {
		for _, ev := range h.Events() {
			if ev.ID.String() == q {
				return true
			}
		}
		return false
	})
	return a, q
}

func markdownTexts(calls []slacktest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Form.Get("markdown_text"))
	}
	return out
}

// A live reply in a channel is a Slack stream in the thread of the message
// it answers (a new thread under it, or the thread it was asked in), to its
// author: each update appends what it adds, the final stops the stream
// with the rest, and the streamed message is the one final message.
func TestLiveStreamsInThread(t *testing.T) {
	for _, tc := range []struct {
		name   string
		thread bool
	}{{"reply starts a thread", false}, {"asked in a thread", true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := slacktest.New(t)
			thread := ""
			if tc.thread {
				thread = s.AddMessage("C1", "U2", "incident", "")
			}
			a, q := liveSetup(t, s, thread)
			wantThread := q
			if tc.thread {
				wantThread = thread
			}
			ctx := t.Context()
			l, err := a.StartLive(ctx, adapters.Outbound{Chat: c1, Topic: thread, ReplyTo: adapters.MessageID(q), ReplyToSender: alice}, "turn-1")
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"Running **tests", "Running **tests**:\n\n```go\nfunc TestX(t", "Running **tests**:\n\n```go\nfunc TestX(t"} {
				if err := l.Update(ctx, u); err != nil {
					t.Fatalf("update %q: %v", u, err)
				}
			}
			final := "Running **tests**:\n\n```go\nfunc TestX(t *testing.T)\n```\nall passed"
			id, err := l.Finish(ctx, final)
			if err != nil {
				t.Fatal(err)
			}
			starts := s.Calls("chat.startStream")
			if len(starts) != 1 {
				t.Fatalf("%d chat.startStream calls; want 1", len(starts))
			}
			if f := starts[0].Form; f.Get("thread_ts") != wantThread || f.Get("recipient_user_id") != "U1" || f.Get("recipient_team_id") != "T1" {
				t.Errorf("stream started with thread_ts %q, recipient %q/%q; want thread %q, alice (U1) of T1",
					f.Get("thread_ts"), f.Get("recipient_user_id"), f.Get("recipient_team_id"), wantThread)
			}
			chunks := append(markdownTexts(starts), markdownTexts(s.Calls("chat.appendStream"))...)
			chunks = append(chunks, markdownTexts(s.Calls("chat.stopStream"))...)
			if got := strings.Join(chunks, ""); got != final || len(chunks) != 3 {
				t.Errorf("the stream carried %q (joined %q); want start, one append (the repeated update sends nothing), the rest at stop, adding up to the final", chunks, got)
			}
			if n, e := len(s.Calls("chat.postMessage")), len(s.Calls("chat.update")); n != 0 || e != 0 {
				t.Errorf("%d posts, %d edits; a streamed reply needs none", n, e)
			}
			var bot []slacktest.Msg
			for _, m := range s.Messages("C1") {
				if m.User == slacktest.BotUser {
					bot = append(bot, m)
				}
			}
			if len(bot) != 1 || bot[0].TS != string(id) || bot[0].Text != final || bot[0].ThreadTS != wantThread || !bot[0].Markdown || bot[0].Streaming {
				t.Errorf("C1 holds %+v from the bot; want one stopped stream %s reading the final in thread %s", bot, id, wantThread)
			}
		})
	}
}

// An update that does not extend what was streamed (the text was replaced)
// stops the stream and edits the streamed message; the final is its last
// edit.
func TestLiveStreamReplaced(t *testing.T) {
	s := slacktest.New(t)
	a, q := liveSetup(t, s, "")
	ctx := t.Context()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: c1, ReplyTo: adapters.MessageID(q), ReplyToSender: alice}, "turn-1")
	for _, u := range []string{"Looking", "Looking\n\n_running Bash: go test_", "Looking: found it"} {
		if err := l.Update(ctx, u); err != nil {
			t.Fatalf("update %q: %v", u, err)
		}
	}
	id, err := l.Finish(ctx, "Looking: found it, **fixed**")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Calls("chat.stopStream")); n != 1 {
		t.Errorf("%d chat.stopStream calls; want 1, at the replace", n)
	}
	edits := s.Calls("chat.update")
	if len(edits) != 2 || edits[0].Form.Get("ts") != string(id) || edits[1].Form.Get("text") != "Looking: found it, *fixed*" {
		t.Errorf("edits %+v; want two of the streamed message %s, the last the final in mrkdwn", edits, id)
	}
	msgs := s.Messages("C1")
	if last := msgs[len(msgs)-1]; len(msgs) != 2 || last.TS != string(id) || last.Markdown || last.Text != "Looking: found it, *fixed*" {
		t.Errorf("C1 holds %+v; want the question and the streamed message, edited to the final", msgs)
	}
}

// Where Slack refuses streams, a live reply is one message posted at the
// first update (rendered with markdown.Partial) and edited after, the final
// its last edit; the adapter does not ask for streams again.
func TestLiveFallsBackWhenStreamsRefused(t *testing.T) {
	s := slacktest.New(t)
	a, q := liveSetup(t, s, "")
	s.RefuseStreams("not_allowed")
	ctx := t.Context()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: c1, ReplyTo: adapters.MessageID(q), ReplyToSender: alice}, "turn-1")
	for _, u := range []string{"One **two", "One **two** three"} {
		if err := l.Update(ctx, u); err != nil {
			t.Fatalf("update %q after streams were refused: %v", u, err)
		}
	}
	id, err := l.Finish(ctx, "One **two** three four")
	if err != nil {
		t.Fatal(err)
	}
	posts := s.Calls("chat.postMessage")
	if len(posts) != 1 || posts[0].Form.Get("text") != "One *two*" || posts[0].Form.Get("thread_ts") != q {
		t.Errorf("posts %+v; want one, in the question's thread, the unfinished bold closed", posts)
	}
	msgs := s.Messages("C1")
	if last := msgs[len(msgs)-1]; len(msgs) != 2 || last.TS != string(id) || last.Text != "One *two* three four" {
		t.Errorf("C1 holds %+v; want one message, edited to the final", msgs)
	}
	if n := len(s.Calls("chat.update")); n != 2 {
		t.Errorf("%d edits; want 2", n)
	}
	next, _ := a.StartLive(ctx, adapters.Outbound{Chat: c1, ReplyTo: adapters.MessageID(q), ReplyToSender: alice}, "turn-2")
	if err := next.Update(ctx, "Again"); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Calls("chat.startStream")); n != 1 {
		t.Errorf("%d chat.startStream calls; want 1 (refused once, then not asked again)", n)
	}
}

// A stream never carries what Slack could take for a channel ping, even
// when the update cuts it after its "<"; Abort deletes the streamed message.
func TestLiveStreamDefangsAndAborts(t *testing.T) {
	s := slacktest.New(t)
	a, q := liveSetup(t, s, "")
	ctx := t.Context()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: c1, ReplyTo: adapters.MessageID(q), ReplyToSender: alice}, "turn-1")
	for _, u := range []string{"Tell everyone <", "Tell everyone <!channel> now"} {
		if err := l.Update(ctx, u); err != nil {
			t.Fatalf("update %q: %v", u, err)
		}
	}
	chunks := append(markdownTexts(s.Calls("chat.startStream")), markdownTexts(s.Calls("chat.appendStream"))...)
	if got := strings.Join(chunks, ""); got != "Tell everyone &lt;!channel> now" {
		t.Errorf("the stream carried %q (%q); want the ping escaped", got, chunks)
	}
	if err := l.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := s.Messages("C1")
	if len(msgs) != 2 || !msgs[1].Deleted {
		t.Errorf("after abort C1 holds %+v; want the streamed message deleted", msgs)
	}
	if _, err := l.Finish(ctx, "too late"); !errors.Is(err, adapters.ErrLiveEnded) {
		t.Error("finish after abort succeeded; want ErrLiveEnded")
	}
}

// A live update never waits in the adapter's pacing with its text: while
// the channel's posts are spent, the update that would post the live
// message (a stream started in the thread, or the message edited after)
// is refused with a RetryAfterError and posts nothing, and the update
// after the wait shows the newest text.
func TestLiveUpdatesNotHeldByPacing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		thread bool
		method string
	}{{"stream", true, "chat.startStream"}, {"edited message", false, "chat.postMessage"}} {
		t.Run(tc.name, func(t *testing.T) {
			s := slacktest.New(t)
			a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
				APIURL: s.URL(), PingInterval: 10 * time.Second, PostInterval: 300 * time.Millisecond})
			adaptertest.Start(t, a, adaptertest.NewHost())
			ctx := t.Context()
			out := adapters.Outbound{Chat: c1}
			if tc.thread {
				out.Topic = s.AddMessage("C1", "U1", "run the tests", "")
				out.ReplyTo, out.ReplyToSender = adapters.MessageID(out.Topic), alice
			}
			for i := range 5 { // the channel's burst of posts
				if _, err := a.Send(ctx, adapters.Outbound{Chat: c1, Text: fmt.Sprint("earlier ", i)}); err != nil {
					t.Fatal(err)
				}
			}
			l, _ := a.StartLive(ctx, out, "turn-1")
			before := len(s.Calls(tc.method))
			var ra *adapters.RetryAfterError
			if err := l.Update(ctx, "one"); !errors.As(err, &ra) || ra.Wait <= 0 || len(s.Calls(tc.method)) != before {
				t.Fatalf("an update while the posts are spent: %v, %d requests; want a RetryAfterError, nothing sent", err, len(s.Calls(tc.method))-before)
			}
			time.Sleep(ra.Wait) // as the gateway does
			if err := l.Update(ctx, "one two"); err != nil {
				t.Fatalf("the update after the wait: %v", err)
			}
			calls := s.Calls(tc.method)
			if len(calls) != before+1 {
				t.Fatalf("%d %s after the wait; want 1", len(calls)-before, tc.method)
			}
			if f := calls[len(calls)-1].Form; f.Get("markdown_text")+f.Get("text") != "one two" {
				t.Errorf("the live message began as %q; want the newest text %q", f.Get("markdown_text")+f.Get("text"), "one two")
			}
			if _, err := l.Finish(ctx, "one two three"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// After a restart (or for any message this adapter never received) the
// live reply still streams to whom it answers: the gateway passes the
// author of the message replied to (ReplyToSender), so the stream starts
// in its thread with that recipient rather than falling back to edits.
func TestLiveStreamsAfterRestart(t *testing.T) {
	s := slacktest.New(t)
	q := s.AddMessage("C1", "U1", "<@UBOT> run the tests", "") // asked before this adapter started
	a := start(t, s, slack.ModeSocket, adaptertest.NewHost())
	ctx := t.Context()
	l, err := a.StartLive(ctx, adapters.Outbound{Chat: c1, ReplyTo: adapters.MessageID(q), ReplyToSender: alice}, "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, "Running the tests"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Finish(ctx, "Running the tests: all passed"); err != nil {
		t.Fatal(err)
	}
	starts := s.Calls("chat.startStream")
	if len(starts) != 1 || starts[0].Form.Get("thread_ts") != q || starts[0].Form.Get("recipient_user_id") != "U1" || starts[0].Form.Get("recipient_team_id") != "T1" {
		t.Fatalf("chat.startStream calls %+v; want one in thread %s to alice (U1) of T1", starts, q)
	}
	if n := len(s.Calls("chat.postMessage")) + len(s.Calls("chat.update")); n != 0 {
		t.Errorf("%d posts and edits; a streamed reply needs none", n)
	}
}

// A live reply that is a message posted and edited (not a stream) carries
// the buttons it was started with (the turn's Stop button) as a Block Kit
// actions block from its first post and at every chat.update, also past a
// section's 3,000 characters; the final's edit takes them away. A stream
// carries none (the gateway shows them another way).
func TestLiveEditedMessageCarriesButtons(t *testing.T) {
	stop := adapters.Button{Label: "Stop", Data: "stop:t-7", Style: adapters.StyleDanger}
	long := "Three " + strings.Repeat("long line of output\n", 180) // > 3,000 characters, < MaxText
	for _, tc := range []struct {
		name    string
		refuse  bool
		replyTo bool
		carries bool
	}{
		{"in the channel", false, false, true},
		{"streams refused", true, true, true},
		{"a stream in the thread", false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := slacktest.New(t)
			a, q := liveSetup(t, s, "")
			if tc.refuse {
				s.RefuseStreams("not_allowed")
			}
			ctx := t.Context()
			out := adapters.Outbound{Chat: c1, Buttons: []adapters.Button{stop}}
			if tc.replyTo {
				out.ReplyTo, out.ReplyToSender = adapters.MessageID(q), alice
			}
			l, err := a.StartLive(ctx, out, "t-7")
			if err != nil {
				t.Fatal(err)
			}
			var ts string
			for _, u := range []string{"One", "One two", long} {
				if err := l.Update(ctx, u); err != nil {
					t.Fatalf("update: %v", err)
				}
				carries := l.(adapters.ButtonCarrier).CarriesButtons()
				if carries != tc.carries {
					t.Fatalf("CarriesButtons() = %v; want %v", carries, tc.carries)
				}
				ref, _, _ := l.(adapters.LiveShown).Shown()
				ts = string(ref.ID)
				m := message(t, s, ts)
				want := strings.TrimSpace(u)
				if tc.carries && (len(m.Buttons) != 1 || m.Buttons[0].Value != "stop:t-7" || m.Buttons[0].Style != "danger" || strings.TrimSpace(m.Text) != want) {
					t.Errorf("the live message reads %q with buttons %+v; want %d characters with the Stop button", m.Text, m.Buttons, len(want))
				}
				if !tc.carries && len(m.Buttons) != 0 {
					t.Errorf("the stream shows buttons %+v", m.Buttons)
				}
			}
			const final = "Done: four"
			id, err := l.Finish(ctx, final)
			if err != nil {
				t.Fatal(err)
			}
			if m := message(t, s, string(id)); m.Text != final || len(m.Buttons) != 0 || string(id) != ts {
				t.Errorf("the final %s reads %q with buttons %+v; want the live message %s reading %q without buttons", id, m.Text, m.Buttons, ts, final)
			}
		})
	}
}

// message is the message ts of C1.
func message(t *testing.T, s *slacktest.Server, ts string) slacktest.Msg {
	t.Helper()
	for _, m := range s.Messages("C1") {
		if m.TS == ts && !m.Deleted {
			return m
		}
	}
	t.Fatalf("no message %s in C1: %+v", ts, s.Messages("C1"))
	return slacktest.Msg{}
}

// A 429 answered to a stream's append pauses the whole adapter for its
// Retry-After: the next update is refused until then (NotDue), and the
// final, sent at once, waits for it before it reaches Slack.
func TestRateLimitedStreamHoldsTheFinal(t *testing.T) {
	s := slacktest.New(t)
	a, q := liveSetup(t, s, "")
	ctx := t.Context()
	l, err := a.StartLive(ctx, adapters.Outbound{Chat: c1, ReplyTo: adapters.MessageID(q), ReplyToSender: alice}, "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Update(ctx, "Running"); err != nil {
		t.Fatal(err)
	}
	s.RateLimit(time.Second)
	var ra *adapters.RetryAfterError
	if err := l.Update(ctx, "Running the"); !errors.As(err, &ra) {
		t.Fatalf("update under a 429: %v; want a RetryAfterError", err)
	}
	if err := l.Update(ctx, "Running the tests"); !errors.As(err, &ra) {
		t.Errorf("the update right after a 429: %v; want it refused until the Retry-After passed", err)
	}
	if _, err := l.Finish(ctx, "Running the tests: all passed"); err != nil {
		t.Fatal(err)
	}
	at, next := s.RateLimited()
	if gap := next.Sub(at); gap < 900*time.Millisecond {
		t.Errorf("the final reached Slack %s after a 429 asking to wait 1s", gap)
	}
}
