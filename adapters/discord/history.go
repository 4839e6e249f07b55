package discord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
)

// FetchHistory reads a channel's (or thread's) messages through REST,
// oldest first.
func (a *Adapter) FetchHistory(ctx context.Context, chat adapters.JID, q adapters.HistoryQuery) ([]adapters.Inbound, error) {
	s, err := a.session()
	if err != nil {
		return nil, err
	}
	ch, err := a.address(ctx, s, chat, q.Topic)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	// Asked with after, Discord answers the limit messages right after it:
	// the oldest. The newest are wanted (backfill after downtime in a busy
	// channel must reach the question asked a minute ago), so the newest
	// are asked for and those not after q.After left out.
	msgs, err := s.ChannelMessages(ch, limit, string(q.Before), "", "", discordgo.WithContext(ctx))
	if err != nil {
		return nil, classify(chat, err)
	}
	var out []adapters.Inbound
	for i := len(msgs) - 1; i >= 0; i-- { // Discord answers newest first
		m := msgs[i]
		if q.After != "" && !newerID(m.ID, string(q.After)) {
			continue
		}
		if m.GuildID == "" {
			m.GuildID = guildOf(chat)
		}
		if !q.Since.IsZero() && m.Timestamp.Before(q.Since) {
			continue
		}
		if ev, ok := a.message(ctx, m, adapters.KindMessage); ok {
			out = append(out, ev)
		}
	}
	return out, nil
}

// backfill stores what routed channels, and the threads under them that
// the bot knows, received while it was away.
func (a *Adapter) backfill(ctx context.Context, host adapters.Host) {
	now := time.Now()
	n, err := adapters.Backfill(ctx, host, a, now)
	if m, terr := a.backfillThreads(ctx, host, now); terr != nil {
		err = errors.Join(err, terr)
	} else {
		n += m
	}
	if err != nil && ctx.Err() == nil {
		a.log.Warn("discord backfill incomplete", "err", err)
	}
	if n > 0 {
		a.log.Info("discord backfilled messages missed while disconnected", "count", n)
	}
}

// backfillThreads fetches, for each routed channel, its known threads'
// messages newer than the channel's newest stored one (Discord ids grow
// with time across channels, so one cursor serves the threads too).
func (a *Adapter) backfillThreads(ctx context.Context, host adapters.Host, now time.Time) (int, error) {
	chats, err := host.RoutedChats(ctx)
	if err != nil {
		return 0, err
	}
	a.mu.Lock()
	threads := map[adapters.JID][]string{}
	for id, p := range a.parents {
		jid := chatJID(p.guild, p.channel)
		threads[jid] = append(threads[jid], id)
	}
	a.mu.Unlock()
	n := 0
	var errs []error
	for _, c := range chats {
		for _, th := range threads[c.Chat] {
			q := adapters.HistoryQuery{Topic: th, After: c.LastID, Since: now.Add(-adapters.BackfillWindow), Limit: adapters.BackfillMax}
			msgs, err := a.FetchHistory(ctx, c.Chat, q)
			if err != nil {
				errs = append(errs, fmt.Errorf("backfill thread %s of %s: %w", th, c.Chat, err))
				continue
			}
			for _, m := range msgs {
				m.Backfilled = true
				if _, err := host.Deliver(ctx, m); err == nil {
					n++
				}
			}
		}
	}
	return n, errors.Join(errs...)
}

// newerID reports whether snowflake id is newer than than: Discord's ids
// are decimal integers that grow with time, compared without parsing (a
// longer one is larger).
func newerID(id, than string) bool {
	if len(id) != len(than) {
		return len(id) > len(than)
	}
	return id > than
}
