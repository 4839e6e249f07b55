package gateway

import (
	"context"
	"slices"
	"sync"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/store"
)

// maxCommitBatch bounds the messages committed in one transaction.
const maxCommitBatch = 256

// committer coalesces concurrent Deliver calls into one write transaction
// (group commit): SQLite commits cost far more than the inserts in them, and
// one writer commits for everyone waiting. While one transaction commits,
// the next callers queue up and go into the next one, so a lone message is
// committed at once and a burst in few transactions.
//
// The caller that finds no commit running commits its own batch; if more
// callers queued meanwhile, a goroutine takes over so the first caller's
// latency stays one transaction. A batch that fails is retried message by
// message, so one bad message fails alone.
//
// Under load the callers a commit acknowledges tend to come back at once
// (an adapter's next message, the next HTTP request on the connection), but
// they have to be scheduled first, and the committer, which did not stop
// running, would commit the one or two that made it back in a transaction of
// their own while the rest queue for the next: with 64 concurrent callers,
// six transactions in seven held one message. So while recent batches were
// large (peak), the committer waits for as many callers as the largest
// recent batch to be waiting, at most gatherMax, before it commits again. It
// waits for all of them, not for half (which split 64 callers into two
// alternating batches of about 32): a transaction's cost is mostly the pages
// it writes, one set per chat and index whatever the batch, so a batch
// twice as large costs far less than two (store BenchmarkEnqueueMessages),
// and while the committer waits, its core runs the callers. A lone message
// never waits: it finds the committer idle and commits its own batch at once.
type committer struct {
	st     commitStore
	stored func(chat adapters.JID, seq int64) // tell the chat's adapter (adapterSet.notifyStored)
	kick   func(folder groups.Folder)         // wake a folder that has work (workers.kick)
	// batches observes the messages in each transaction (may be nil).
	batches interface{ Observe(float64) }

	mu      sync.Mutex
	waiting []*commitReq
	running bool // a caller or goroutine is committing; waiting is empty when false
	want    int  // signal full when this many are waiting; 0: nobody waits
	full    chan struct{}
	peak    int // the largest recent batch, decaying by an eighth (at least one) a batch
}

// gatherMax bounds the wait for acknowledged callers to come back.
const gatherMax = 2 * time.Millisecond

// commitStore stores messages with the work they create.
type commitStore interface {
	EnqueueMessages(ctx context.Context, es []store.Enqueue) error
	EnqueueMessage(ctx context.Context, m *store.Message, work []store.WorkItem) (inserted bool, err error)
}

type commitReq struct {
	ctx      context.Context
	msg      store.Message
	work     []store.WorkItem
	noted    func(store.Message) // called once inserted, before its folders wake (nil: nothing)
	done     chan struct{}       // closed when inserted and err are set
	inserted bool
	err      error
}

// commit stores m and its work and returns once they are committed (or
// failed), or ctx ends before their transaction begins. inserted is false
// for a duplicate; m.Seq is set. Once the transaction began, its outcome
// is the caller's even if ctx ends meanwhile: told of an error, a caller
// acts on nothing, and a redelivery of a message stored then is a
// duplicate that acts on nothing either.
// noted (may be nil) is called with the stored message once it is
// inserted and before the folders its work wakes start a turn on it: what
// a guard notes about a message's arrival is there when its turn starts.
func (c *committer) commit(ctx context.Context, m *store.Message, work []store.WorkItem, noted func(store.Message)) (bool, error) {
	r := &commitReq{ctx: ctx, msg: *m, work: work, noted: noted, done: make(chan struct{})}
	c.mu.Lock()
	c.waiting = append(c.waiting, r)
	if c.want > 0 && len(c.waiting) >= c.want {
		c.want = 0
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		c.run(true)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if c.abandon(r) {
			return false, ctx.Err()
		}
		<-r.done // in a transaction already (commitBatch)
	}
	*m = r.msg
	return r.inserted, r.err
}

// abandon takes r out of the waiting callers; false when a transaction
// has it already.
func (c *committer) abandon(r *commitReq) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.waiting, r)
	if i < 0 {
		return false
	}
	c.waiting = slices.Delete(c.waiting, i, i+1)
	return true
}

// run commits batches until nothing is waiting. The leading caller commits
// one batch (its own message is in the first) and hands the rest over; the
// goroutine that takes over gathers before each batch (see gather), and
// also when nothing is waiting yet, so that the callers coming back queue
// behind it instead of one of them leading a transaction of its own.
func (c *committer) run(leader bool) {
	for first := true; ; first = false {
		c.mu.Lock()
		if leader && !first {
			if len(c.waiting) == 0 && c.peak < 4 {
				c.idle()
				return
			}
			c.mu.Unlock()
			go c.run(false)
			return
		}
		if !leader {
			c.gather()
		}
		if len(c.waiting) == 0 {
			c.idle()
			return
		}
		n := min(len(c.waiting), maxCommitBatch)
		batch := c.waiting[:n:n]
		c.waiting = c.waiting[n:]
		c.mu.Unlock()
		c.commitBatch(batch)
		c.mu.Lock()
		c.peak = max(n, c.peak-(c.peak+7)/8)
		c.mu.Unlock()
	}
}

// idle ends a run with c.mu held: the next caller leads.
func (c *committer) idle() {
	c.running = false
	c.waiting = nil
	c.mu.Unlock()
}

// gather waits, with c.mu held (and released while it waits), until as
// many callers as the recent peak batch are waiting, at most gatherMax.
func (c *committer) gather() {
	target := c.peak
	if target < 2 || len(c.waiting) >= target {
		return
	}
	if c.full == nil {
		c.full = make(chan struct{}, 1)
	}
	c.want = target
	c.mu.Unlock()
	t := time.NewTimer(gatherMax)
	select {
	case <-c.full:
	case <-t.C:
	}
	t.Stop()
	c.mu.Lock()
	c.want = 0
	select { // a signal sent after the timer fired
	case <-c.full:
	default:
	}
}

func (c *committer) commitBatch(batch []*commitReq) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	// The transaction is everyone's: no single caller's cancellation ends it.
	ctx := context.WithoutCancel(live[0].ctx)
	es := make([]store.Enqueue, len(live))
	for i, r := range live {
		es[i] = store.Enqueue{Message: &r.msg, Work: r.work}
	}
	err := c.st.EnqueueMessages(ctx, es)
	if c.batches != nil {
		c.batches.Observe(float64(len(es)))
	}
	for i, r := range live {
		switch {
		case err == nil:
			r.inserted = es[i].Inserted
		case len(live) == 1:
			r.err = err
		default:
			r.inserted, r.err = c.st.EnqueueMessage(ctx, &r.msg, r.work)
		}
	}
	// Every message is noted before any folder wakes: a turn woken by one
	// reads the batch's other messages to its folder too.
	for _, r := range live {
		if r.err == nil && r.inserted && r.noted != nil {
			r.noted(r.msg)
		}
	}
	kicked := map[groups.Folder]bool{}
	for _, r := range live {
		if r.err == nil && r.inserted {
			c.stored(r.msg.ChatJID, r.msg.Seq)
			for _, w := range r.work {
				if w.Mode == string(routing.Trigger) && !kicked[w.Folder] {
					kicked[w.Folder] = true
					c.kick(w.Folder)
				}
			}
		}
		close(r.done)
	}
}
