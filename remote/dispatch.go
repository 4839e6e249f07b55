package remote

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
)

// The gateway picks the worker of each turn and publishes the job on that
// worker's own subject (workerSubject), which only that worker's durable
// consumer (workerConsumer) reads. A folder sticks to the worker that ran
// it last, so that a worker's cached copy of the folder is current and a
// turn moves no folder bytes; it moves when that worker is gone or busy
// while another has a free slot.

// workerSubjects is what TurnsStream stores: one subject per worker.
const workerSubjects = TurnsSubject + ".w.*"

// workerInactive is how long a worker's consumer outlives its last fetch
// (InactiveThreshold): a dead worker's consumer goes away on its own. A
// live worker whose slots were all busy for longer recreates it. A
// variable for tests.
var workerInactive = 4 * workerTTL

// workerSubject is where the jobs for worker id are published.
func workerSubject(id string) string { return TurnsSubject + ".w." + id }

// workerConsumer names worker id's durable consumer on TurnsStream.
func workerConsumer(id string) string { return "worker-" + id }

// subjectSafe is id with every character outside [A-Za-z0-9_-] replaced
// by '_': a worker id is a NATS subject token, a consumer name and a KV
// key.
func subjectSafe(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, id)
}

// dispatcher is the Runner's view of the workers and of what it gave each:
// live workers from a watch of the workers bucket, turns in flight per
// worker (the gateway's own count, against the worker's slots), and the
// worker each folder last ran on.
type dispatcher struct {
	watch   jetstream.KeyWatcher
	mu      sync.Mutex
	workers map[string]seenWorker // id → last report
	turns   map[string]assignment // turn id → where it went
	load    map[string]int        // worker → turns in flight on it
	last    map[string]string     // folder (absolute path) → worker that ran it last
	news    chan struct{}         // closed (and replaced) when a worker reports
	ttl     time.Duration         // a worker is live while its last report is younger
}

type seenWorker struct {
	info WorkerInfo
	seen time.Time // when the report was put (local clock after the initial values)
	// ended lists this gateway's turns on the worker that ended and that
	// info.Busy still counts, by their Outcome.Finished (0: no outcome
	// came; counted until the next report). The worker reports a freed
	// slot before it sends the turn's outcome, but either can reach the
	// gateway first: a turn is listed only while the report's Finished
	// is below its own, so it is discounted once, not twice.
	ended []int64
}

type assignment struct {
	dir, worker string
	from        string // the folder's last worker when it is not worker
}

// newDispatcher starts watching the workers bucket; stop ends it.
func newDispatcher(ctx context.Context, kv jetstream.KeyValue, ttl time.Duration) (*dispatcher, error) {
	// Not bound to ctx: the watch lives until the Runner is closed.
	w, err := kv.WatchAll(context.WithoutCancel(ctx))
	if err != nil {
		return nil, err
	}
	d := &dispatcher{watch: w, workers: map[string]seenWorker{}, turns: map[string]assignment{}, load: map[string]int{}, last: map[string]string{}, news: make(chan struct{}), ttl: ttl}
	go d.follow()
	return d, nil
}

func (d *dispatcher) stop() { _ = d.watch.Stop() }

// follow applies the workers bucket's changes. An entry that expires (its
// TTL) brings no change: a worker is live while its last report is younger
// than the workers' TTL.
func (d *dispatcher) follow() {
	initial := true
	for e := range d.watch.Updates() {
		if e == nil { // the initial values are in
			initial = false
			continue
		}
		d.mu.Lock()
		if e.Operation() != jetstream.KeyValuePut {
			delete(d.workers, e.Key())
		} else {
			var wi WorkerInfo
			if json.Unmarshal(e.Value(), &wi) == nil {
				seen := time.Now()
				if initial && e.Created().Before(seen) {
					seen = e.Created()
				}
				d.report(e.Key(), wi, seen)
			}
		}
		d.mu.Unlock()
	}
}

// report records worker id's report wi, put at seen, and wakes whoever
// waits for news. Under mu.
func (d *dispatcher) report(id string, wi WorkerInfo, seen time.Time) {
	d.workers[id] = seenWorker{info: wi, seen: seen, ended: stillCounted(d.workers[id], wi)}
	close(d.news)
	d.news = make(chan struct{})
}

// stillCounted is what of prev's ended turns the worker's new report wi
// still counts busy: those it does not count finished, from the same
// worker process.
func stillCounted(prev seenWorker, wi WorkerInfo) []int64 {
	if !prev.info.Started.Equal(wi.Started) {
		return nil
	}
	var still []int64
	for _, f := range prev.ended {
		if f > wi.Finished {
			still = append(still, f)
		}
	}
	return still
}

