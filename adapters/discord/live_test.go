package discord

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
)

// A live reply is one message, sent where Send puts it (the channel as a
// reply, or the thread) and edited after, each showing the cut Markdown
// closed; an update that shows the same sends nothing; the final is its
// last edit; no edit lets @everyone or a role ping.
func TestLiveEditsInChannelAndThread(t *testing.T) {
	for _, tc := range []struct {
		name, topic, channel string
	}{{"channel", "", discordtest.Channel}, {"thread", discordtest.Thread, discordtest.Thread}} {
		t.Run(tc.name, func(t *testing.T) {
			f := discordtest.New(t)
			a := start(t, f, adaptertest.NewHost(), nil)
			ctx := t.Context()
			q := f.UserPosts(discordtest.Post{Channel: tc.channel, Content: "deploy it", MentionBot: true})
			l, err := a.StartLive(ctx, adapters.Outbound{Chat: channelChat, Topic: tc.topic, ReplyTo: adapters.MessageID(q)}, "turn-1")
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range []string{"Deploying **now", "Deploying **now**:\n```sh\nmake deploy", "Deploying **now**:\n```sh\nmake deploy"} {
				if err := l.Update(ctx, u); err != nil {
					t.Fatalf("update %q: %v", u, err)
				}
			}
			const final = "Deploying **now**:\n```sh\nmake deploy\n```\n@everyone it is done <@&701>"
			id, err := l.Finish(ctx, final)
			if err != nil {
				t.Fatal(err)
			}
			shown := f.Shown(discordtest.Channel, discordtest.Thread)
			want := []string{"Deploying **now**", "Deploying **now**:\n```sh\nmake deploy\n```", final}
			if len(shown) != len(want) {
				t.Fatalf("the channel showed %+v; want %q", shown, want)
			}
			for i, s := range shown {
				if s.ID != string(id) || s.Channel != tc.channel || s.Content != want[i] {
					t.Errorf("shown %d: %+v; want message %s in %s reading %q", i, s, id, tc.channel, want[i])
				}
				if !strings.Contains(s.AllowedJSON, `"parse":["users"]`) || strings.Contains(s.AllowedJSON, "everyone") || strings.Contains(s.AllowedJSON, "roles") {
					t.Errorf("shown %d with allowed_mentions %s; want users only", i, s.AllowedJSON)
				}
			}
			var bot []discordtest.Msg
			for _, m := range f.Messages(tc.channel) {
				if m.AuthorID == discordtest.BotID {
					bot = append(bot, m)
				}
			}
			if len(bot) != 1 || bot[0].Content != final || (tc.topic == "" && bot[0].ReplyTo != q) {
				t.Errorf("%s holds %+v from the bot; want one message reading the final, replying to %s in the channel", tc.channel, bot, q)
			}
			if err := l.Update(ctx, "more"); !errors.Is(err, adapters.ErrLiveEnded) {
				t.Errorf("update after finish: %v; want ErrLiveEnded", err)
			}
		})
	}
}

// Abort deletes the live message; the final then comes another way.
func TestLiveAbortDeletes(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	ctx := t.Context()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: channelChat}, "turn-1")
	if err := l.Update(ctx, "Thinking"); err != nil {
		t.Fatal(err)
	}
	if err := l.Abort(ctx); err != nil {
		t.Fatal(err)
	}
	if msgs := f.Messages(discordtest.Channel); len(msgs) != 1 || !msgs[0].Deleted {
		t.Errorf("after abort the channel holds %+v; want the live message deleted", msgs)
	}
	if _, err := l.Finish(ctx, "done"); !errors.Is(err, adapters.ErrLiveEnded) {
		t.Errorf("finish after abort: %v; want ErrLiveEnded", err)
	}
}

// An update at the length limit whose closed fence would not fit shows
// the text as it is instead of failing.
func TestLiveUpdateAtTheLimit(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	ctx := t.Context()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: channelChat}, "turn-1")
	text := "```\n" + strings.Repeat("x", maxText-4)
	if err := l.Update(ctx, text); err != nil {
		t.Fatalf("update of %d characters: %v", len(text), err)
	}
	if msgs := f.Messages(discordtest.Channel); len(msgs) != 1 || msgs[0].Content != text {
		t.Errorf("the channel holds %d messages; want one showing the text as it is", len(msgs))
	}
}

// A live update never waits out a rate limit with its text: a 429 comes
// back as a RetryAfterError with nothing shown (discordgo would wait and
// send that text late), an update while the channel's bucket is spent is
// refused at once without a request, and the update after the wait shows
// the newest text; the final still arrives.
func TestLiveUpdatesNotHeldByRateLimit(t *testing.T) {
	f := discordtest.New(t)
	a := start(t, f, adaptertest.NewHost(), nil)
	ctx := t.Context()
	l, _ := a.StartLive(ctx, adapters.Outbound{Chat: channelChat}, "turn-1")
	if err := l.Update(ctx, "one"); err != nil {
		t.Fatal(err)
	}
	f.RateLimit(300 * time.Millisecond)
	var ra *adapters.RetryAfterError
	if err := l.Update(ctx, "one two"); !errors.As(err, &ra) || ra.Wait <= 0 {
		t.Fatalf("an update answered 429: %v; want a RetryAfterError, nothing shown", err)
	}
	if err := l.Update(ctx, "one two three"); !errors.As(err, &ra) || ra.Wait <= 0 {
		t.Fatalf("an update while the bucket is spent: %v; want a RetryAfterError", err)
	}
	if _, next := f.RateLimited(); !next.IsZero() {
		t.Fatalf("a request came %s after the 429 (the update waited in the limiter); want none before the wait", next.Sub(time.Now()))
	}
	time.Sleep(ra.Wait) // as the gateway does
	if err := l.Update(ctx, "one two three four"); err != nil {
		t.Fatalf("the update after the wait: %v", err)
	}
	if _, err := l.Finish(ctx, "all done"); err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, s := range f.Shown(discordtest.Channel) {
		shown = append(shown, s.Content)
	}
	if !slices.Equal(shown, []string{"one", "one two three four", "all done"}) {
		t.Errorf("the channel showed %q; want the first update, the newest after the wait, the final", shown)
	}
}
