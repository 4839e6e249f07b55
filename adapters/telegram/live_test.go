package telegram

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/telegram/telegramtest"
)

// In a private chat a live reply is drafts (one draft_id, in the topic),
// rendered without raw markup mid-fence; the final is one new message, and
// the drafts are no messages.
func TestLiveDraftsInPrivateChat(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	ctx := t.Context()
	l, err := a.StartLive(ctx, adapters.Outbound{Chat: dmChat, Topic: "5"}, "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Running **tests", "Running **tests**:\n\n```go\nfunc TestX(t", "Running **tests**:\n\n```go\nfunc TestX(t"} {
		if err := l.Update(ctx, text); err != nil {
			t.Fatalf("update %q: %v", text, err)
		}
	}
	drafts := f.Drafts(telegramtest.UserID)
	if len(drafts) != 2 {
		t.Fatalf("%d drafts; want 2 (an update that renders the same sends nothing): %+v", len(drafts), drafts)
	}
	for _, d := range drafts {
		if d.ID == 0 || d.ID != drafts[0].ID || d.Thread != 5 || strings.Contains(d.Text, "**") || strings.Contains(d.Text, "```") {
			t.Errorf("draft %+v; want draft_id %d in thread 5, no raw markup", d, drafts[0].ID)
		}
	}
	if !strings.Contains(drafts[1].Raw, "<pre><code") {
		t.Errorf("the draft cut inside a code fence is %q; want the code block closed", drafts[1].Raw)
	}
	if n := len(f.Messages(telegramtest.UserID)); n != 0 {
		t.Fatalf("%d messages before the final; drafts are not messages", n)
	}
	id, err := l.Finish(ctx, "Running **tests**: all passed")
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.Messages(telegramtest.UserID)
	if len(msgs) != 1 || messageID(msgs[0].ID) != id || msgs[0].Text != "Running tests: all passed" || msgs[0].Thread != 5 {
		t.Errorf("chat holds %+v; want the final once, as %s, in thread 5", msgs, id)
	}
	if n := len(f.Calls("editMessageText")); n != 0 {
		t.Errorf("%d edits; a private chat's live reply is drafts", n)
	}
}

// In a group a live reply is one message, sent at the first update and
// edited after; the final is its last edit; an aborted one is deleted.
func TestLiveEditsInGroup(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	ctx := t.Context()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: groupChat, Topic: "42"}, "turn-1")
	for _, text := range []string{"Step one", "Step one, step `two"} {
		if err := l.Update(ctx, text); err != nil {
			t.Fatalf("update %q: %v", text, err)
		}
	}
	id, err := l.Finish(ctx, "Step one, step `two`: done")
	if err != nil {
		t.Fatal(err)
	}
	msgs := f.Messages(telegramtest.GroupID)
	if len(msgs) != 1 || messageID(msgs[0].ID) != id || msgs[0].Text != "Step one, step two: done" || msgs[0].Thread != 42 {
		t.Errorf("group holds %+v; want one message %s reading the final, in topic 42", msgs, id)
	}
	if s, e, d := len(f.Calls("sendMessage")), len(f.Calls("editMessageText")), len(f.Calls("sendMessageDraft")); s != 1 || e != 2 || d != 0 {
		t.Errorf("%d sends, %d edits, %d drafts; want 1 send, 2 edits, no draft", s, e, d)
	}

	aborted, _ := a.StartLive(ctx, adapters.Outbound{Chat: groupChat}, "turn-2")
	if err := aborted.Update(ctx, "Thinking"); err != nil {
		t.Fatal(err)
	}
	if err := aborted.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if msgs := f.Messages(telegramtest.GroupID); len(msgs) != 2 || !msgs[1].Deleted {
		t.Errorf("after abort the group holds %+v; want the live message deleted", msgs)
	}
}

