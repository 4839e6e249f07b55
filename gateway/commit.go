package gateway

import (
	"context"
	"sync"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/store"
)

// maxCommitBatch bounds the messages committed in one transaction.
const maxCommitBatch = 256

// committer coalesces concurrent Deliver calls into one write transaction
// (group commit): SQLite commits cost far more than the inserts in them, and
// one writer commits for everyone waiting. There is no timer: while one
// transaction commits, the next callers queue up and go into the next one,
// so a lone message is committed at once and a burst in few transactions.
//
// The caller that finds no commit running commits its own batch; if more
// callers queued meanwhile, a goroutine takes over so the first caller's
// latency stays one transaction. A batch that fails is retried message by
// message, so one bad message fails alone.
type committer struct {
	st     commitStore
	stored func(chat adapters.JID, seq int64) // tell the chat's adapter (adapterSet.notifyStored)
	kick   func(folder groups.Folder)         // wake a folder that has work (workers.kick)

	mu      sync.Mutex
	waiting []*commitReq
	running bool // a caller or goroutine is committing; waiting is empty when false
}

// commitStore stores messages with the work they create.
type commitStore interface {
	EnqueueMessages(ctx context.Context, es []store.Enqueue) error
	EnqueueMessage(ctx context.Context, m *store.Message, work []store.WorkItem) (inserted bool, err error)
}

type commitReq struct {
	ctx      context.Context
	msg      store.Message
	work     []store.WorkItem
	done     chan struct{} // closed when inserted and err are set
	inserted bool
	err      error
}

// commit stores m and its work and returns once they are committed (or
// failed), or ctx ends. inserted is false for a duplicate; m.Seq is set.
func (c *committer) commit(ctx context.Context, m *store.Message, work []store.WorkItem) (bool, error) {
	r := &commitReq{ctx: ctx, msg: *m, work: work, done: make(chan struct{})}
	c.mu.Lock()
	c.waiting = append(c.waiting, r)
	lead := !c.running
	c.running = true
	c.mu.Unlock()
	if lead {
		c.run(true)
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		// The message may still be committed; a retry is a duplicate.
		return false, ctx.Err()
	}
	*m = r.msg
	return r.inserted, r.err
}

// run commits batches until nothing is waiting. The leading caller commits
// one batch (its own message is in the first) and hands the rest over.
func (c *committer) run(leader bool) {
	for first := true; ; first = false {
		c.mu.Lock()
		if len(c.waiting) == 0 {
			c.running = false
			c.waiting = nil
			c.mu.Unlock()
			return
		}
		if leader && !first {
			c.mu.Unlock()
			go c.run(false)
			return
		}
		n := min(len(c.waiting), maxCommitBatch)
		batch := c.waiting[:n:n]
		c.waiting = c.waiting[n:]
		c.mu.Unlock()
		c.commitBatch(batch)
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
