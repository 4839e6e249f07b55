package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the Loop's source of time. SystemClock is the real one; under
// testing/synctest it is also the fake one, since time.Now and time.Timer
// follow the bubble's clock.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer the Loop uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// SystemClock returns the Clock backed by package time.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// Loop defaults.
const (
	DefaultGrace     = time.Minute
	DefaultMaxSleep  = 10 * time.Minute
	DefaultBatchSize = 100
	maxBackoff       = time.Minute
)

// Loop fires due tasks: it sleeps until the earliest Next in the Store (no
// polling), wakes early on Wake, and claims due slots before it starts
// their turns. On-time slots are claimed a batch (BatchSize) at a time, in
// one transaction, so that a burst of tasks due at the same instant costs
// one commit per batch, not per slot.
//
// A slot is claimed and fired in one of two ways:
//
//   - claim, then fire: Store.ClaimRuns commits the claims, then
//     Firer.Fire queues each claimed slot's turn;
//   - claim and queue: when the Store is a ClaimQueuer and the Firer a
//     TurnStarter, Store.ClaimAndQueue queues the turns in the claims' own
//     transaction, and TurnStarter.StartTurns then starts them all at once.
//     The gateway over the SQL store works this way.
//
// # Crash safety
//
// A slot fires at most once, across crashes, restarts and concurrent loops:
// the claim (run row unique on task and slot, and the task's Next moved past
// the slot, compare-and-set on the old Next) commits before any turn can
// start, and nothing ever claims a slot behind a task's Next again. The
// price is that a slot can be lost: claimed, but no turn started. Every
// lost slot is visible in the run history:
//
//   - its turn could not be queued (Fire returned an error, or
//     ClaimAndQueue found the task's folder gone): the run is "failed" with
//     the reason;
//   - claim, then fire only: the process died between ClaimRuns committing
//     and Fire queueing the turn. The run stays "fired" with no turn (the
//     gateway marks such runs failed as interrupted at its next start). A
//     batch's claims all commit before its first fire, so one crash can
//     lose up to BatchSize on-time slots. Claim and queue has no such
//     window: a crash before the commit leaves the slots unclaimed (they
//     fire, or go through the missed policy, at the next start), and a
//     crash after it leaves their turns queued (they run at the next start).
//
// A lost slot is not retried, because the scheduler cannot tell "never
// started" from "started, then the process died mid-turn", and a second run
// of a prompt with side effects (posting to a chat) is worse than a visible
// failed run. A crash between two catch-up claims loses nothing: the
// unclaimed slots are still behind the task's Next and are handled at the
// next start.
//
// # Lateness
//
// A due slot at most Grace late runs normally. An older one is a missed
// run: the task's Missed policy decides what runs (see Catchup), the same
// way at startup and after the host was suspended or the store stalled.
// Only the latest due slot of a task can be on time: when a newer slot is
// due as well (an interval shorter than Grace, after a short downtime or
// while the loop fell behind), the older ones are missed and the policy
// decides, so that missed=skip never fires a burst of back-to-back runs.
//
// Set the exported fields before Run or Startup; they must not change after.
type Loop struct {
	// Grace is how late a slot may be handled and still count as on time
	// (NewLoop sets DefaultGrace; zero means no grace).
	Grace time.Duration
	// MaxSleep caps one sleep, so that a stepped wall clock or a suspended
	// host (monotonic timers stop while suspended) delays a slot by at most
	// this much. Zero or negative means DefaultMaxSleep.
	MaxSleep time.Duration
	// MaxCatchup caps the runs of one task's MissedAll catch-up. Zero or
	// negative means MaxCatchup.
	MaxCatchup int
	// BatchSize is the limit passed to Store.DueTasks, and so the most
	// on-time slots claimed in one Store.ClaimRuns. Zero or negative means
	// DefaultBatchSize.
	BatchSize int

	store   Store
	firer   Firer
	queuer  ClaimQueuer // with starter: claim and queue (nil: claim, then fire)
	starter TurnStarter
	clock   Clock
	log     *slog.Logger
	wake    chan struct{}
	running atomic.Bool

	passMu sync.Mutex             // one pass at a time (Startup and Run)
	cache  map[[2]string]Schedule // spec, zone → parsed; under passMu
}

