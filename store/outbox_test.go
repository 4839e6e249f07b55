package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// farFuture is a time every item is due at.
var farFuture = time.UnixMilli(1 << 62)

func addOutbox(t *testing.T, s *Store, key, chat string, folder groups.Folder, kind OutboxKind) OutboxItem {
	t.Helper()
	it, err := s.AddOutbox(context.Background(), OutboxItem{Key: key, Kind: kind, Folder: folder, ChatJID: adapters.JID(chat), Text: "text of " + key})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

func keys(items []OutboxItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

func TestAddOutboxKeyIsIdempotent(t *testing.T) {
	s := newStore(t)
	a := addOutbox(t, s, "k", "web:a", "", "")
	b, err := s.AddOutbox(context.Background(), OutboxItem{Key: "k", ChatJID: "web:b", Text: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != a.ID || b.ChatJID != "web:a" || a.Kind != "send" || a.Status != "pending" {
		t.Fatalf("second add with the same key: %+v (first %+v)", b, a)
	}
}

// DueOutbox offers each chat's oldest unfinished item only, so replies stay
// in order and a waiting chat does not hold up the others.
func TestDueOutboxOneHeadPerChat(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a1 := addOutbox(t, s, "a1", "web:a", "", "")
	addOutbox(t, s, "a2", "web:a", "", "")
	b1 := addOutbox(t, s, "b1", "web:b", "", "")
	addOutbox(t, s, "b2", "web:b", "", "")
	addOutbox(t, s, "c1", "web:c", "", "")
	due := func() []string {
		items, err := s.DueOutbox(ctx, farFuture, 100)
		if err != nil {
			t.Fatal(err)
		}
		return keys(items)
	}
	if got := due(); !slices.Equal(got, []string{"a1", "b1", "c1"}) {
		t.Fatalf("due %v", got)
	}
	if ok, _ := s.ClaimOutbox(ctx, a1.ID); !ok {
		t.Fatal("claim failed")
	}
	if ok, _ := s.ClaimOutbox(ctx, a1.ID); ok {
		t.Fatal("claimed twice")
	}
	if ok, _ := s.ClaimOutbox(ctx, b1.ID); !ok {
		t.Fatal("claim failed")
	}
	if err := s.OutboxRetry(ctx, b1.ID, farFuture.Add(time.Millisecond), "rate limited"); err != nil {
		t.Fatal(err)
	}
	// a1 is being sent, b1 waits for its retry: only c1 is due.
	if got := due(); !slices.Equal(got, []string{"c1"}) {
		t.Fatalf("due while heads are busy: %v", got)
	}
	if err := s.OutboxSent(ctx, a1.ID, "p1", nil); err != nil {
		t.Fatal(err)
	}
	if got := due(); !slices.Equal(got, []string{"a2", "c1"}) {
		t.Fatalf("due after a1 was sent: %v", got)
	}
}

// NextOutboxAt must not count items queued behind a busy or waiting head:
// they are not due before the head is done, and a sender sleeping until
// "the next due item" would otherwise spin.
func TestNextOutboxAtCountsOnlyChatHeads(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	a1 := addOutbox(t, s, "a1", "web:a", "", "")
	addOutbox(t, s, "a2", "web:a", "", "")
	if ok, _ := s.ClaimOutbox(ctx, a1.ID); !ok {
		t.Fatal("claim failed")
	}
	if _, ok, err := s.NextOutboxAt(ctx); err != nil || ok {
		t.Fatalf("head being sent: next due reported (%v, %v); want none", ok, err)
	}
	if err := s.OutboxRetry(ctx, a1.ID, time.UnixMilli(5000), "rate limited"); err != nil {
		t.Fatal(err)
	}
	if at, ok, err := s.NextOutboxAt(ctx); err != nil || !ok || !at.Equal(time.UnixMilli(5000)) {
		t.Fatalf("head waiting until 5000: next due %v (%v, %v)", at, ok, err)
	}
}

// Items left in "sending" by a crash fail instead of being resent; the
// folder that sent a reply gets a notice, the operator and notices do not.
// Items to a platform whose messages show only once stored (resend) are
// pending again, with the parts they had sent.
func TestRecoverOutbox(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, it := range []OutboxItem{
		addOutbox(t, s, "reply", "telegram:user/1", "main", "reply"),
		addOutbox(t, s, "operator", "slack:T1/channel/C1", "", "send"),
		addOutbox(t, s, "notice", "discord:1/2", "main", "notice"),
		addOutbox(t, s, "web", "web:a", "main", "reply"),
	} {
		if ok, _ := s.ClaimOutbox(ctx, it.ID); !ok {
			t.Fatal("claim failed")
		}
	}
	web, _ := s.OutboxByKey(ctx, "web")
	if err := s.OutboxPartSent(ctx, web.ID, 1, "b-1", nil); err != nil {
		t.Fatal(err)
	}
	addOutbox(t, s, "waiting", "web:d", "main", "reply")
	failed, requeued, err := s.RecoverOutbox(ctx, "web", "matrix")
	if err != nil || failed != 3 || requeued != 1 {
		t.Fatalf("recovered %d failed, %d requeued (%v); want 3 and 1", failed, requeued, err)
	}
	for _, k := range []string{"reply", "operator", "notice"} {
		it, _ := s.OutboxByKey(ctx, k)
		if it.Status != "failed" || !strings.Contains(it.Error, "restart") {
			t.Errorf("%s: %s %q", k, it.Status, it.Error)
		}
	}
	if it, _ := s.OutboxByKey(ctx, "web"); it.Status != "pending" || it.PartsSent != 1 || it.Error != "" {
		t.Errorf("web item: %s, %d parts sent, %q; want pending again after its first part", it.Status, it.PartsSent, it.Error)
	}
	if it, _ := s.OutboxByKey(ctx, "waiting"); it.Status != "pending" {
		t.Errorf("a pending item was touched: %s", it.Status)
	}
	b := Batch{Folder: "main"}
	if err := s.loadBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if len(b.Notices) != 1 || b.Notices[0].ChatJID != "telegram:user/1" || b.Notices[0].Text != "text of reply" {
		t.Fatalf("notices %+v; want one for the interrupted reply", b.Notices)
	}
	if failed, requeued, _ := s.RecoverOutbox(ctx, "web"); failed+requeued != 0 {
		t.Fatalf("second recovery found %d and %d", failed, requeued)
	}
}

// SpokenSince lists the delivered messages of folders, with where the
// platform stored them; not the gateway's notices, the operator's sends,
// or what is not delivered (yet).
func TestSpokenSince(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	start := time.Now().Add(-time.Second)
	send := func(it OutboxItem, storedTopic string) {
		t.Helper()
		if ok, err := s.ClaimOutbox(ctx, it.ID); !ok || err != nil {
			t.Fatal("claim failed", err)
		}
		bot := &Message{ChatJID: it.ChatJID, ID: adapters.MessageID("b-" + it.Key), Sender: "slack:T/user/B", Text: it.Text, Topic: storedTopic, FromBot: true}
		if err := s.OutboxSent(ctx, it.ID, bot.ID, bot); err != nil {
			t.Fatal(err)
		}
	}
	send(addOutbox(t, s, "threaded", "slack:T/channel/C", "main", "reply"), "171.1")
	send(addOutbox(t, s, "notice", "web:a", "main", "notice"), "")
	send(addOutbox(t, s, "operator", "web:b", "", "send"), "")
	addOutbox(t, s, "pending", "web:c", "main", "reply")
	got, err := s.SpokenSince(ctx, start)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Folder != "main" || got[0].ChatJID != "slack:T/channel/C" || got[0].Topic != "" || got[0].Stored != "171.1" {
		t.Fatalf("spoken %+v; want the threaded reply alone, addressed to no topic and stored in 171.1", got)
	}
	if got, _ := s.SpokenSince(ctx, time.Now().Add(time.Minute)); len(got) != 0 {
		t.Errorf("spoken since a minute ahead: %+v", got)
	}
}

// What a start reads of the outbox by time is found through an index, not
// by reading every reply ever sent (outbox rows are kept): the chats an
// interrupted turn answered through a tool, and where the bot spoke within
// engage_ttl.
func TestOutboxReadsByTimeUseAnIndex(t *testing.T) {
	s := newStore(t)
	for _, q := range []struct {
		sql, index string
		args       []any
	}{
		{outboxChatsSinceSQL, "USING INDEX outbox_created (created_ms>?)", []any{"main", "mcp:", "mcp:", 0}},
		{spokenSinceSQL, "USING INDEX outbox_sent_done (done_ms>?)", []any{OutboxNotice, 0}},
	} {
		if p := queryPlan(t, s, q.sql, q.args...); !strings.Contains(p, q.index) {
			t.Errorf("plan of %q:\n%s\nwant it to search %s", q.sql, p, q.index)
		}
	}
}