// used is how many of wi's slots are busy: the turns this gateway gave
// the worker, or the ones it reports running if more (turns an earlier
// gateway process gave it, still running after a restart), less this
// gateway's turns that ended and the report still counts. Under mu.
func (d *dispatcher) used(wi WorkerInfo) int {
	return max(d.load[wi.ID], wi.Busy-len(d.workers[wi.ID].ended))
}

// live reports whether worker id reported within the workers' TTL. Under mu.
func (d *dispatcher) live(id string, now time.Time) (WorkerInfo, bool) {
	w, ok := d.workers[id]
	if !ok || now.Sub(w.seen) >= d.ttl {
		return WorkerInfo{}, false
	}
	return w.info, true
}

// reports reports whether worker id reported within the workers' TTL.
func (d *dispatcher) reports(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.live(id, time.Now())
	return ok
}

// pick chooses the worker for a turn of folder dir and counts the turn
// against it; "" when no worker is live. The folder's last worker, if it
// is live and has a free slot (by this gateway's count of what it gave
// each worker, or the worker's own report when higher); else the live
// worker with the most free
// slots (then the fewest folders, then the id); when all are full, the
// folder's last worker if live (the job waits in its queue), else the
// least loaded. A draining worker gets nothing.
func (d *dispatcher) pick(turn, dir string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	folders := map[string]int{}
	for _, w := range d.last {
		folders[w]++
	}
	used := d.used
	free := func(wi WorkerInfo) int { return wi.Slots - used(wi) }
	var best, least WorkerInfo
	for id := range d.workers {
		wi, ok := d.live(id, now)
		if !ok || wi.Draining || wi.Slots < 1 {
			continue
		}
		wi.ID = id
		if best.ID == "" || free(wi) > free(best) ||
			free(wi) == free(best) && (folders[id] < folders[best.ID] || folders[id] == folders[best.ID] && id < best.ID) {
			best = wi
		}
		// least loaded: the lowest in-flight/slots ratio
		if least.ID == "" || used(wi)*least.Slots < used(least)*wi.Slots ||
			used(wi)*least.Slots == used(least)*wi.Slots && id < least.ID {
			least = wi
		}
	}
	if best.ID == "" {
		return ""
	}
	choice := least.ID
	sticky, stickyLive := d.live(d.last[dir], now)
	sticky.ID = d.last[dir]
	stickyLive = stickyLive && !sticky.Draining && sticky.Slots >= 1
	switch {
	case stickyLive && free(sticky) > 0:
		choice = d.last[dir]
	case free(best) > 0:
		choice = best.ID
	case stickyLive:
		choice = d.last[dir]
	}
	a := assignment{dir: dir, worker: choice}
	if last := d.last[dir]; last != choice {
		a.from = last
	}
	d.turns[turn] = a
	d.load[choice]++
	return choice
}

// ran records that worker took or ran turn: its folder sticks to it.
func (d *dispatcher) ran(turn, worker string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.turns[turn]; ok && worker != "" {
		d.last[a.dir] = worker
	}
}

// moved is the worker turn's folder ran on last when turn went to another
// ("" when it stayed, or the folder is new here).
func (d *dispatcher) moved(turn string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.turns[turn].from
}

// done ends turn's count against its worker; finished is its outcome's
// Finished (0: none came).
func (d *dispatcher) done(turn string, finished int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a, ok := d.turns[turn]
	if !ok {
		return
	}
	delete(d.turns, turn)
	if w, ok := d.workers[a.worker]; ok && (finished == 0 || finished > w.info.Finished) {
		w.ended = append(w.ended, finished)
		d.workers[a.worker] = w
	}
	if d.load[a.worker]--; d.load[a.worker] <= 0 {
		delete(d.load, a.worker)
	}
}

// assign picks the worker for turn, waiting (checking every check) while
// no worker is live (logged once on log, so that an operator sees why the
// turn does not start), until ctx ends or deadline passes. The caller calls
// done(turn) once the turn is over.
func (d *dispatcher) assign(ctx context.Context, turn, dir string, deadline time.Time, check time.Duration, log *slog.Logger) (string, agent.Result, error) {
	res := agent.Result{ExitCode: -1, NotStarted: true}
	d.mu.Lock()
	news := d.news
	d.mu.Unlock()
	if w := d.pick(turn, dir); w != "" {
		return w, res, nil
	}
	log.Warn("remote turn waits for a worker: none is live and taking turns; start `switchboard worker --nats URL`", "turn", turn, "dir", dir,
		"deadline", deadline)
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	tick := time.NewTicker(check)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", res, agent.Cancelled(ctx.Err())
		case <-wait.C:
			res.TimedOut = true
			return "", res, agent.Failed("no worker was connected to NATS until the turn's deadline (agent.timeout): " +
				"start `switchboard worker --nats URL` on a worker machine, or set agent.runner to local")
		case <-news:
		case <-tick.C:
		}
		d.mu.Lock()
		news = d.news
		d.mu.Unlock()
		if w := d.pick(turn, dir); w != "" {
			return w, res, nil
		}
	}
}
