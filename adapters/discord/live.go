package discord

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
)

var _ adapters.Streamer = (*Adapter)(nil)

// StartLive implements adapters.Streamer. Discord has no drafts: the live
// reply is an adapters.EditLive, one message sent at the first update
// where Send puts it (the thread of the topic, as a reply to m.ReplyTo)
// and edited at the next ones, its mentions restricted as Send's, carrying
// m.Buttons as components while it runs (adapters.ButtonCarrier); the
// final is its last edit, without them, and Abort deletes it. Its requests do not wait
// out a rate limit with their text: an update while the channel's bucket
// is spent is refused with adapters.NotDue's RetryAfterError before any
// request (due), and a 429 comes back as a RetryAfterError instead of
// being retried by discordgo with the same text; the caller's next
// update carries its newest. It does not call Discord; a chat that is not
// Discord's wraps adapters.ErrPermanent.
func (a *Adapter) StartLive(_ context.Context, m adapters.Outbound, turn string) (adapters.LiveReply, error) {
	ch, err := channelOf(m.Chat, m.Topic)
	if err != nil {
		return nil, err
	}
	noRetry := discordgo.WithRetryOnRatelimit(false)
	return &adapters.EditLive{Out: m,
		Send: func(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
			return a.send(ctx, m, noRetry)
		},
		Edit: func(ctx context.Context, ref adapters.MessageRef, text string) error {
			return a.edit(ctx, ref, text, noRetry)
		},
		SendButtons: func(ctx context.Context, m adapters.Outbound, b []adapters.Button) (adapters.MessageID, error) {
			return a.sendButtons(ctx, m, b, noRetry)
		},
		EditButtons: func(ctx context.Context, ref adapters.MessageRef, text string, b []adapters.Button) error {
			return a.editButtons(ctx, ref, text, b, noRetry)
		},
		Delete: a.Delete, Render: partial,
		Due: func(edit bool) time.Duration { return a.due(ch, edit) },
	}, nil
}

// liveBusy is how long an update waits for another request in its bucket
// to be answered (discordgo holds a bucket for the whole request).
const liveBusy = 50 * time.Millisecond

// due is how long discordgo's rate limiter would hold a message sent to
// channel ch now (edit: an edit of one), without taking a turn: its
// bucket's reset while the bucket is spent, the global limit's, or the
// adapter's hold after a 429.
func (a *Adapter) due(ch string, edit bool) time.Duration {
	s, err := a.session()
	if err != nil {
		return 0 // the request fails at once
	}
	key := discordgo.EndpointChannelMessages(ch) // discordgo's bucket keys for these two requests
	if edit {
		key = discordgo.EndpointChannelMessage(ch, "")
	}
	held := a.held.Left()
	b := s.Ratelimiter.GetBucket(key)
	if !b.TryLock() {
		return max(held, liveBusy)
	}
	defer b.Unlock()
	return max(held, s.Ratelimiter.GetWaitTime(b, 1))
}

// partial is an unfinished text with markdown.Partial closing what the
// cut left open (a code fence, a code span, emphasis), or the text as it
// is when the closers would not fit in a message.
func partial(text string) string {
	if src := markdown.Partial(text); utf8.RuneCountInString(src) <= maxText {
		return src
	}
	return text
}
