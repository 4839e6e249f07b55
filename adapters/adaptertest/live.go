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
// reply shows after it, and Update after Finish is ErrLiveEnded. A live
// reply that carries the buttons it was started with
// (adapters.ButtonCarrier) shows them while it runs; none are left after
// Finish.
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
			q := waitEvent(t, host, "the question", func(ev adapters.Inbound) bool { return ev.ID == uid })
			liveReply(t, p, a, s, lw.WatchLive(t, c.chat), adapters.Outbound{Chat: c.chat, Topic: c.topic, ReplyTo: uid, ReplyToSender: q.Sender, Key: "live/" + c.name,
				Buttons: []adapters.Button{liveStop}})
		})
	}
}

// liveStop is the button the live replies of testLive are started with.
var liveStop = adapters.Button{Label: "Stop", Data: "stop:t-conformance", Style: adapters.StyleDanger}

// liveMessages is the bot's messages in chat that hold text and are not deleted.
func liveMessages(p Platform, chat adapters.JID, text string) []Message {
	var out []Message
	for _, msg := range p.BotMessages(chat) {
		if strings.Contains(msg.Text, text) && !msg.Deleted {
			out = append(out, msg)
		}
	}
	return out
}

func liveReply(t *testing.T, p Platform, a adapters.Adapter, s adapters.Streamer, shown func() []string, m adapters.Outbound) {
	ctx := t.Context()
	live, err := s.StartLive(ctx, m, "turn-"+m.Key)
	if err != nil {
		t.Fatalf("start live: %v", err)
	}
	updates := []string{"Counting: one", "Counting: one two", "Counting: one two three"}
	const wait = 50 * time.Millisecond
	for i, u := range updates {
		if i == len(updates)-1 {
			p.RateLimit(wait)
		}
		paced(t, "update "+u, func() error { return live.Update(ctx, u) })
		waitShown(t, shown, u)
		if c, ok := live.(adapters.ButtonCarrier); ok && c.CarriesButtons() {
			if ms := liveMessages(p, m.Chat, u); len(ms) != 1 || !slices.ContainsFunc(ms[0].Buttons, func(b adapters.Button) bool { return b.Data == liveStop.Data }) {
				t.Errorf("the live reply carries its buttons (CarriesButtons) but the platform holds %+v; want one message reading %q with the Stop button", ms, u)
			}
		}
	}
	checkPaced(t, p, wait)
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
	finals := liveMessages(p, m.Chat, "Counting")
	if len(finals) != 1 || finals[0].ID != id || strings.TrimSpace(finals[0].Text) != finalShown || finals[0].Topic != m.Topic {
		t.Errorf("the platform holds %+v; want one message %q reading %q in topic %q", finals, id, finalShown, m.Topic)
	}
	if len(finals) == 1 && len(finals[0].Buttons) != 0 {
		t.Errorf("the final %q still shows buttons %+v; want none after Finish", finals[0].Text, finals[0].Buttons)
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

// checkPaced checks that the 429 the platform's fake answered reached the
// adapter and that the write came again only after the wait it asked for
// (the adapter waited, or returned a RetryAfterError the caller waited).
func checkPaced(t *testing.T, p Platform, wait time.Duration) {
	t.Helper()
	if features(p).NoRateLimits {
		return
	}
	rw, ok := p.(RateLimitWatcher)
	if !ok {
		t.Fatalf("the platform rate-limits but its Platform is no adaptertest.RateLimitWatcher")
	}
	at, next := rw.RateLimited()
	switch {
	case at.IsZero():
		t.Errorf("the fake answered no write with a 429: the live reply never hit the rate limit it was given")
	case next.IsZero():
		t.Errorf("no write after the 429: the update was lost")
	case next.Sub(at) < wait:
		t.Errorf("the write came again %s after the 429; want at least the %s it asked", next.Sub(at), wait)
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

// testLiveLong: a live reply three times the platform's length limit,
// continued in a new live reply each time the text settles a part (as the
// gateway does: adapters.LiveParts), arrives whole across messages: each
// part once, in order, as a final of that text is split; a 429 in the
// middle loses nothing.
func testLiveLong(t *testing.T, p Platform) {
	a, _ := started(t, p)
	s, ok := a.(adapters.Streamer)
	if !ok {
		t.Skip("the adapter has no native live replies")
	}
	l, ok := a.(adapters.Limiter)
	if !ok || l.Limits().MaxText == 0 {
		t.Skip("the platform declares no length limit")
	}
	lim := l.Limits()
	chat, topic := p.Group()
	ctx := t.Context()
	var b strings.Builder
	for i := 0; adapters.UTF16Len(b.String()) < 3*lim.MaxText; i++ {
		fmt.Fprintf(&b, "Line %04d of a long answer, with words enough to fill it.\n", i)
	}
	text := strings.TrimSpace(b.String())
	final := adapters.SplitRendered(text, lim.MaxText, lim.Measure)
	const wait = 50 * time.Millisecond
	start := func(n int) adapters.LiveReply {
		r, err := s.StartLive(ctx, adapters.Outbound{Chat: chat, Topic: topic, Key: fmt.Sprintf("long/%d", n)}, fmt.Sprintf("turn-long/%d", n))
		if err != nil {
			t.Fatalf("start live part %d: %v", n+1, err)
		}
		return r
	}
	live, done := start(0), 0
	var ids []adapters.MessageID
	step := max(len(text)/40, 1)
	for end := step; ; end += step {
		end = min(end, len(text))
		parts, settled := adapters.LiveParts(strings.TrimSpace(text[:end]), lim)
		for ; done < settled; done++ {
			var id adapters.MessageID
			paced(t, fmt.Sprint("finish part ", done+1), func() (err error) { id, err = live.Finish(ctx, parts[done]); return err })
			ids = append(ids, id)
			live = start(done + 1)
		}
		if end == len(text) {
			break
		}
		if end >= len(text)/2 && end-step < len(text)/2 {
			p.RateLimit(wait)
		}
		if done < len(parts) {
			paced(t, fmt.Sprint("update at ", end), func() error { return live.Update(ctx, parts[done]) })
		}
	}
	for ; done < len(final); done++ {
		var id adapters.MessageID
		paced(t, fmt.Sprint("finish part ", done+1), func() (err error) { id, err = live.Finish(ctx, final[done]); return err })
		ids = append(ids, id)
		if done < len(final)-1 {
			live = start(done + 1)
		}
	}
	checkPaced(t, p, wait)
	var got []Message
	for _, m := range p.BotMessages(chat) {
		if strings.Contains(m.Text, "of a long answer") && !m.Deleted {
			got = append(got, m)
		}
	}
	if len(final) < 3 || len(got) != len(final) {
		t.Fatalf("the platform holds %d messages of the reply; want its %d parts (3 or more), each once", len(got), len(final))
	}
	for i, m := range got {
		if strings.TrimSpace(m.Text) != final[i] || m.ID != ids[i] {
			t.Errorf("message %d (%s) reads %.40q...; want part %d under id %s", i+1, m.ID, m.Text, i+1, ids[i])
		}
	}
}
