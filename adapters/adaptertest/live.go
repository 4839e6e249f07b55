package adaptertest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
)

// testLive: a live reply, in a group (in its topic) and in a DM where the
// platform has them, shows each update in order; an update refused by a 429
// is a RetryAfterError and shows once sent again after it; the final is one
// message, under the id Finish returned, shown once; nothing of the live
// reply shows after it, and Update after Finish is ErrLiveEnded.
func testLive(t *testing.T, p Platform) {
	a, host := started(t, p)
	s, ok := a.(adapters.Streamer)
	if !ok {
		t.Skip("the adapter has no native live replies")
	}
	lw, ok := p.(LiveWatcher)
	if !ok {
		t.Fatalf("%s is an adapters.Streamer but its Platform is no adaptertest.LiveWatcher", a.Name())
	}
	group, topic := p.Group()
	chats := []struct {
		name  string
		chat  adapters.JID
		topic string
	}{{"group", group, topic}}
	if dm := p.DM(); dm != "" {
		chats = append(chats, struct {
			name  string
			chat  adapters.JID
			topic string
		}{"direct message", dm, ""})
	}
	for _, c := range chats {
		t.Run(c.name, func(t *testing.T) {
			uid := p.UserPosts(t, Post{Chat: c.chat, Topic: c.topic, Text: "count for me", Mention: true})
			waitEvent(t, host, "the question", func(ev adapters.Inbound) bool { return ev.ID == uid })
			liveReply(t, p, a, s, lw.WatchLive(t, c.chat), adapters.Outbound{Chat: c.chat, Topic: c.topic, ReplyTo: uid, Key: "live/" + c.name})
		})
	}
}

func liveReply(t *testing.T, p Platform, a adapters.Adapter, s adapters.Streamer, shown func() []string, m adapters.Outbound) {
	ctx := t.Context()
	live, err := s.StartLive(ctx, m, "turn-"+m.Key)
	if err != nil {
		t.Fatalf("start live: %v", err)
	}
	updates := []string{"Counting: one", "Counting: one two", "Counting: one two three"}
	for i, u := range updates {
		if i == len(updates)-1 {
			p.RateLimit(50 * time.Millisecond)
		}
		paced(t, "update "+u, func() error { return live.Update(ctx, u) })
		waitShown(t, shown, u)
	}
	const final, finalShown = "Counting: one two three **four**", "Counting: one two three four"
	var id adapters.MessageID
	paced(t, "finish", func() (err error) { id, err = live.Finish(ctx, final); return err })
	if err := live.Update(ctx, "Counting: too late"); !errors.Is(err, adapters.ErrLiveEnded) {
		t.Errorf("update after finish: %v; want ErrLiveEnded", err)
	}
	if again, err := live.Finish(ctx, final); err != nil || again != id {
		t.Errorf("finish again: %q, %v; want %q and nothing sent", again, err, id)
	}
	if err := live.Abort(ctx); err != nil {
		t.Errorf("abort after finish: %v; want nil (nothing to do)", err)
	}
	// A message sent after the live reply shows after it: whatever shows
	// in between came after the final.
	const after = "Next: a message after the reply"
	if _, err := a.Send(ctx, adapters.Outbound{Chat: m.Chat, Topic: m.Topic, Text: after, Key: m.Key + "/after"}); err != nil {
		t.Fatalf("send after the live reply: %v", err)
	}
	waitShown(t, shown, after)
	want := append(slices.Clone(updates), finalShown, after)
	if got := trimAll(shown()); !slices.Equal(got, want) {
		t.Errorf("the chat showed, in order:\n%q\nwant the updates in order, the final once, then the next message:\n%q", got, want)
	}
	var finals []Message
	for _, msg := range p.BotMessages(m.Chat) {
		if strings.Contains(msg.Text, "Counting") && !msg.Deleted {
			finals = append(finals, msg)
		}
	}
	if len(finals) != 1 || finals[0].ID != id || strings.TrimSpace(finals[0].Text) != finalShown || finals[0].Topic != m.Topic {
		t.Errorf("the platform holds %+v; want one message %q reading %q in topic %q", finals, id, finalShown, m.Topic)
	}
}

// paced calls fn until it is not a RetryAfterError, waiting what each asks
// (the caller's pacing), and fails t on any other error.
func paced(t *testing.T, what string, fn func() error) {
	t.Helper()
	for try := 0; ; try++ {
		err := fn()
		var ra *adapters.RetryAfterError
		if !errors.As(err, &ra) || try == 5 {
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return
		}
		time.Sleep(ra.Wait)
	}
}

// waitShown waits until the newest text shown is text.
func waitShown(t *testing.T, shown func() []string, text string) {
	t.Helper()
	testwait.For(t, 10*time.Second, fmt.Sprintf("the chat to show %q", text), func() bool {
		s := shown()
		return len(s) > 0 && strings.TrimSpace(s[len(s)-1]) == text
	})
}

func trimAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = strings.TrimSpace(x)
	}
	return out
}
