package gateway

import (
	"context"
	"sync"
	"time"
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

// step runs one batch of folder; it reports whether there may be more.
func (q *queue) step(folder string) bool {
	b, ok, err := q.g.st.NextBatch(q.ctx, folder, maxBatch)
	if err != nil {
		if q.ctx.Err() == nil {
			q.g.log.Error("load next batch", "folder", folder, "err", err)
		}
		return false
	}
	if !ok || q.isClosed() {
		return false
	}
	select {
	case q.sem <- struct{}{}:
	case <-q.closing:
		return false
	}
	retry := q.g.runTurn(q.ctx, b)
	<-q.sem
	if retry > 0 {
		select {
		case <-time.After(retry):
		case <-q.closing:
			return false
		}
	}
	return true
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