// NewLoop returns a Loop over store and firer. A nil clock means
// SystemClock; a nil log discards.
func NewLoop(store Store, firer Firer, clock Clock, log *slog.Logger) *Loop {
	if clock == nil {
		clock = SystemClock()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	queuer, _ := store.(ClaimQueuer)
	starter, _ := firer.(TurnStarter)
	if queuer == nil || starter == nil {
		queuer, starter = nil, nil
	}
	return &Loop{
		Grace:      DefaultGrace,
		MaxSleep:   DefaultMaxSleep,
		MaxCatchup: MaxCatchup,
		BatchSize:  DefaultBatchSize,
		store:      store,
		firer:      firer,
		queuer:     queuer,
		starter:    starter,
		clock:      clock,
		log:        log,
		wake:       make(chan struct{}, 1),
		cache:      make(map[[2]string]Schedule),
	}
}

// Wake tells the loop that tasks changed (added, resumed, cancelled), so it
// recomputes its sleep. It never blocks, and wakes that arrive while the
// loop is busy coalesce into one. The loop does not watch the store: a task
// written by another process (the CLI) is seen when the gateway, noticing
// the database change, calls Wake, or at the latest after MaxSleep.
func (l *Loop) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Startup handles every task due at now before the loop starts serving:
// missed slots go through each task's policy, on-time slots fire. Run does
// the same on every wake, so Startup is optional; calling it first lets the
// gateway fail fast when the store is unusable and finish catch-up before it
// reports ready. It returns the first store error.
func (l *Loop) Startup(ctx context.Context, now time.Time) error {
	_, err := l.pass(ctx, now)
	return err
}

// Run fires due tasks until ctx is done, then returns nil. Store errors are
// logged and retried with backoff (1s doubling to a minute); they do not end
// the loop. Run returns ErrLoopRunning if the Loop is already running.
func (l *Loop) Run(ctx context.Context) error {
	if !l.running.CompareAndSwap(false, true) {
		return ErrLoopRunning
	}
	defer l.running.Store(false)
	var backoff time.Duration
	for ctx.Err() == nil {
		wait, err := l.step(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			backoff = min(max(2*backoff, time.Second), maxBackoff)
			l.log.Error("scheduler pass", "err", err, "retry_in", backoff)
			wait = backoff
		} else {
			backoff = 0
		}
		if !l.sleep(ctx, wait) {
			break
		}
	}
	return nil
}

// step runs one pass and returns how long to sleep: 0 to go again at once,
// negative to sleep until woken.
func (l *Loop) step(ctx context.Context) (time.Duration, error) {
	now := l.clock.Now()
	progressed, err := l.pass(ctx, now)
	if err != nil {
		return 0, err
	}
	next, ok, err := l.store.NextDue(ctx)
	if err != nil {
		return 0, fmt.Errorf("find next due task: %w", err)
	}
	if !ok {
		return -1, nil
	}
	if !next.After(now) && progressed == 0 {
		// The pass made no headway on a task that is due: the store keeps
		// refusing its claims. Back off rather than spin.
		return 0, fmt.Errorf("due task at %s cannot be claimed", next.Format(time.RFC3339))
	}
	return min(max(next.Sub(l.clock.Now()), 0), orDefault(l.MaxSleep, DefaultMaxSleep)), nil
}

// sleep waits for d (forever when negative), a Wake, or ctx; it reports
// false when ctx is done.
func (l *Loop) sleep(ctx context.Context, d time.Duration) bool {
	var timeout <-chan time.Time
	if d == 0 {
		return ctx.Err() == nil
	}
	if d > 0 {
		t := l.clock.NewTimer(d)
		defer t.Stop()
		timeout = t.C()
	}
	select {
	case <-ctx.Done():
		return false
	case <-l.wake:
	case <-timeout:
	}
	return true
}

// pass handles every task due at now, batch by batch, and returns how many
// tasks it moved forward. It stops when nothing is due or a whole batch made
// no headway (claims refused), so it cannot spin.
func (l *Loop) pass(ctx context.Context, now time.Time) (int, error) {
	l.passMu.Lock()
	defer l.passMu.Unlock()
	total := 0
	for ctx.Err() == nil {
		tasks, err := l.store.DueTasks(ctx, now, orDefault(l.BatchSize, DefaultBatchSize))
		if err != nil {
			return total, fmt.Errorf("list due tasks: %w", err)
		}
		moved, err := l.handleBatch(ctx, tasks, now)
		total += moved
		if err != nil {
			return total, err
		}
		if len(tasks) == 0 || moved == 0 {
			break
		}
	}
	return total, nil
}

// handleBatch handles one batch of due tasks and reports how many moved
// forward. Missed slots and unusable schedules are handled task by task; the
// on-time slots of all the others are claimed together, then fired in order.
// DueTasks orders by Next, so the missed tasks (the oldest) come first.
func (l *Loop) handleBatch(ctx context.Context, tasks []Task, now time.Time) (int, error) {
	cutoff := now.Add(-max(l.Grace, 0))
	moved := 0
	var onTime []Task
	var claims []Claim
	for _, t := range tasks {
		s, err := l.schedule(t)
		var ok bool
		var onTimeAt time.Time
		if err == nil {
			onTimeAt = onTimeSlot(s, t.Next, now, cutoff)
		}
		switch {
		case err != nil:
			ok, err = l.retire(ctx, t, err)
		case !t.Next.Equal(onTimeAt):
			// Every due slot before the one that may still run on time
			// is missed: the policy decides what runs, in one go; the
			// on-time slot comes back in the pass's next batch.
			ok, err = l.catchUp(ctx, t, s, onTimeAt.Add(-time.Nanosecond))
		default:
			next, hasNext := s.Next(t.Next)
			onTime = append(onTime, t)
			claims = append(claims, Claim{Advance: Advance{TaskID: t.ID, From: t.Next, Next: next, HasNext: hasNext}, Slot: t.Next})
			continue
		}
		if err != nil {
			return moved, err
		}
		if ok {
			moved++
		}
	}
	n, err := l.claimAndFire(ctx, onTime, claims)
	return moved + n, err
}

// claimAndFire claims the on-time slots of tasks (claims[i] is tasks[i]'s)
// in one transaction and fires each one claimed, in order. It claims
// nothing once ctx is done, since a claim made then could not be fired.
func (l *Loop) claimAndFire(ctx context.Context, tasks []Task, claims []Claim) (int, error) {
	if len(claims) == 0 || ctx.Err() != nil {
		return 0, nil
	}
	runIDs, err := l.claimFire(ctx, tasks, claims)
	if err != nil {
		return 0, fmt.Errorf("claim %d on-time runs: %w", len(claims), err)
	}
	moved := 0
	for _, runID := range runIDs {
		if runID != 0 {
			moved++
		}
	}
	return moved, nil
}

// claimFire claims slots (claims[i] is a slot of tasks[i]) in one store
// call, starts the turn of each one claimed, in order, and returns the run
// ids (0: not claimed). See Loop for the two ways it works.
func (l *Loop) claimFire(ctx context.Context, tasks []Task, claims []Claim) ([]int64, error) {
	if l.queuer == nil {
		runIDs, err := l.claim(ctx, claims)
		if err != nil {
			return nil, err
		}
		for i, runID := range runIDs {
			if runID == 0 {
				l.log.Debug("run not claimed", "task", tasks[i].ID, "slot", claims[i].Slot)
				continue
			}
			l.fire(ctx, tasks[i], claims[i].Slot, runID)
		}
		return runIDs, nil
	}
	runIDs, errs, err := l.queuer.ClaimAndQueue(ctx, claims)
	if err == nil && (len(runIDs) != len(claims) || len(errs) != len(claims)) {
		err = fmt.Errorf("store answered %d of %d claims (%d errors)", len(runIDs), len(claims), len(errs))
	}
	if err != nil {
		return nil, err
	}
	fires := make([]Fired, 0, len(claims))
	for i, runID := range runIDs {
		if runID != 0 && errs[i] == nil {
			fires = append(fires, Fired{Task: tasks[i], Slot: claims[i].Slot, RunID: runID})
		}
	}
	if len(fires) > 0 {
		l.starter.StartTurns(ctx, fires)
	}
	// Logged once the turns are started, so that logging cannot delay them.
	for i, runID := range runIDs {
		t := tasks[i]
		switch {
		case runID == 0:
			l.log.Debug("run not claimed", "task", t.ID, "slot", claims[i].Slot)
		case errors.Is(errs[i], ErrRunWaiting):
			l.log.Info("task run skipped", "task", t.ID, "folder", t.Folder, "slot", claims[i].Slot, "run", runID, "reason", errs[i])
		case errs[i] != nil:
			l.log.Error("fire task", "task", t.ID, "folder", t.Folder, "slot", claims[i].Slot, "run", runID, "err", errs[i])
		default:
			l.log.Info("task fired", "task", t.ID, "folder", t.Folder, "slot", claims[i].Slot, "run", runID)
		}
	}
	return runIDs, nil
}

// claim calls Store.ClaimRuns and checks that it answered every claim.
func (l *Loop) claim(ctx context.Context, claims []Claim) ([]int64, error) {
	runIDs, err := l.store.ClaimRuns(ctx, claims)
	if err == nil && len(runIDs) != len(claims) {
		err = fmt.Errorf("store answered %d of %d claims", len(runIDs), len(claims))
	}
	return runIDs, err
}

// maxOnTimeWalk bounds the slots onTimeSlot looks at; more slots than
// this within Grace (a Grace far longer than the interval) are handled by
// the next pass.
const maxOnTimeWalk = 1000

// onTimeSlot returns the one due slot of a task that still runs on time:
// the latest slot at or before now, when it is at or after cutoff (at most
// Grace late). next is the task's first unrun slot, at or before now. When no
// slot is that recent it returns cutoff plus a nanosecond, so that every due
// slot counts as missed. Every slot before the returned one is missed, not
// merely late: a newer slot came due while it waited (the gateway was down,
// or the loop fell behind).
func onTimeSlot(s Schedule, next, now, cutoff time.Time) time.Time {
	none := cutoff.Add(time.Nanosecond)
	first := next
	if first.Before(cutoff) {
		switch s.kind {
		case KindInterval:
			k := (cutoff.Sub(next) + s.every - 1) / s.every
			first = next.Add(k * s.every).In(s.loc)
		default:
			var ok bool
			if first, ok = s.Next(cutoff.Add(-time.Nanosecond)); !ok {
				return none
			}
		}
		if first.After(now) {
			return none
		}
	}
	if s.kind == KindInterval {
		return first.Add(now.Sub(first) / s.every * s.every).In(s.loc)
	}
	last := first
	for range maxOnTimeWalk {
		t, ok := s.Next(last)
		if !ok || t.After(now) {
			break
		}
		last = t
	}
	return last
}

// catchUp applies t's missed-run policy to its slots up to cutoff; slots
// after it are on time and come back in the pass's next batch.
func (l *Loop) catchUp(ctx context.Context, t Task, s Schedule, cutoff time.Time) (bool, error) {
	runs, next, hasNext, dropped := Catchup(s, t.Next, cutoff, t.Missed, l.MaxCatchup)
	l.log.Info("missed runs", "task", t.ID, "folder", t.Folder, "policy", string(t.Missed),
		"first", t.Next, "run", len(runs), "dropped", dropped)
	if len(runs) == 0 {
		ok, err := l.store.SkipRuns(ctx, Advance{TaskID: t.ID, From: t.Next, Next: next, HasNext: hasNext}, dropped)
		if err != nil {
			return false, fmt.Errorf("skip missed runs of task %d: %w", t.ID, err)
		}
		return ok, nil
	}
	return l.runSlots(ctx, t, runs, next, hasNext)
}

// runSlots claims and fires a catch-up's slots in order, one claim each, so
// that a crash between two of them loses nothing: each claim moves the
// task's Next to the following slot and the last to next. It stops at the
// first refused claim (the task changed under it) or when ctx is done.
func (l *Loop) runSlots(ctx context.Context, t Task, slots []time.Time, next time.Time, hasNext bool) (bool, error) {
	from, moved := t.Next, false
	for i, slot := range slots {
		if ctx.Err() != nil {
			return moved, nil
		}
		a := Advance{TaskID: t.ID, From: from, Next: next, HasNext: hasNext}
		if i+1 < len(slots) {
			a.Next, a.HasNext = slots[i+1], true
		}
		runIDs, err := l.claimFire(ctx, []Task{t}, []Claim{{Advance: a, Slot: slot, Missed: true}})
		if err != nil {
			return moved, fmt.Errorf("claim run of task %d at %s: %w", t.ID, slot.Format(time.RFC3339), err)
		}
		if runIDs[0] == 0 {
			return moved, nil
		}
		moved, from = true, a.Next
	}
	return moved, nil
}

// fire hands a claimed slot to the Firer and, if it refuses, marks the run
// failed. The claim stands either way (at most once, see Loop).
func (l *Loop) fire(ctx context.Context, t Task, slot time.Time, runID int64) {
	err := l.firer.Fire(ctx, t, slot, runID)
	if err == nil {
		l.log.Info("task fired", "task", t.ID, "folder", t.Folder, "slot", slot, "run", runID)
		return
	}
	l.log.Error("fire task", "task", t.ID, "folder", t.Folder, "slot", slot, "run", runID, "err", err)
	// The run must be marked even when ctx was cancelled mid-fire.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if ferr := l.store.FailRun(fctx, runID, err.Error()); ferr != nil {
		l.log.Error("mark run failed", "task", t.ID, "run", runID, "err", ferr)
	}
}