// Where Telegram refuses drafts, the live reply edits a message instead,
// and the adapter stops asking for drafts.
func TestLiveFallsBackWhenDraftsRefused(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	ctx := t.Context()
	f.RefuseDrafts()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: dmChat}, "turn-1")
	for _, text := range []string{"One", "One two"} {
		if err := l.Update(ctx, text); err != nil {
			t.Fatalf("update %q after drafts were refused: %v", text, err)
		}
	}
	id, err := l.Finish(ctx, "One two three")
	if err != nil {
		t.Fatal(err)
	}
	if msgs := f.Messages(telegramtest.UserID); len(msgs) != 1 || messageID(msgs[0].ID) != id || msgs[0].Text != "One two three" {
		t.Errorf("chat holds %+v; want one message, edited to the final", msgs)
	}
	next, _ := a.StartLive(ctx, adapters.Outbound{Chat: dmChat}, "turn-2")
	if err := next.Update(ctx, "Again"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls("sendMessageDraft")); n != 1 {
		t.Errorf("%d draft requests; want 1 (refused once, then not asked again)", n)
	}
}

// Live replies keep to the adapter's pacing without sending stale text: an
// update to a chat that is not due yet sends nothing and asks to be tried
// again after the wait (a RetryAfterError), when the caller sends its
// newest text; the final is never refused, it waits its turn. In a group
// (PerGroup) and a private chat (PerChat) alike.
func TestLiveUpdatesPaced(t *testing.T) {
	f := telegramtest.New(t)
	const gap = 300 * time.Millisecond
	a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), PollTimeout: 2 * time.Second, PerChat: gap, PerGroup: gap, Global: -1})
	adaptertest.Start(t, a, adaptertest.NewHost())
	ctx := t.Context()
	for _, c := range []struct {
		chat   adapters.JID
		id     int64
		method string
	}{{groupChat, telegramtest.GroupID, "editMessageText"}, {dmChat, telegramtest.UserID, "sendMessageDraft"}} {
		l, _ := a.StartLive(ctx, adapters.Outbound{Chat: c.chat}, "turn-"+string(c.chat))
		if err := l.Update(ctx, "first"); err != nil {
			t.Fatal(err)
		}
		before := len(f.Calls(c.method))
		err := l.Update(ctx, "first second")
		var ra *adapters.RetryAfterError
		if !errors.As(err, &ra) || ra.Wait <= 0 || ra.Wait > gap || len(f.Calls(c.method)) != before {
			t.Fatalf("%s: an update before the chat is due: %v, %d requests; want a RetryAfterError of at most %s, nothing sent",
				c.chat, err, len(f.Calls(c.method))-before, gap)
		}
		time.Sleep(ra.Wait) // as the gateway does
		if err := l.Update(ctx, "first second third"); err != nil {
			t.Fatalf("%s: the update after the wait: %v", c.chat, err)
		}
		if _, err := l.Finish(ctx, "all done"); err != nil { // not due yet: it waits
			t.Fatalf("%s: a final before the chat is due: %v; want it sent after the wait", c.chat, err)
		}
		if shown := f.Shown(c.id); !slices.Equal(shown, []string{"first", "first second third", "all done"}) {
			t.Errorf("%s showed %q; want the first update, the newest after the wait, the final", c.chat, shown)
		}
	}
}

