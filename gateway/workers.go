package gateway

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"switchboard/groups"
	"switchboard/store"
)

// workers runs one worker per folder with pending work, and at most
// MaxConcurrent turns at once across all folders. Work itself lives in the
// store; a worker only asks the store for the folder's next batch, so a crash
// loses nothing and a restart resumes where it stopped.
//
// A turn slot covers a turn from its batch's claim until its agent exits;
// recording the outcome (a store write, behind the intake's commits under
// load) happens after, on the folder's worker, without the slot: another
// folder's turn starts meanwhile, and this folder's next batch is claimed
// only once the record is written, so a batch still runs exactly once.
type workers struct {
	turns lifecycle // set before the first kick
	st    batchStore
	hooks *testHooks
	log   *slog.Logger

	sem     chan struct{}
	ctx     context.Context // turns; cancelled at the end of the drain
	cancel  context.CancelFunc
	mu      sync.Mutex
	folders map[groups.Folder]*worker // the running workers
	closed  bool
	closing chan struct{} // closed by drain: no new turns, no retry waits
	wg      sync.WaitGroup
}

// lifecycle is what a worker runs of a folder: turns a stopped gateway
// left running elsewhere first, then its batches (turns, lifecycle.go).
// Each returns how long the folder waits before its next step.
type lifecycle interface {
	nextInterrupted(folder groups.Folder) (store.Interrupted, bool)
	awaitTurn(ctx context.Context, it store.Interrupted) time.Duration
	// runTurn calls release once its agent has exited, before it records
	// the outcome (its turn slot is free from then on; the worker
	// releases it when runTurn returns without having called it).
	runTurn(ctx context.Context, b store.Batch, release func()) time.Duration
}

// batchStore hands out a folder's next batch.
type batchStore interface {
	NextBatch(ctx context.Context, folder groups.Folder, max int) (store.Batch, bool, error)
}

type worker struct {
	dirty bool // work may have arrived since the worker last looked
}

// newWorkers makes the workers; nothing runs before turns is set and a
// folder is kicked.
func newWorkers(maxConcurrent int, st batchStore, hooks *testHooks, log *slog.Logger) *workers {
	ctx, cancel := context.WithCancel(context.Background())
	return &workers{st: st, hooks: hooks, log: log, sem: make(chan struct{}, maxConcurrent), ctx: ctx, cancel: cancel,
		folders: map[groups.Folder]*worker{}, closing: make(chan struct{})}
}

// kick makes sure folder's worker runs and looks for work again.
func (ws *workers) kick(folder groups.Folder) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed {
		return
	}
	if w, ok := ws.folders[folder]; ok {
		w.dirty = true
		return
	}
	ws.folders[folder] = &worker{dirty: true}
	ws.wg.Add(1)
	go ws.work(folder)
}

func (ws *workers) work(folder groups.Folder) {
	defer ws.wg.Done()
	for {
		ws.mu.Lock()
		w := ws.folders[folder]
		if !w.dirty || ws.closed {
			delete(ws.folders, folder)
			ws.mu.Unlock()
			return
		}
		w.dirty = false
		ws.mu.Unlock()
		for ws.step(folder) {
			ws.mu.Lock()
			w.dirty = false
			ws.mu.Unlock()
		}
	}
}

// step runs the folder's next ready batch; it reports whether there may be
// more. A failed batch does not hold the worker: the store defers its chat
// until the retry is due and runs the folder's other chats meanwhile.
func (ws *workers) step(folder groups.Folder) bool {
	if ws.isClosed() {
		return false
	}
	if it, ok := ws.turns.nextInterrupted(folder); ok {
		// A turn a stopped gateway left running on a worker comes first:
		// the folder starts nothing before its outcome is recorded. It
		// takes no turn slot: it runs elsewhere already.
		return ws.backoff(ws.turns.awaitTurn(ws.ctx, it))
	}
	b, ok := ws.next(folder)
	if !ok || ws.isClosed() {
		return false
	}
	select {
	case ws.sem <- struct{}{}:
	default:
		// All turn slots are busy. Wait for one, then look again: what
		// arrived meanwhile belongs in this turn, not the next.
		if h := ws.hooks.slotWait; h != nil {
			h(folder)
		}
		select {
		case ws.sem <- struct{}{}:
		case <-ws.closing:
			return false
		}
		if b, ok = ws.next(folder); !ok {
			<-ws.sem
			return false
		}
	}
	var once sync.Once
	release := func() { once.Do(func() { <-ws.sem }) }
	backoff := ws.turns.runTurn(ws.ctx, b, release)
	release()
	return ws.backoff(backoff)
}

// backoff waits backoff (unless the workers close) before the folder's next
// step; it reports whether to take that step.
func (ws *workers) backoff(backoff time.Duration) bool {
	if backoff > 0 {
		select {
		case <-time.After(backoff):
		case <-ws.closing:
			return false
		}
	}
	return true
}

// next loads the folder's next ready batch.
func (ws *workers) next(folder groups.Folder) (store.Batch, bool) {
	b, ok, err := ws.st.NextBatch(ws.ctx, folder, maxBatch)
	if err != nil {
		if ws.ctx.Err() == nil {
			ws.log.Error("load next batch", "folder", folder, "err", err)
		}
		return b, false
	}
	return b, ok
}

// kickAfter kicks folder once d has passed: when a batch waiting for its
// retry falls due. (The poll loop kicks pending folders too, so a kick lost
// to a restart only delays the retry by a poll interval.)
func (ws *workers) kickAfter(folder groups.Folder, d time.Duration) {
	time.AfterFunc(d, func() { ws.kick(folder) })
}

func (ws *workers) isClosed() bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.closed
}

// drain stops new turns and waits up to timeout for running ones; it reports
// whether they all finished in time.
func (ws *workers) drain(timeout time.Duration) bool {
	ws.mu.Lock()
	if !ws.closed {
		ws.closed = true
		close(ws.closing)
	}
	ws.mu.Unlock()
	done := make(chan struct{})
	go func() { ws.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		ws.cancel()
		return false
	}
}

func (ws *workers) wait() {
	ws.cancel()
	ws.wg.Wait()
}
