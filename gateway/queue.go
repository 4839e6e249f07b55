package gateway

import (
	"context"
	"sync"
	"time"

	"switchboard/store"
)

// queue runs one worker per folder with pending work, and at most
// MaxConcurrent turns at once across all folders. Work itself lives in the
// store; a worker only asks the store for the folder's next batch, so a crash
// loses nothing and a restart resumes where it stopped.
type queue struct {
	g       *Gateway
	sem     chan struct{}
	ctx     context.Context // turns; cancelled at the end of the drain
	cancel  context.CancelFunc
	mu      sync.Mutex
	workers map[string]*worker
	closed  bool
	closing chan struct{} // closed by drain: no new turns, no retry waits
	wg      sync.WaitGroup
}

type worker struct {
	dirty bool // work may have arrived since the worker last looked
}

func newQueue(g *Gateway) *queue {
	ctx, cancel := context.WithCancel(context.Background())
	return &queue{g: g, sem: make(chan struct{}, g.opt.MaxConcurrent), ctx: ctx, cancel: cancel, workers: map[string]*worker{}, closing: make(chan struct{})}
}

// kick makes sure folder's worker runs and looks for work again.
func (q *queue) kick(folder string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	if w, ok := q.workers[folder]; ok {
		w.dirty = true
		return
	}
	q.workers[folder] = &worker{dirty: true}
	q.wg.Add(1)
	go q.work(folder)
}

func (q *queue) work(folder string) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		w := q.workers[folder]
		if !w.dirty || q.closed {
			delete(q.workers, folder)
			q.mu.Unlock()
			return
		}
		w.dirty = false
		q.mu.Unlock()
		for q.step(folder) {
			q.mu.Lock()
			w.dirty = false
			q.mu.Unlock()
		}
	}
}

// step runs the folder's next ready batch; it reports whether there may be
// more. A failed batch does not hold the worker: the store defers its chat
// until the retry is due and runs the folder's other chats meanwhile.
func (q *queue) step(folder string) bool {
	b, ok := q.next(folder)
	if !ok || q.isClosed() {
		return false
	}
	select {
	case q.sem <- struct{}{}:
	default:
		// All turn slots are busy. Wait for one, then look again: what
		// arrived meanwhile belongs in this turn, not the next.
		if h := q.g.hooks.slotWait; h != nil {
			h(folder)
		}
		select {
		case q.sem <- struct{}{}:
		case <-q.closing:
			return false
		}
		if b, ok = q.next(folder); !ok {
			<-q.sem
			return false
		}
	}
	backoff := q.g.runTurn(q.ctx, b)
	<-q.sem
	if backoff > 0 {
		select {
		case <-time.After(backoff):
		case <-q.closing:
			return false
		}
	}
	return true
}

// next loads the folder's next ready batch.
func (q *queue) next(folder string) (store.Batch, bool) {
	b, ok, err := q.g.st.NextBatch(q.ctx, folder, maxBatch)
	if err != nil {
		if q.ctx.Err() == nil {
			q.g.log.Error("load next batch", "folder", folder, "err", err)
		}
		return b, false
	}
	return b, ok
}

// kickAfter kicks folder once d has passed: when a batch waiting for its
// retry falls due. (The poll loop kicks pending folders too, so a kick lost
// to a restart only delays the retry by a poll interval.)
func (q *queue) kickAfter(folder string, d time.Duration) {
	time.AfterFunc(d, func() { q.kick(folder) })
}

func (q *queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}

// drain stops new turns and waits up to timeout for running ones; it reports
// whether they all finished in time.
func (q *queue) drain(timeout time.Duration) bool {
	q.mu.Lock()
	if !q.closed {
		q.closed = true
		close(q.closing)
	}
	q.mu.Unlock()
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		q.cancel()
		return false
	}
}

func (q *queue) wait() {
	q.cancel()
	q.wg.Wait()
}
