package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

func msg(chat, id string) *Message {
	return &Message{ChatJID: adapters.JID(chat), ID: adapters.MessageID(id), Sender: "web:user/ann", Text: "hi " + id, Verb: "mention"}
}

func trigger(folder groups.Folder, chat, topic string) []WorkItem {
	return []WorkItem{{Folder: folder, ChatJID: adapters.JID(chat), Topic: topic, Mode: "trigger", Trigger: "message"}}
}

func observe(folder groups.Folder, chat, topic string) []WorkItem {
	return []WorkItem{{Folder: folder, ChatJID: adapters.JID(chat), Topic: topic, Mode: "observe", Trigger: "message"}}
}

func enqueue(t *testing.T, s *Store, m *Message, work []WorkItem) {
	t.Helper()
	if _, err := s.EnqueueMessage(context.Background(), m, work); err != nil {
		t.Fatal(err)
	}
}

func workCount(t *testing.T, s *Store, where string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM work WHERE ` + where).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// workItemCount is how many work items the work rows where holds stand
// for, as the readers see them (a run of messages is an item a message).
func workItemCount(t *testing.T, s *Store, where string) int {
	t.Helper()
	items, err := s.workOf(context.Background(), workItemsOf(`(SELECT * FROM work WHERE `+where+`)`))
	if err != nil {
		t.Fatal(err)
	}
	return len(items)
}

func TestEnqueueMessagesGroupCommit(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	old := msg("web:a", "old")
	enqueue(t, s, old, trigger("main", "web:a", ""))
	es := []Enqueue{
		{Message: msg("web:a", "1"), Work: trigger("main", "web:a", "")},
		{Message: msg("web:a", "old"), Work: trigger("main", "web:a", "")}, // stored before
		{Message: msg("web:b", "1"), Work: trigger("main", "web:b", "")},   // same id, other chat
		{Message: msg("web:a", "1"), Work: trigger("main", "web:a", "")},   // repeat within the batch
		{Message: msg("web:c", "2")},                                       // no work (unrouted)
	}
	if err := s.EnqueueMessages(ctx, es); err != nil {
		t.Fatal(err)
	}
	wantNew := []bool{true, false, true, false, true}
	for i, e := range es {
		if e.Inserted != wantNew[i] || e.Message.Seq == 0 || e.Message.Time.IsZero() {
			t.Errorf("entry %d: inserted %v seq %d time %v; want inserted %v", i, e.Inserted, e.Message.Seq, e.Message.Time, wantNew[i])
		}
	}
	if es[1].Message.Seq != old.Seq || es[3].Message.Seq != es[0].Message.Seq {
		t.Errorf("duplicates got seqs %d, %d; want the originals' %d, %d", es[1].Message.Seq, es[3].Message.Seq, old.Seq, es[0].Message.Seq)
	}
	if n := workCount(t, s, "1"); n != 3 {
		t.Errorf("%d work rows; want one per new routed message (3)", n)
	}
	var orphans int
	if err := s.r.QueryRow(`SELECT count(*) FROM work w WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.seq = w.seq)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("work rows without their message: %d (%v)", orphans, err)
	}
}

