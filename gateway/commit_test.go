package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/store"
)

// countingCommits is a commitStore that records the size of each
// transaction and which messages it committed. A transaction takes 200 µs
// (of a synctest bubble's clock), as a real one takes time.
type countingCommits struct {
	mu        sync.Mutex
	batches   []int
	committed map[adapters.MessageID]bool
	seq       int64
}

func (s *countingCommits) EnqueueMessages(_ context.Context, es []store.Enqueue) error {
	time.Sleep(200 * time.Microsecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, len(es))
	for i := range es {
		s.seq++
		es[i].Message.Seq, es[i].Inserted = s.seq, true
		s.committed[es[i].Message.ID] = true
	}
	return nil
}

func (s *countingCommits) EnqueueMessage(ctx context.Context, m *store.Message, work []store.WorkItem) (bool, error) {
	e := []store.Enqueue{{Message: m, Work: work}}
	err := s.EnqueueMessages(ctx, e)
	return e[0].Inserted, err
}

func (s *countingCommits) isCommitted(id adapters.MessageID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed[id]
}

// Concurrent callers that come back as soon as they are acknowledged (an
// adapter's next message) share one transaction: once the group commit has
// seen them all in one batch, it waits for all of them again instead of
// committing the first to come back in a transaction of their own. Each
// caller is acknowledged only after its own message is committed.
func TestGroupCommitWaitsForEveryCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingCommits{committed: map[adapters.MessageID]bool{}}
		c := &committer{st: st, stored: func(adapters.JID, int64) {}, kick: func(groups.Folder) {}}
		const callers, each = 16, 40
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				for j := range each {
					m := store.Message{ChatJID: testChat, ID: adapters.MessageID(fmt.Sprintf("m%d-%d", i, j))}
					if _, err := c.commit(context.Background(), &m, nil, nil); err != nil {
						t.Error(err)
						return
					}
					if !st.isCommitted(m.ID) {
						t.Errorf("message %s acknowledged before it was committed", m.ID)
					}
				}
			})
		}
		wg.Wait()
		time.Sleep(2 * gatherMax) // the committer gives up waiting and ends
		st.mu.Lock()
		defer st.mu.Unlock()
		full := 0
		for full < len(st.batches) && st.batches[full] != callers {
			full++
		}
		if full == len(st.batches) {
			t.Fatalf("no transaction held all %d callers: %v", callers, st.batches)
		}
		// From the first full batch on, every transaction holds every
		// caller, but the last: one caller may have been a message ahead
		// of the others since before then, and be done first.
		for _, n := range st.batches[full : len(st.batches)-1] {
			if n != callers {
				t.Fatalf("after a batch of all %d callers, transactions of %v", callers, st.batches[full:])
			}
		}
		if n := len(st.batches); n > each+callers {
			t.Errorf("%d transactions for %d messages: %v", n, callers*each, st.batches)
		}
	})
}

// A lone caller never waits: its message commits at once, every time.
func TestGroupCommitLoneMessageAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingCommits{committed: map[adapters.MessageID]bool{}}
		c := &committer{st: st, stored: func(adapters.JID, int64) {}, kick: func(groups.Folder) {}}
		start := time.Now()
		for j := range 20 {
			m := store.Message{ChatJID: testChat, ID: adapters.MessageID(fmt.Sprint("m", j))}
			if _, err := c.commit(context.Background(), &m, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 20*200*time.Microsecond {
			t.Errorf("20 lone messages took %v; want their 20 transactions' time (4ms), no waiting", d)
		}
	})
}

// After a burst of concurrent callers, the group commit soon stops waiting
// for callers that do not come back: a lone caller's messages then commit
// at once again (the recent peak decays to the lone batches).
func TestGroupCommitLoneAfterBurst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingCommits{committed: map[adapters.MessageID]bool{}}
		c := &committer{st: st, stored: func(adapters.JID, int64) {}, kick: func(groups.Folder) {}}
		send := func(id string) {
			m := store.Message{ChatJID: testChat, ID: adapters.MessageID(id)}
			if _, err := c.commit(context.Background(), &m, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				for j := range 5 {
					send(fmt.Sprintf("burst%d-%d", i, j))
				}
			})
		}
		wg.Wait()
		for j := range 30 {
			send(fmt.Sprint("settle", j))
		}
		start := time.Now()
		for j := range 10 {
			send(fmt.Sprint("lone", j))
		}
		if d := time.Since(start); d != 10*200*time.Microsecond {
			t.Errorf("10 lone messages after a burst took %v; want their 10 transactions' time (2ms), no waiting", d)
		}
		time.Sleep(2 * gatherMax)
	})
}