// An edit that renders as the message already shows (two Markdown texts
// can: "done " and "done") is no error: Telegram's "message is not
// modified" would otherwise end a live reply edited in place, or fail its
// final.
func TestEditNotModifiedIsNoError(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	ctx := t.Context()
	id, err := a.Send(ctx, adapters.Outbound{Chat: groupChat, Text: "done"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Edit(ctx, adapters.MessageRef{Chat: groupChat, ID: id}, "done "); err != nil {
		t.Errorf("edit to what the message shows: %v; want no error", err)
	}
	if n := len(f.Calls("editMessageText")); n != 1 {
		t.Errorf("%d edit calls; want the one Telegram refused as not modified", n)
	}
}

// A private chat's drafts are paced apart from its messages: the final
// that follows the last draft does not wait for the draft's turn (with a
// pace of an hour between two requests of one kind, it is sent at once),
// while the next draft still waits for its own.
func TestLiveFinalNotHeldByDrafts(t *testing.T) {
	f := telegramtest.New(t)
	a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), PollTimeout: 2 * time.Second, PerChat: time.Hour, Global: -1})
	adaptertest.Start(t, a, adaptertest.NewHost())
	l, _ := a.StartLive(t.Context(), adapters.Outbound{Chat: dmChat}, "turn-1")
	if err := l.Update(t.Context(), "first"); err != nil {
		t.Fatal(err)
	}
	var ra *adapters.RetryAfterError
	if err := l.Update(t.Context(), "first second"); !errors.As(err, &ra) {
		t.Fatalf("a second draft within the pace: %v; want a RetryAfterError", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := l.Finish(ctx, "all done"); err != nil {
		t.Fatalf("the final after a draft: %v; want it sent at once, not after the draft's pace", err)
	}
	if msgs := f.Messages(telegramtest.UserID); len(msgs) != 1 || msgs[0].Text != "all done" {
		t.Errorf("chat holds %+v; want the final", msgs)
	}
}

// A live update that the bot-wide pace (Global, Telegram's thirty a second
// in all) would hold is refused like one its chat's pace would hold: a
// RetryAfterError of at most the wait, nothing sent, rather than blocking
// the caller until the bot's next slot with text that is stale by then.
// A draft in a private chat and an edited message in a group alike.
func TestLiveUpdatesHeldByTheGlobalPace(t *testing.T) {
	for _, c := range []struct {
		chat, other adapters.JID
		method      string
	}{{dmChat, groupChat, "sendMessageDraft"}, {groupChat, dmChat, "sendMessage"}} {
		t.Run(c.method, func(t *testing.T) {
			f := telegramtest.New(t)
			const global = time.Hour
			a := New(Options{Token: telegramtest.Token, APIURL: f.URL(), PollTimeout: 2 * time.Second, PerChat: -1, PerGroup: -1, Global: global})
			adaptertest.Start(t, a, adaptertest.NewHost())
			if _, err := a.Send(t.Context(), adapters.Outbound{Chat: c.other, Text: "elsewhere"}); err != nil { // the bot's slot, taken
				t.Fatal(err)
			}
			l, err := a.StartLive(t.Context(), adapters.Outbound{Chat: c.chat}, "turn-1")
			if err != nil {
				t.Fatal(err)
			}
			before := len(f.Calls(c.method))
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err = l.Update(ctx, "first")
			var ra *adapters.RetryAfterError
			if !errors.As(err, &ra) || ra.Wait <= 0 || ra.Wait > global {
				t.Fatalf("an update while the bot's pace holds every chat: %v; want a RetryAfterError of at most %s", err, global)
			}
			if n := len(f.Calls(c.method)) - before; n != 0 {
				t.Errorf("%d %s requests; want none", n, c.method)
			}
		})
	}
}

// A 429 answered to a live reply's draft pauses the whole bot for its
// retry_after: the next update is refused until then (NotDue), and the
// final, sent at once, waits for it before it reaches Telegram.
func TestRateLimitedDraftHoldsTheFinal(t *testing.T) {
	f := telegramtest.New(t)
	a := start(t, f, adaptertest.NewHost())
	ctx := t.Context()
	l, err := a.StartLive(ctx, adapters.Outbound{Chat: dmChat}, "turn-1")
	if err != nil {
		t.Fatal(err)
	}
	f.RateLimit(time.Second)
	var ra *adapters.RetryAfterError
	if err := l.Update(ctx, "Working"); !errors.As(err, &ra) {
		t.Fatalf("update under a 429: %v; want a RetryAfterError", err)
	}
	if err := l.Update(ctx, "Working on it"); !errors.As(err, &ra) {
		t.Errorf("the update right after a 429: %v; want it refused until the retry_after passed", err)
	}
	if _, err := l.Finish(ctx, "Done."); err != nil {
		t.Fatal(err)
	}
	at, next := f.RateLimited()
	if gap := next.Sub(at); gap < 900*time.Millisecond {
		t.Errorf("the final reached Telegram %s after a 429 asking to wait 1s", gap)
	}
}