// retire ends a due task whose schedule no longer parses (a zone missing
// from this host, or a spec edited behind the scheduler's back): it claims
// the due slot as the last one and marks that run failed with the reason,
// so the task stops being due and its history says why.
func (l *Loop) retire(ctx context.Context, t Task, cause error) (bool, error) {
	l.log.Error("task schedule unusable; completing task", "task", t.ID, "folder", t.Folder, "err", cause)
	runIDs, err := l.claim(ctx, []Claim{{Advance: Advance{TaskID: t.ID, From: t.Next}, Slot: t.Next}})
	if err != nil {
		return false, fmt.Errorf("retire task %d: %w", t.ID, err)
	}
	if runIDs[0] == 0 {
		return false, nil
	}
	if err := l.store.FailRun(ctx, runIDs[0], "schedule unusable: "+cause.Error()); err != nil {
		return true, fmt.Errorf("retire task %d: %w", t.ID, err)
	}
	return true, nil
}

// orDefault guards the exported knobs: a zero or negative value (which for
// MaxSleep would make the loop spin) means the default.
func orDefault[T time.Duration | int](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// schedule parses a task's schedule, caching by spec and zone.
func (l *Loop) schedule(t Task) (Schedule, error) {
	key := [2]string{t.Spec, t.Timezone}
	if s, ok := l.cache[key]; ok {
		return s, nil
	}
	s, err := Parse(t.Spec, t.Timezone)
	if err != nil {
		return Schedule{}, fmt.Errorf("task %d: %w", t.ID, err)
	}
	if len(l.cache) >= 4096 {
		clear(l.cache)
	}
	l.cache[key] = s
	return s, nil
}