// A batch larger than one insert statement takes (multiInsert) keeps every
// message's identity and order across the statements: seqs follow the
// batch, duplicates of stored and of earlier messages get the originals'
// seqs and no work, each new message gets its work rows (none, one or two),
// the chats' last seqs are their newest messages, and the
// text is searchable.
func TestEnqueueMessagesManyRows(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	stored := msg("web:r2", "m7")
	enqueue(t, s, stored, trigger("main", "web:r2", ""))
	var es []Enqueue
	for i := range 203 {
		chat := fmt.Sprintf("web:r%d", i%5)
		m := msg(chat, fmt.Sprint("m", i))
		if i%50 == 49 { // a repeat of a message earlier in the batch
			m = msg("web:r0", "m5")
			chat = "web:r0"
		}
		m.Text = fmt.Sprintf("zebra%d of the batch", i)
		work := trigger("main", chat, "")
		switch {
		case i%7 == 3: // unrouted
			work = nil
		case i%11 == 4: // a trigger and an observer
			work = append(work, observe("other", chat, "")...)
		}
		es = append(es, Enqueue{Message: m, Work: work})
	}
	if err := s.EnqueueMessages(ctx, es); err != nil {
		t.Fatal(err)
	}
	var prev int64
	wantWork := 1 // the message stored before
	last := map[adapters.JID]int64{}
	for i, e := range es {
		m := e.Message
		switch {
		case m.ChatJID == "web:r2" && m.ID == "m7":
			if e.Inserted || m.Seq != stored.Seq {
				t.Errorf("entry %d, stored before: inserted %v seq %d; want false, %d", i, e.Inserted, m.Seq, stored.Seq)
			}
		case i%50 == 49:
			if e.Inserted || m.Seq != es[5].Message.Seq {
				t.Errorf("entry %d, a repeat: inserted %v seq %d; want false, %d", i, e.Inserted, m.Seq, es[5].Message.Seq)
			}
		default:
			if !e.Inserted || m.Seq <= prev {
				t.Errorf("entry %d: inserted %v seq %d after %d; want a new, higher seq", i, e.Inserted, m.Seq, prev)
			}
			prev = m.Seq
			wantWork += len(e.Work)
			last[m.ChatJID] = m.Seq
			got, err := s.MessageByID(ctx, m.ChatJID, m.ID)
			if err != nil || got.Seq != m.Seq || got.Text != m.Text {
				t.Errorf("entry %d stored as %+v (%v); want seq %d text %q", i, got, err, m.Seq, m.Text)
			}
		}
	}
	if n := workItemCount(t, s, "1"); n != wantWork {
		t.Errorf("%d work items; want the new messages' (%d)", n, wantWork)
	}
	if n := workCount(t, s, "folder = 'other' AND seq IN (SELECT seq FROM messages WHERE msg_id = 'm15')"); n != 1 {
		t.Errorf("the observer of m15 stored %d times; want once", n)
	}
	var orphans int
	if err := s.r.QueryRow(`SELECT count(*) FROM work w WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.seq = w.seq AND m.chat_jid = w.chat_jid)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("work rows without their message: %d (%v)", orphans, err)
	}
	for chat, seq := range last {
		var got int64
		if err := s.r.QueryRow(`SELECT last_seq FROM chats WHERE jid = ?`, chat).Scan(&got); err != nil || got != seq {
			t.Errorf("chat %s last_seq %d (%v); want %d", chat, got, err, seq)
		}
	}
	var hits int
	if err := s.r.QueryRow(`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'zebra150'`).Scan(&hits); err != nil || hits != 1 {
		t.Errorf("search for a message of the batch: %d hits (%v); want 1", hits, err)
	}
}

// Concurrent batches of every size store every message once: a batch of a
// size not seen before prepares its statements while other batches write
// (which must not wait on each other: preparing needs the writer).
func TestEnqueueMessagesConcurrentSizes(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for n := 1; n <= 200; n += 13 + g {
				es := make([]Enqueue, n)
				for i := range es {
					chat := fmt.Sprintf("web:g%d", g)
					es[i] = Enqueue{Message: msg(chat, fmt.Sprintf("%d-%d", n, i)), Work: trigger("main", chat, "")}
				}
				if err := s.EnqueueMessages(ctx, es); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	var msgs, distinct int
	if err := s.r.QueryRow(`SELECT count(*), count(DISTINCT chat_jid || '/' || msg_id) FROM messages`).Scan(&msgs, &distinct); err != nil {
		t.Fatal(err)
	}
	want := 0
	for g := range 4 {
		for n := 1; n <= 200; n += 13 + g {
			want += n
		}
	}
	if n := workItemCount(t, s, "1"); msgs != want || distinct != want || n != want {
		t.Fatalf("%d messages (%d distinct), %d work items; want %d of each", msgs, distinct, n, want)
	}
}

// A batch with a bad entry stores nothing and changes nothing, so the caller
// can retry the entries one by one; the error says which entry and what in
// it was wrong.
func TestEnqueueMessagesAllOrNothing(t *testing.T) {
	s := newStore(t)
	for _, c := range []struct {
		bad  Enqueue
		want string
	}{
		{Enqueue{Message: msg("web:a", "")}, "insert message 2 of 2: invalid message: empty platform message id in web:a"},
		{Enqueue{Message: msg("web:a", "2"), Work: []WorkItem{{ChatJID: "web:a", Mode: "trigger", Trigger: "message"}}},
			"insert message 2 of 2 (2 in web:a), work item 1: insert work: folder empty"},
	} {
		es := []Enqueue{{Message: msg("web:a", "1"), Work: trigger("main", "web:a", "")}, c.bad}
		err := s.EnqueueMessages(context.Background(), es)
		if err == nil {
			t.Fatalf("batch with %+v stored", c.bad)
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("error %q; want it to start %q", err, c.want)
		}
		if es[0].Message.Seq != 0 || es[0].Inserted {
			t.Errorf("failed batch changed its entries: %+v", es[0])
		}
	}
	if seq, _ := s.LastSeq(context.Background()); seq != 0 || workCount(t, s, "1") != 0 {
		t.Fatalf("a failed batch left rows behind (last seq %d)", seq)
	}
}

func TestNextBatch(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:a", "2"), trigger("main", "web:a", "t1")) // another topic: another batch
	enqueue(t, s, msg("web:b", "3"), trigger("main", "web:b", ""))
	enqueue(t, s, msg("web:a", "4"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:a", "5"), trigger("other", "web:a", "")) // another folder
	enqueue(t, s, msg("web:a", "6"), observe("main", "web:a", ""))
	if _, err := s.Enqueue(ctx, WorkItem{Folder: "main", ChatJID: "web:a", Mode: "trigger", Trigger: "task", Prompt: "p", TaskID: 1}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, msg("web:a", "7"), trigger("main", "web:a", ""))

	b, ok, err := s.NextBatch(ctx, "main", 100)
	if err != nil || !ok {
		t.Fatalf("NextBatch: %v %v", ok, err)
	}
	ids := func(ms []Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, string(m.ID))
		}
		return out
	}
	if got := ids(b.Messages); !slices.Equal(got, []string{"1", "4", "7"}) {
		t.Errorf("batch messages %v; want the chat's and topic's trigger messages 1, 4, 7", got)
	}
	if got := ids(b.Observed); !slices.Equal(got, []string{"6"}) {
		t.Errorf("observed %v", got)
	}
	if b2, _, _ := s.NextBatch(ctx, "main", 2); len(b2.Messages) != 2 {
		t.Errorf("max 2: %d messages", len(b2.Messages))
	}
	finish(t, s, b, "succeeded", false)
	b, _, _ = s.NextBatch(ctx, "main", 100)
	if b.Topic != "t1" || len(b.Messages) != 1 || len(b.Observed) != 0 {
		t.Errorf("second batch: topic %q, %d messages, %d observed", b.Topic, len(b.Messages), len(b.Observed))
	}
	finish(t, s, b, "succeeded", false)
	b, _, _ = s.NextBatch(ctx, "main", 100)
	if b.ChatJID != "web:b" {
		t.Errorf("third batch is %s", b.ChatJID)
	}
	finish(t, s, b, "succeeded", false)
	b, _, _ = s.NextBatch(ctx, "main", 100)
	if len(b.Items) != 1 || b.Items[0].Trigger != "task" || len(b.Messages) != 0 {
		t.Errorf("a prompt item runs alone: %+v", b.Items)
	}
	finish(t, s, b, "succeeded", false)
	if _, ok, _ := s.NextBatch(ctx, "main", 100); ok {
		t.Error("main has more work")
	}
	if fs, _ := s.PendingFolders(ctx); !slices.Equal(fs, []groups.Folder{"other"}) {
		t.Errorf("pending folders %v", fs)
	}
}

func finish(t *testing.T, s *Store, b Batch, status TurnStatus, retry bool) {
	t.Helper()
	var retryAt time.Time
	if retry {
		retryAt = s.now().Add(time.Millisecond)
	}
	finishAt(t, s, b, status, retryAt)
}

func finishAt(t *testing.T, s *Store, b Batch, status TurnStatus, retryAt time.Time) {
	t.Helper()
	turn := Turn{ID: fmt.Sprintf("t-%d-%s", b.Items[0].ID, status), Folder: b.Folder, ChatJID: b.ChatJID, Topic: b.Topic,
		Trigger: b.Items[0].Trigger, Attempt: b.Items[0].Attempts + 1, Status: status, SessionID: "s-" + string(status)}
	if err := s.FinishBatch(context.Background(), b, turn, nil, retryAt); err != nil {
		t.Fatal(err)
	}
}

// FinishBatch settles a batch by outcome: success consumes the work, the
// observed context and the notices shown, and saves the session; a retry
// keeps everything and counts the attempt; giving up drops only the work.
func TestFinishBatchOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name             string
		status           TurnStatus
		retry            bool
		work, obs, notes int
		attempts         int
		session          string
	}{
		{"succeeded", "succeeded", false, 0, 1, 0, 0, "s-succeeded"}, // the observed row that came later stays
		{"retry", "failed", true, 2, 3, 1, 1, ""},
		{"given up", "failed", false, 0, 3, 1, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			ctx := context.Background()
			enqueue(t, s, msg("web:a", "o1"), observe("main", "web:a", ""))
			enqueue(t, s, msg("web:a", "o2"), observe("main", "web:a", ""))
			enqueue(t, s, msg("web:a", "m1"), trigger("main", "web:a", ""))
			enqueue(t, s, msg("web:a", "m2"), trigger("main", "web:a", ""))
			it, _ := s.AddOutbox(ctx, OutboxItem{Key: "k", Folder: "main", ChatJID: "web:x", Text: "lost"})
			if err := s.OutboxFailed(ctx, it.ID, "gone"); err != nil {
				t.Fatal(err)
			}
			b, _, err := s.NextBatch(ctx, "main", 100)
			if err != nil || len(b.Notices) != 1 || len(b.Observed) != 2 {
				t.Fatalf("batch %+v, %v", b, err)
			}
			enqueue(t, s, msg("web:a", "o3"), observe("main", "web:a", "")) // during the turn
			finish(t, s, b, tc.status, tc.retry)
			if n := workCount(t, s, "mode = 'trigger'"); n != tc.work {
				t.Errorf("%d trigger rows left; want %d", n, tc.work)
			}
			if n := workCount(t, s, "mode = 'observe'"); n != tc.obs {
				t.Errorf("%d observed rows left; want %d", n, tc.obs)
			}
			var notes int
			_ = s.r.QueryRow(`SELECT count(*) FROM notices`).Scan(&notes)
			if notes != tc.notes {
				t.Errorf("%d notices left; want %d", notes, tc.notes)
			}
			if tc.work > 0 {
				if n := workCount(t, s, fmt.Sprintf("mode = 'trigger' AND attempts = %d", tc.attempts)); n != tc.work {
					t.Errorf("attempts not counted on every kept item")
				}
			}
			if sess, _ := s.Session(ctx, "main", "web:a", ""); sess != tc.session {
				t.Errorf("session %q; want %q", sess, tc.session)
			}
			if ts, _ := s.Turns(ctx, "main", 10); len(ts) != 1 || ts[0].Status != tc.status {
				t.Errorf("turn records %+v", ts)
			}
		})
	}
}

func TestFinishBatchIsolatedTaskKeepsSession(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.SetSession(ctx, "main", "web:a", "", "chat-session"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, WorkItem{Folder: "main", ChatJID: "web:a", Mode: "trigger", Trigger: "task", Prompt: "p", Isolated: true}); err != nil {
		t.Fatal(err)
	}
	b, _, _ := s.NextBatch(ctx, "main", 100)
	finish(t, s, b, "succeeded", false)
	if sess, _ := s.Session(ctx, "main", "web:a", ""); sess != "chat-session" {
		t.Fatalf("an isolated task replaced the chat's session with %q", sess)
	}
}

// A batch waiting for its retry holds up its own chat and topic (later
// messages there wait and join it), not the folder's other chats.
func TestNextBatchSkipsChatsWaitingForRetry(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	clock := time.UnixMilli(1_000_000)
	s.now = func() time.Time { return clock }
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:b", "2"), trigger("main", "web:b", ""))
	b, _, _ := s.NextBatch(ctx, "main", 100)
	if b.ChatJID != "web:a" {
		t.Fatalf("first batch %s", b.ChatJID)
	}
	finishAt(t, s, b, "failed", clock.Add(2*time.Second))
	enqueue(t, s, msg("web:a", "3"), trigger("main", "web:a", "")) // arrives during the wait
	b, ok, _ := s.NextBatch(ctx, "main", 100)
	if !ok || b.ChatJID != "web:b" {
		t.Fatalf("while web:a waits: batch %q (%v); want web:b", b.ChatJID, ok)
	}
	finish(t, s, b, "succeeded", false)
	if b, ok, _ := s.NextBatch(ctx, "main", 100); ok {
		t.Fatalf("web:a ran before its retry was due: %+v", b.Items)
	}
	if fs, _ := s.PendingFolders(ctx); len(fs) != 1 {
		t.Fatalf("a waiting batch is not pending: %v", fs)
	}
	clock = clock.Add(2 * time.Second)
	b, ok, _ = s.NextBatch(ctx, "main", 100)
	if !ok || b.ChatJID != "web:a" || len(b.Messages) != 2 || b.Items[0].Attempts != 1 {
		t.Fatalf("retry batch %+v (%v); want both web:a messages, second attempt", b, ok)
	}
}

func TestPruneObservedKeepsWhatAPromptShows(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	// An observe-only chat that never triggers, and a second chat with few rows.
	for i := range maxObserved + 30 {
		enqueue(t, s, msg("web:quiet", fmt.Sprint("q", i)), observe("main", "web:quiet", ""))
	}
	for i := range 3 {
		enqueue(t, s, msg("web:other", fmt.Sprint("o", i)), observe("main", "web:other", ""))
	}
	enqueue(t, s, msg("web:quiet", "t1"), trigger("main", "web:quiet", ""))
	before, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatalf("batch: %v %v", ok, err)
	}
	n, err := s.PruneObserved(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 30 {
		t.Errorf("pruned %d rows, want 30", n)
	}
	if got := workCount(t, s, `mode = 'observe' AND chat_jid = 'web:quiet'`); got != maxObserved {
		t.Errorf("quiet chat keeps %d observed rows, want %d", got, maxObserved)
	}
	if got := workCount(t, s, `mode = 'observe' AND chat_jid = 'web:other'`); got != 3 {
		t.Errorf("other chat keeps %d observed rows, want 3", got)
	}
	if got := workCount(t, s, `mode = 'trigger'`); got != 1 {
		t.Errorf("trigger rows touched: %d left", got)
	}
	after, _, err := s.NextBatch(ctx, "main", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(before.Observed, after.Observed, func(a, b Message) bool { return a.Seq == b.Seq }) {
		t.Error("pruning changed the observed context a prompt shows")
	}
	if len(after.Observed) != maxObserved {
		t.Errorf("prompt shows %d observed messages, want %d", len(after.Observed), maxObserved)
	}
}

// DropSession forgets a chat's session only while it is still the one the
// caller saw fail.
func TestDropSession(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if err := s.SetSession(ctx, "main", "web:a", "", "s-new"); err != nil {
		t.Fatal(err)
	}
	if dropped, err := s.DropSession(ctx, "main", "web:a", "", "s-old"); err != nil || dropped {
		t.Fatalf("DropSession of a session no longer stored: %v, %v; want false, nil", dropped, err)
	}
	if sess, _ := s.Session(ctx, "main", "web:a", ""); sess != "s-new" {
		t.Fatalf("session %q, want s-new kept", sess)
	}
	if dropped, err := s.DropSession(ctx, "main", "web:a", "", "s-new"); err != nil || !dropped {
		t.Fatalf("DropSession: %v, %v; want true, nil", dropped, err)
	}
	if sess, _ := s.Session(ctx, "main", "web:a", ""); sess != "" {
		t.Fatalf("session %q after DropSession, want none", sess)
	}
}

// ResumeChat lifts the hold DeferChat set with that very time, and no
// other (a retry wait set since stays); messages arriving during the hold
// wait with it and run in the same batch.
func TestResumeChatLiftsOnlyItsOwnHold(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	clock := time.UnixMilli(1_000_000)
	s.now = func() time.Time { return clock }
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	until := clock.Add(time.Minute)
	if err := s.DeferChat(ctx, "main", "web:a", "", until); err != nil {
		t.Fatal(err)
	}
	enqueue(t, s, msg("web:a", "2"), trigger("main", "web:a", "")) // during the hold
	if b, ok, _ := s.NextBatch(ctx, "main", 100); ok {
		t.Fatalf("a held chat ran: %+v", b.Items)
	}
	if lifted, err := s.ResumeChat(ctx, "main", "web:a", "", until.Add(time.Second)); err != nil || lifted {
		t.Fatalf("another hold's time lifted it: %v %v", lifted, err)
	}
	if lifted, err := s.ResumeChat(ctx, "main", "web:a", "", until); err != nil || !lifted {
		t.Fatalf("its own time did not lift it: %v %v", lifted, err)
	}
	b, ok, _ := s.NextBatch(ctx, "main", 100)
	if !ok || len(b.Messages) != 2 {
		t.Fatalf("after the lift: %+v (%v); want both messages", b, ok)
	}
}

// A work item's chain depth is stored and read back.
func TestWorkChainRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, WorkItem{Folder: "main", ChatJID: "web:a", Mode: "trigger", Trigger: TriggerDelegate, Prompt: "p", Origin: "root", Chain: 5}); err != nil {
		t.Fatal(err)
	}
	w := trigger("main", "web:a", "")
	w[0].Trigger, w[0].Chain = TriggerInject, 3
	enqueue(t, s, msg("web:a", "1"), w)
	b, ok, err := s.NextBatch(ctx, "main", 100)
	if err != nil || !ok || b.Items[0].Chain != 5 {
		t.Fatalf("delegate batch %+v (%v, %v); want chain 5", b.Items, ok, err)
	}
	finish(t, s, b, "succeeded", false)
	if b, _, _ = s.NextBatch(ctx, "main", 100); len(b.Items) != 1 || b.Items[0].Chain != 3 {
		t.Fatalf("inject batch %+v; want chain 3", b.Items)
	}
}

// A turn interrupted by a gateway's stop keeps its id on its work rows:
// RecoverStarted counts a crash for every other interrupted turn and leaves
// the kept one started, StartedBatch gives back exactly its rows, and
// RecoverTurn counts the crash later when its outcome never comes. The
// batch carries the observed context its prompt showed, not what came
// after it started.
func TestInterruptedTurnKeepsItsRows(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	now := time.Now()
	s.SetClock(func() time.Time { return now })
	enqueue(t, s, msg("web:a", "seen"), observe("main", "web:a", ""))
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:a", "2"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:b", "1"), trigger("ops", "web:b", ""))
	start := func(folder groups.Folder, turn string) Batch {
		t.Helper()
		b, ok, err := s.NextBatch(ctx, folder, 10)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if err := s.MarkStarted(ctx, b, turn); err != nil {
			t.Fatal(err)
		}
		return b
	}
	kept := start("main", "t-kept")
	start("ops", "t-lost")
	// Messages that arrived after the turn started are not part of it.
	now = now.Add(time.Second)
	enqueue(t, s, msg("web:a", "3"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:a", "unseen"), observe("main", "web:a", ""))

	got, err := s.InterruptedTurns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].TurnID != "t-kept" || got[0].Folder != "main" || got[0].Started.IsZero() || got[1].TurnID != "t-lost" {
		t.Fatalf("interrupted turns %+v; want t-kept in main, then t-lost", got)
	}
	if got[0].ChatJID != "web:a" || got[1].ChatJID != "web:b" || got[0].Topic != "" {
		t.Errorf("interrupted turns %+v; want t-kept in web:a, t-lost in web:b", got)
	}
	n, err := s.RecoverStarted(ctx, "t-kept")
	if err != nil || n != 1 {
		t.Fatalf("RecoverStarted touched %d rows (%v); want the one row of t-lost", n, err)
	}
	if c := workCount(t, s, "folder = 'ops' AND crashes = 1 AND started_ms = 0 AND turn_id = ''"); c != 1 {
		t.Errorf("t-lost's row: %d rows counted as crashed; want 1", c)
	}
	if c := workCount(t, s, "turn_id = 't-kept' AND started_ms > 0 AND crashes = 0"); c != 2 {
		t.Errorf("t-kept's rows: %d still started under its id; want 2", c)
	}

	b, ok, err := s.StartedBatch(ctx, "t-kept")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if !slices.Equal(b.itemIDs(), kept.itemIDs()) || b.ChatJID != "web:a" || len(b.Messages) != 2 {
		t.Errorf("StartedBatch: items %v chat %s messages %d; want items %v of web:a with 2 messages", b.itemIDs(), b.ChatJID, len(b.Messages), kept.itemIDs())
	}
	if len(b.Observed) != 1 || b.Observed[0].ID != "seen" {
		t.Errorf("StartedBatch's observed context %+v; want only the message observed before the turn started", b.Observed)
	}
	if _, ok, err := s.StartedBatch(ctx, "t-lost"); err != nil || ok {
		t.Errorf("StartedBatch of a recovered turn: ok %v err %v; want none", ok, err)
	}

	// Its outcome never came: the crash is counted now.
	if n, err := s.RecoverTurn(ctx, "t-kept"); err != nil || n != 2 {
		t.Fatalf("RecoverTurn touched %d rows (%v); want 2", n, err)
	}
	if c := workCount(t, s, "folder = 'main' AND crashes = 1 AND started_ms = 0 AND turn_id = ''"); c != 2 {
		t.Errorf("after RecoverTurn: %d of main's rows counted as crashed; want 2", c)
	}
	if got, err := s.InterruptedTurns(ctx); err != nil || len(got) != 0 {
		t.Errorf("interrupted turns left: %+v (%v); want none", got, err)
	}
}

// TestPermanent: the store's refusals that no retry can change (a turn
// recorded twice breaks the turns' key; failing an outbox row that is
// gone) are Permanent; an ended ctx is not: its write may pass later.
func TestPermanent(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	turn := Turn{ID: "t-1", Folder: "main", ChatJID: "web:a", Status: TurnSucceeded}
	if err := s.FinishBatch(ctx, Batch{Folder: "main", ChatJID: "web:a"}, turn, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	err := s.FinishBatch(ctx, Batch{Folder: "main", ChatJID: "web:a"}, turn, nil, time.Time{})
	if err == nil || !Permanent(err) {
		t.Errorf("a turn recorded twice: %v; want a Permanent error", err)
	}
	if err := s.OutboxFailed(ctx, 12345, "refused"); !errors.Is(err, ErrNotFound) || !Permanent(err) {
		t.Errorf("failing an outbox row that is not there: %v; want ErrNotFound, Permanent", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.FinishBatch(cancelled, Batch{Folder: "main", ChatJID: "web:a"}, Turn{ID: "t-2", Folder: "main", ChatJID: "web:a", Status: TurnSucceeded}, nil, time.Time{}); err == nil || Permanent(err) {
		t.Errorf("a write under an ended ctx: %v; want an error that is not Permanent", err)
	}
}

// TestGiveUpTurn: the rows a turn started on are dropped and its chat
// gets the notice; for a turn with no started rows (put back, or never
// started) nothing changes and no notice is queued.
func TestGiveUpTurn(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	b, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.MarkStarted(ctx, b, "t-1"); err != nil {
		t.Fatal(err)
	}
	notice := func(key string) *OutboxItem {
		return &OutboxItem{Key: key, Kind: OutboxNotice, Folder: "main", ChatJID: "web:a", Text: "sorry"}
	}
	if n, err := s.GiveUpTurn(ctx, "t-other", notice("other/unrecorded")); err != nil || n != 0 {
		t.Fatalf("GiveUpTurn of a turn with no rows = %d, %v; want 0", n, err)
	}
	if n, err := s.GiveUpTurn(ctx, "t-1", notice("t-1/unrecorded")); err != nil || n != 1 {
		t.Fatalf("GiveUpTurn = %d, %v; want its 1 row dropped", n, err)
	}
	if _, ok, err := s.NextBatch(ctx, "main", 10); err != nil || ok {
		t.Errorf("NextBatch after the give-up: ok %v err %v; want nothing left to run", ok, err)
	}
	items, err := s.Outbox(ctx, "web:a", 10)
	if err != nil || len(items) != 1 || items[0].Key != "t-1/unrecorded" {
		t.Errorf("outbox %+v (%v); want only t-1's notice", items, err)
	}
}
