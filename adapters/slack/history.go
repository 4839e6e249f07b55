package slack

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/slack-go/slack"

	"switchboard/adapters"
)

// Bounds of one history read.
const (
	pageSize       = 200 // Slack's recommended page size
	maxHistory     = 1000
	maxThreadsScan = 20 // threads with new replies read per backfill of a chat
)

// FetchHistory reads a chat's messages from Slack, oldest first. With a
// Topic it reads that thread (conversations.replies); otherwise the main
// timeline (conversations.history), following the cursor up to q.Limit. A
// backfill query (After or Since set) also reads the threads whose newest
// reply is newer than the bound, since Slack lists thread replies only
// under their parent.
func (a *Adapter) FetchHistory(ctx context.Context, chat adapters.JID, q adapters.HistoryQuery) ([]adapters.Inbound, error) {
	channel, kind, err := a.address(ctx, "fetch_history", chat)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 || limit > maxHistory {
		limit = maxHistory
	}
	oldest := ""
	if q.After != "" {
		oldest = string(q.After)
	}
	if !q.Since.IsZero() && (oldest == "" || tsTime(oldest).Before(q.Since)) {
		oldest = tsOf(q.Since.Add(-time.Microsecond)) // Since is inclusive, oldest is not
	}
	var msgs []slack.Message
	if q.Topic != "" {
		msgs, err = a.replies(ctx, channel, q.Topic, oldest, string(q.Before), limit)
	} else {
		msgs, err = a.history(ctx, channel, oldest, string(q.Before), limit)
		if err == nil && oldest != "" {
			msgs, err = a.withThreads(ctx, channel, oldest, msgs)
		}
	}
	if err != nil {
		return nil, classify("fetch_history", chat, err)
	}
	slices.SortFunc(msgs, func(x, y slack.Message) int { return compareTS(x.Timestamp, y.Timestamp) })
	msgs = slices.CompactFunc(msgs, func(x, y slack.Message) bool { return x.Timestamp == y.Timestamp })
	if len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:] // the newest
	}
	team, _, _ := a.identity()
	if t, _, ok := cutTeam(chat); ok {
		team = t
	}
	channelType := map[string]string{"dm": "im", "group": "group", "channel": "channel"}[kind]
	out := make([]adapters.Inbound, 0, len(msgs))
	for _, m := range msgs {
		if !keep(m.SubType) {
			continue
		}
		out = append(out, a.fromMsg(ctx, team, channel, channelType, m.Msg))
	}
	return out, nil
}

func keep(subtype string) bool {
	switch subtype {
	case "", "bot_message", "file_share", "thread_broadcast", "me_message":
		return true
	}
	return false
}

func (a *Adapter) history(ctx context.Context, channel, oldest, latest string, limit int) ([]slack.Message, error) {
	var out []slack.Message
	p := &slack.GetConversationHistoryParameters{ChannelID: channel, Oldest: oldest, Latest: latest, Limit: min(limit, pageSize)}
	for len(out) < limit {
		if err := a.tiers.wait(ctx, "conversations.history", channel); err != nil {
			return nil, err
		}
		res, err := a.api.GetConversationHistoryContext(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, res.Messages...)
		if !res.HasMore || res.ResponseMetaData.NextCursor == "" {
			break
		}
		p.Cursor = res.ResponseMetaData.NextCursor
	}
	return out, nil
}

func (a *Adapter) replies(ctx context.Context, channel, thread, oldest, latest string, limit int) ([]slack.Message, error) {
	var out []slack.Message
	p := &slack.GetConversationRepliesParameters{ChannelID: channel, Timestamp: thread, Oldest: oldest, Latest: latest, Limit: min(limit, pageSize)}
	for len(out) < limit {
		if err := a.tiers.wait(ctx, "conversations.replies", channel); err != nil {
			return nil, err
		}
		msgs, more, cursor, err := a.api.GetConversationRepliesContext(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			if oldest == "" || compareTS(m.Timestamp, oldest) > 0 {
				out = append(out, m) // the parent comes with every page
			}
		}
		if !more || cursor == "" {
			break
		}
		p.Cursor = cursor
	}
	return out, nil
}

// withThreads adds the replies newer than oldest of the threads that have
// them: their parents are found in the last BackfillWindow of the timeline.
func (a *Adapter) withThreads(ctx context.Context, channel, oldest string, msgs []slack.Message) ([]slack.Message, error) {
	from := oldest
	if w := tsOf(time.Now().Add(-adapters.BackfillWindow)); compareTS(w, from) < 0 {
		from = w
	}
	parents := msgs
	if from != oldest {
		var err error
		if parents, err = a.history(ctx, channel, from, "", pageSize); err != nil {
			return nil, err
		}
	}
	n := 0
	for _, p := range parents {
		if p.ReplyCount == 0 || p.LatestReply == "" || compareTS(p.LatestReply, oldest) <= 0 {
			continue
		}
		if n++; n > maxThreadsScan {
			break
		}
		rs, err := a.replies(ctx, channel, p.Timestamp, oldest, "", adapters.BackfillMax)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, rs...)
	}
	return msgs, nil
}

// compareTS orders Slack timestamps numerically.
func compareTS(x, y string) int {
	return tsTime(x).Compare(tsTime(y))
}

func cutTeam(chat adapters.JID) (team, rest string, ok bool) {
	room := chat.Room()
	for i := range len(room) {
		if room[i] == '/' {
			return room[:i], room[i+1:], true
		}
	}
	return "", "", false
}

// runBackfill walks the routed chats once; concurrent calls skip while one runs.
func (a *Adapter) runBackfill(ctx context.Context, host adapters.Host) {
	if !a.backfilling.TryLock() {
		return
	}
	defer a.backfilling.Unlock()
	n, err := adapters.Backfill(ctx, host, patientFetcher{a}, time.Now())
	if err != nil && ctx.Err() == nil {
		a.log.Warn("slack backfill incomplete", "delivered", n, "err", err)
		return
	}
	if n > 0 {
		a.log.Info("slack backfill", "delivered", n)
	}
}

// patientFetcher waits out rate limits during backfill (a few times) instead
// of giving up on the chat.
type patientFetcher struct{ a *Adapter }

func (p patientFetcher) FetchHistory(ctx context.Context, chat adapters.JID, q adapters.HistoryQuery) ([]adapters.Inbound, error) {
	for try := 0; ; try++ {
		msgs, err := p.a.FetchHistory(ctx, chat, q)
		var ra *adapters.RetryAfterError
		if err == nil || !errors.As(err, &ra) || try == 3 {
			return msgs, err
		}
		t := time.NewTimer(ra.Wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}