// What the intake notes about a message's arrival (noted) happens once it
// is stored and before its folder is woken for the turn that answers it;
// a duplicate is not noted again. (The loop guard noted a message after
// the commit returned, so the turn the commit woke could start first, miss
// the note, and leave it to the next turn.)
func TestCommitNotesBeforeTheWake(t *testing.T) {
	st := openTestStore(t, "main")
	var mu sync.Mutex
	var order []string
	log := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
	c := &committer{st: st, stored: func(adapters.JID, int64) {}, kick: func(f groups.Folder) { log("kick " + string(f)) }}
	work := []store.WorkItem{{Folder: "main", ChatJID: testChat, Mode: "trigger", Trigger: store.TriggerMessage}}
	noted := func(m store.Message) { log(fmt.Sprintf("noted %s seq>0=%v", m.ID, m.Seq > 0)) }
	for range 2 { // the second is a redelivery
		m := store.Message{ChatJID: testChat, ID: "m1", Sender: "test:user/ann", Text: "hi", Verb: "mention"}
		if _, err := c.commit(context.Background(), &m, work, noted); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"noted m1 seq>0=true", "kick main"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("order %q; want %q", order, want)
	}
}

// Every message of a transaction is noted before any folder it wakes
// starts a turn: a turn woken by the first message reads the second too
// (both are committed), so the second's note has to be there as well.
func TestCommitNotesTheWholeBatchBeforeTheWake(t *testing.T) {
	st := openTestStore(t, "main")
	var order []string
	c := &committer{st: st, stored: func(adapters.JID, int64) {}, kick: func(f groups.Folder) { order = append(order, "kick "+string(f)) }}
	work := []store.WorkItem{{Folder: "main", ChatJID: testChat, Mode: "trigger", Trigger: store.TriggerMessage}}
	noted := func(m store.Message) { order = append(order, "noted "+string(m.ID)) }
	var batch []*commitReq
	for _, id := range []adapters.MessageID{"m1", "m2"} {
		m := store.Message{ChatJID: testChat, ID: id, Sender: "test:user/ann", Text: "hi", Verb: "mention"}
		batch = append(batch, &commitReq{ctx: context.Background(), msg: m, work: work, noted: noted, done: make(chan struct{})})
	}
	c.commitBatch(batch)
	if want := []string{"noted m1", "noted m2", "kick main"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("order %q; want %q", order, want)
	}
}

// gatedCommits is a commitStore whose transactions each wait for the next
// value of gate before they commit; started is told of each first.
type gatedCommits struct {
	started   chan []adapters.MessageID
	gate      chan struct{}
	mu        sync.Mutex
	committed map[adapters.MessageID]bool
	seq       int64
}

func (s *gatedCommits) EnqueueMessages(_ context.Context, es []store.Enqueue) error {
	var ids []adapters.MessageID
	for _, e := range es {
		ids = append(ids, e.Message.ID)
	}
	s.started <- ids
	<-s.gate
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range es {
		s.seq++
		es[i].Message.Seq, es[i].Inserted = s.seq, true
		s.committed[es[i].Message.ID] = true
	}
	return nil
}

func (s *gatedCommits) EnqueueMessage(ctx context.Context, m *store.Message, work []store.WorkItem) (bool, error) {
	e := []store.Enqueue{{Message: m, Work: work}}
	err := s.EnqueueMessages(ctx, e)
	return e[0].Inserted, err
}

// A caller whose ctx ends while its message's transaction commits is told
// what became of the message, not only that its ctx ended: told of an
// error, it acts on nothing, while the message is stored and a redelivery
// is a duplicate that acts on nothing either (a /stop, an /approve, an
// interrupting message whose sender went away at that moment: lost).
// Before its transaction begins, its ctx ending keeps it out.
func TestCommitCallerGoneDuringItsTransaction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gatedCommits{started: make(chan []adapters.MessageID, 4), gate: make(chan struct{}), committed: map[adapters.MessageID]bool{}}
		c := &committer{st: st, stored: func(adapters.JID, int64) {}, kick: func(groups.Folder) {}}
		type result struct {
			inserted bool
			err      error
		}
		commit := func(ctx context.Context, id adapters.MessageID) chan result {
			out := make(chan result, 1)
			go func() {
				m := store.Message{ChatJID: testChat, ID: id, Sender: "test:user/ann", Text: "/stop"}
				ins, err := c.commit(ctx, &m, nil, nil)
				out <- result{ins, err}
			}()
			return out
		}
		a := commit(context.Background(), "a") // leads; its transaction waits
		<-st.started
		ctxB, cancelB := context.WithCancel(context.Background())
		b := commit(ctxB, "b")
		ctxC, cancelC := context.WithCancel(context.Background())
		cc := commit(ctxC, "c")
		synctest.Wait() // b and c wait for the next transaction
		cancelC()       // c's sender goes before its transaction begins
		synctest.Wait()
		st.gate <- struct{}{} // a commits
		if r := <-a; !r.inserted || r.err != nil {
			t.Fatalf("a: %+v", r)
		}
		if ids := <-st.started; len(ids) != 1 || ids[0] != "b" {
			t.Fatalf("the next transaction has %v; want b alone", ids)
		}
		cancelB() // b's sender goes while b's transaction commits
		synctest.Wait()
		st.gate <- struct{}{}
		if r := <-b; r.err != nil || !r.inserted {
			t.Errorf("b, stored: commit returned %+v; want it inserted", r)
		}
		if r := <-cc; r.err == nil || st.committed["c"] {
			t.Errorf("c: commit returned %+v, stored %v; want an error and nothing stored", r, st.committed["c"])
		}
		time.Sleep(2 * gatherMax)
	})
}
