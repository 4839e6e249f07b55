package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// runsBatch is one group commit of messages of several chats and topics,
// interleaved: runs of the same work, broken by a repeat within the batch,
// a message stored before, an unrouted message, other work (two items,
// another mode, folder or trigger), and work addressed to another topic.
func runsBatch() []Enqueue {
	both := func(chat string) []WorkItem {
		return append(trigger("main", chat, ""), observe("other", chat, "")...)
	}
	inject := trigger("main", "web:a", "")
	inject[0].Trigger = TriggerInject
	es := []Enqueue{
		{Message: msg("web:a", "1"), Work: trigger("main", "web:a", "")},
		{Message: msg("web:b", "2"), Work: trigger("main", "web:b", "")},
		{Message: msg("web:a", "3"), Work: trigger("main", "web:a", "")},
		{Message: msg("web:a", "4"), Work: trigger("main", "web:a", "t")},
		{Message: msg("web:a", "1"), Work: trigger("main", "web:a", "")}, // a repeat
		{Message: msg("web:a", "6"), Work: trigger("main", "web:a", "")},
		{Message: msg("web:a", "7")}, // unrouted
		{Message: msg("web:a", "8"), Work: trigger("main", "web:a", "")},
		{Message: msg("web:a", "9"), Work: both("web:a")},
		{Message: msg("web:a", "10"), Work: both("web:a")},
		{Message: msg("web:a", "11"), Work: observe("main", "web:a", "")},
		{Message: msg("web:a", "12"), Work: observe("main", "web:a", "")},
		{Message: msg("web:a", "13"), Work: trigger("other", "web:a", "")},
		{Message: msg("web:a", "14"), Work: trigger("main", "web:a", "")},
		{Message: msg("web:b", "15"), Work: trigger("main", "web:b", "")},
		{Message: msg("web:a", "16"), Work: trigger("main", "web:a", "t")},
		{Message: msg("web:b", "old"), Work: trigger("main", "web:b", "")}, // stored before
		{Message: msg("web:b", "17"), Work: trigger("main", "web:b", "")},
		{Message: msg("web:a", "18"), Work: inject},
		{Message: msg("web:a", "19"), Work: trigger("main", "web:a", "x")}, // work for another topic
		{Message: msg("web:a", "20"), Work: trigger("main", "web:a", "x")},
		{Message: msg("web:a", "21"), Work: trigger("main", "web:a", "")},
		{Message: msg("web:a", "22"), Work: trigger("main", "web:a", "")},
	}
	for i := range 60 { // more observed context than a prompt shows
		es = append(es, Enqueue{Message: msg("web:c", fmt.Sprint("o", i)), Work: observe("main", "web:c", "")})
	}
	return append(es, Enqueue{Message: msg("web:c", "c1"), Work: trigger("main", "web:c", "")})
}

// twinStores are two stores given the same deliveries: coalesced, in
// group commits, and plain, one message per transaction (a row each).
func twinStores(t *testing.T, commits ...[]Enqueue) (coalesced, plain *Store) {
	t.Helper()
	ctx := context.Background()
	now := time.UnixMilli(1_700_000_000_000)
	clock := func() time.Time { return now }
	coalesced, plain = newStore(t), newStore(t)
	for _, s := range []*Store{coalesced, plain} {
		s.SetClock(clock)
		enqueue(t, s, msg("web:b", "old"), trigger("main", "web:b", ""))
	}
	for _, es := range commits {
		if err := coalesced.EnqueueMessages(ctx, es); err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			m := *e.Message
			m.Seq, m.Time = 0, time.Time{}
			enqueue(t, plain, &m, e.Work)
		}
	}
	return coalesced, plain
}

// sameBatch fails the test unless batch a of store sa and batch b of sb
// are the same but for the ids of their work rows and the seqs of their
// messages (a duplicate may use up a seq in one store and not the other):
// messages are compared by identity.
func sameBatch(t *testing.T, what string, sa, sb *Store, a, b Batch) {
	t.Helper()
	norm := func(s *Store, b Batch) (Batch, []string) {
		var keys []string
		b.Items = append([]WorkItem(nil), b.Items...)
		for i, it := range b.Items {
			if it.Seq > 0 {
				var key string
				if err := s.r.QueryRow(`SELECT chat_jid || '/' || msg_id FROM messages WHERE seq = ?`, it.Seq).Scan(&key); err != nil {
					t.Fatal(err)
				}
				keys = append(keys, key)
			}
			b.Items[i].ID, b.Items[i].Seq = 0, 0
		}
		for _, ms := range []*[]Message{&b.Messages, &b.Observed} {
			*ms = append([]Message(nil), *ms...)
			for i := range *ms {
				(*ms)[i].Seq = 0
			}
		}
		b.observedIDs = nil
		return b, keys
	}
	a, ka := norm(sa, a)
	b, kb := norm(sb, b)
	if !reflect.DeepEqual(ka, kb) {
		t.Fatalf("%s: items of messages %v coalesced, %v plain", what, ka, kb)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%s: coalesced rows give\n%+v\none row a message gives\n%+v", what, a, b)
	}
}

