package adapters_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
)

type history map[adapters.JID][]adapters.Inbound

func (h history) FetchHistory(_ context.Context, chat adapters.JID, q adapters.HistoryQuery) ([]adapters.Inbound, error) {
	if chat == "x:broken" {
		return nil, errors.New("boom")
	}
	var out []adapters.Inbound
	after := q.After == ""
	for _, m := range h[chat] {
		if after && !m.Time.Before(q.Since) && len(out) < q.Limit {
			out = append(out, m)
		}
		if m.ID == q.After {
			after = true
		}
	}
	return out, nil
}

func TestBackfill(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	msg := func(chat adapters.JID, id adapters.MessageID, ago time.Duration) adapters.Inbound {
		return adapters.Inbound{Chat: chat, ID: id, Sender: "x:user/1", Text: id.String(), Time: now.Add(-ago)}
	}
	h := history{
		"x:a": {msg("x:a", "1", 30*time.Hour), msg("x:a", "2", 2*time.Hour), msg("x:a", "3", time.Minute)},
		"x:b": {msg("x:b", "old", 25*time.Hour), msg("x:b", "new", time.Hour)},
	}
	host := adaptertest.NewHost()
	host.Chats = []adapters.ChatCursor{
		{Chat: "x:a", LastID: "2", Last: now.Add(-2 * time.Hour)},
		{Chat: "x:broken"},
		{Chat: "x:b"}, // nothing stored yet: the last 24 hours
	}
	n, err := adapters.Backfill(context.Background(), host, h, now)
	if err == nil {
		t.Error("a failing chat was not reported")
	}
	var got []string
	for _, ev := range host.Events() {
		if !ev.Backfilled {
			t.Errorf("%s not marked backfilled", ev.ID)
		}
		got = append(got, string(ev.Chat)+"/"+ev.ID.String())
	}
	if n != 2 || len(got) != 2 || got[0] != "x:a/3" || got[1] != "x:b/new" {
		t.Errorf("backfilled %d: %v; want x:a/3 and x:b/new", n, got)
	}
}