// Work rows that stand for runs of messages read as one row a message
// did: every batch (its items and their fields, messages, observed
// context) is the same, in the same order, through retries, a gateway
// crash, a turn that gives up and pruning, and every batch is consumed.
func TestWorkRunsReadAsOneRowAMessage(t *testing.T) {
	ctx := context.Background()
	var more []Enqueue
	for i := 60; i < 90; i++ {
		more = append(more, Enqueue{Message: msg("web:c", fmt.Sprint("o", i)), Work: observe("main", "web:c", "")})
	}
	a, b := twinStores(t, runsBatch(), more)
	if ra, rb := workCount(t, a, "1"), workCount(t, b, "1"); ra >= rb || workCount(t, a, "seq_end > 0") == 0 {
		t.Fatalf("%d work rows coalesced, %d plain: no runs", ra, rb)
	}
	for _, s := range []*Store{a, b} {
		if _, err := s.PruneObserved(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sa, erra := a.Status(ctx)
	sb, errb := b.Status(ctx)
	if erra != nil || errb != nil {
		t.Fatal(erra, errb)
	}
	if len(sa.Waiting) == 0 || !reflect.DeepEqual(sa.Waiting, sb.Waiting) {
		t.Errorf("waiting %v coalesced, %v plain", sa.Waiting, sb.Waiting)
	}
	turns := 0
	for left := true; left; {
		left = false
		for _, folder := range []groups.Folder{"main", "other"} {
			ba, oka, err := a.NextBatch(ctx, folder, 100)
			if err != nil {
				t.Fatal(err)
			}
			bb, okb, err := b.NextBatch(ctx, folder, 100)
			if err != nil || oka != okb {
				t.Fatalf("next batch of %s: %v coalesced, %v plain (%v)", folder, oka, okb, err)
			}
			if !oka {
				continue
			}
			left = true
			turns++
			sameBatch(t, fmt.Sprintf("turn %d of %s", turns, folder), a, b, ba, bb)
			if ba.ChatJID == "web:c" && (len(ba.Observed) != maxObserved || ba.Observed[maxObserved-1].ID != "o89") {
				t.Fatalf("web:c's turn shows %d observed messages; want the last %d", len(ba.Observed), maxObserved)
			}
			settleTwins(t, turns, [2]*Store{a, b}, [2]Batch{ba, bb})
		}
	}
	if na, nb := workItemCount(t, a, "mode = 'trigger'"), workItemCount(t, b, "mode = 'trigger'"); na != 0 || nb != 0 {
		t.Errorf("%d trigger items left coalesced, %d plain; want all consumed", na, nb)
	}
	// The observed context that turns which gave up did not consume waits
	// for the next turn: the same in both.
	for _, folder := range []groups.Folder{"main", "other"} {
		for _, chat := range []adapters.JID{"web:a", "web:b", "web:c"} {
			var bs [2]Batch
			for i, s := range []*Store{a, b} {
				bs[i] = Batch{Folder: folder, ChatJID: chat}
				if err := s.loadBatch(ctx, &bs[i]); err != nil {
					t.Fatal(err)
				}
			}
			sameBatch(t, fmt.Sprintf("context left in %s for %s", chat, folder), a, b, bs[0], bs[1])
		}
	}
	if ra, rb := workCount(t, a, "1"), workCount(t, b, "1"); ra == 0 || rb == 0 {
		t.Errorf("%d, %d work rows left; want the observed context of a turn that gave up", ra, rb)
	}
}

// settleTwins ends turn n on the same batch of each twin store in one of
// four ways, checking that the twins agree at every step: a crash while
// the turn ran (RecoverStarted) then success; a retry, then success; a
// turn that gives up; success.
func settleTwins(t *testing.T, n int, s [2]*Store, b [2]Batch) {
	t.Helper()
	ctx := context.Background()
	both := func(f func(s *Store, b Batch) error) {
		t.Helper()
		for i := range s {
			if err := f(s[i], b[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	again := func(what string) {
		t.Helper()
		for i := range s {
			var ok bool
			var err error
			if b[i], ok, err = s[i].NextBatch(ctx, b[i].Folder, 100); err != nil || !ok {
				t.Fatalf("%s: no batch (%v)", what, err)
			}
		}
		sameBatch(t, what, s[0], s[1], b[0], b[1])
	}
	turn := fmt.Sprint("turn-", n)
	switch n % 4 {
	case 0:
		both(func(s *Store, b Batch) error { return s.MarkStarted(ctx, b, turn) })
		var started [2]Batch
		for i := range s {
			var ok bool
			var err error
			if started[i], ok, err = s[i].StartedBatch(ctx, turn); err != nil || !ok {
				t.Fatalf("started batch: %v %v", ok, err)
			}
		}
		sameBatch(t, "started "+turn, s[0], s[1], started[0], started[1])
		both(func(s *Store, _ Batch) error { _, err := s.RecoverStarted(ctx); return err })
		again("after a crash in " + turn)
		if b[0].Items[0].Crashes != 1 {
			t.Fatalf("after a crash in %s: %+v", turn, b[0].Items[0])
		}
		finishTwins(t, s, b, TurnSucceeded, time.Time{})
	case 1:
		finishTwins(t, s, b, TurnFailed, s[0].now().Add(time.Minute))
		later := s[0].now().Add(2 * time.Minute)
		for i := range s {
			if nb, ok, _ := s[i].NextBatch(ctx, b[i].Folder, 100); ok && nb.ChatJID == b[i].ChatJID && nb.Topic == b[i].Topic {
				t.Fatalf("%s: its chat and topic ran again before the retry", turn)
			}
			s[i].SetClock(func() time.Time { return later })
		}
		again("retry of " + turn)
		finishTwins(t, s, b, TurnSucceeded, time.Time{})
	case 2:
		finishTwins(t, s, b, TurnFailed, time.Time{})
	default:
		finishTwins(t, s, b, TurnSucceeded, time.Time{})
	}
}

func finishTwins(t *testing.T, s [2]*Store, b [2]Batch, status TurnStatus, retryAt time.Time) {
	t.Helper()
	for i := range s {
		finishAt(t, s[i], b[i], status, retryAt)
	}
}

// NextBatch takes a run's row whole: the first row always, the next ones
// while the batch stays within max messages.
func TestNextBatchTakesRunsWhole(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	var run []Enqueue
	for i := range 4 {
		run = append(run, Enqueue{Message: msg("web:a", fmt.Sprint("r", i)), Work: trigger("main", "web:a", "")})
	}
	if err := s.EnqueueMessages(ctx, run); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, msg("web:a", "2"), trigger("main", "web:a", ""))
	if n := workCount(t, s, "1"); n != 3 {
		t.Fatalf("%d work rows; want 3 (the run in one)", n)
	}
	for _, tc := range []struct{ max, want int }{{1, 1}, {3, 1}, {4, 1}, {5, 5}, {6, 6}, {100, 6}} {
		b, ok, err := s.NextBatch(ctx, "main", tc.max)
		if err != nil || !ok || len(b.Items) != tc.want || len(b.Messages) != tc.want {
			t.Errorf("max %d: %d items, %d messages (%v %v); want %d", tc.max, len(b.Items), len(b.Messages), ok, err, tc.want)
		}
	}
	b, _, _ := s.NextBatch(ctx, "main", 3)
	finish(t, s, b, TurnSucceeded, false)
	b, _, _ = s.NextBatch(ctx, "main", 3)
	if len(b.Items) != 4 || b.Messages[0].ID != "r0" || b.Messages[3].ID != "r3" {
		t.Fatalf("the run's batch: %d items, messages %+v", len(b.Items), b.Messages)
	}
	finish(t, s, b, TurnSucceeded, false)
	if b, _, _ = s.NextBatch(ctx, "main", 3); len(b.Messages) != 1 || b.Messages[0].ID != "2" {
		t.Fatalf("after the run: %+v", b.Messages)
	}
}

// A run never grows beyond maxRun messages, nor across chats.
func TestWorkRunsAreBounded(t *testing.T) {
	s := newStore(t)
	var es []Enqueue
	for i := range 2*maxRun + 5 {
		chat := adapters.JID(fmt.Sprintf("web:%d", i%2))
		es = append(es, Enqueue{Message: msg(string(chat), fmt.Sprint(i)), Work: trigger("main", string(chat), "")})
	}
	if err := s.EnqueueMessages(context.Background(), es); err != nil {
		t.Fatal(err)
	}
	if n := workCount(t, s, "1"); n != 4 {
		t.Errorf("%d work rows; want 4 (two chats, runs of at most %d)", n, maxRun)
	}
	if n := workItemCount(t, s, "1"); n != len(es) {
		t.Errorf("%d work items; want %d", n, len(es))
	}
}

// PruneObserved keeps the observed messages a prompt shows, counted in
// messages, not rows: rows standing for runs whose messages are all older
// than the newest maxObserved go, the row that straddles them stays, and
// what a prompt shows does not change.
func TestPruneObservedCountsRunsInMessages(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for c := range 3 { // three group commits: three rows of 40 messages each
		var es []Enqueue
		for i := range 40 {
			es = append(es, Enqueue{Message: msg("web:c", fmt.Sprint(c, "-", i)), Work: observe("main", "web:c", "")})
		}
		if err := s.EnqueueMessages(ctx, es); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(t, s, msg("web:c", "t"), trigger("main", "web:c", ""))
	before, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	n, err := s.PruneObserved(ctx)
	if err != nil || n != 1 {
		t.Errorf("pruned %d rows (%v); want 1, the oldest run", n, err)
	}
	if got := workItemCount(t, s, "mode = 'observe'"); got != 80 {
		t.Errorf("%d observed messages kept; want 80 (the run that holds the newest %d's first and the newest)", got, maxObserved)
	}
	after, _, err := s.NextBatch(ctx, "main", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Observed) != maxObserved || !reflect.DeepEqual(before.Observed, after.Observed) {
		t.Errorf("pruning changed the observed context a prompt shows: %d messages, want the same %d", len(after.Observed), maxObserved)
	}
}
