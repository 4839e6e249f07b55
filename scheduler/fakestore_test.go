package scheduler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"switchboard/groups"
)

// fakeStore is an in-memory Store and ClaimQueuer that honours the
// documented contract (compare-and-set on Next, runs unique on task and
// slot, turns queued with their claims), so that a SQL store and this fake
// can be held to the same tests.
type fakeStore struct {
	mu      sync.Mutex
	tasks   map[int64]*Task
	nextID  int64
	runs    []fakeRun // run id = index + 1
	claimed map[runKey]int64
	skipped map[int64]int  // task → slots passed over by SkipRuns
	queued  []FakeTurn     // turns queued by ClaimAndQueue, in order
	missed  map[int64]bool // run ids claimed as missed runs (Claim.Missed)
	gone    map[groups.Folder]bool

	nextDueCalls, dueCalls, claimCalls int
	failDue                            int // fail this many DueTasks calls first

	// afterClaim, when set, runs for every claim of a committed ClaimRuns
	// (outside the lock): tests use it to "crash" a loop between claim and
	// fire.
	afterClaim func(a Advance, slot time.Time, claimed bool)
}

type runKey struct {
	task int64
	slot int64 // Unix seconds, as a SQL store would keep it
}

type fakeRun struct {
	ID     int64
	TaskID int64
	Slot   time.Time
	Status string
	Reason string
}

var errFakeStore = errors.New("fake store unavailable")

func newFakeStore() *fakeStore {
	return &fakeStore{tasks: map[int64]*Task{}, claimed: map[runKey]int64{}, skipped: map[int64]int{}, gone: map[groups.Folder]bool{},
		missed: map[int64]bool{}}
}

// add stores a copy of t as a new active task and returns its id.
func (f *fakeStore) add(t Task) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	t.ID = f.nextID
	if t.Status == "" {
		t.Status = StatusActive
	}
	f.tasks[t.ID] = &t
	return t.ID
}

func (f *fakeStore) task(id int64) Task {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.tasks[id]
}

func (f *fakeStore) update(id int64, fn func(*Task)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f.tasks[id])
}

// removeFolder makes the turns of the folder's tasks unqueueable.
func (f *fakeStore) removeFolder(folder groups.Folder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gone[folder] = true
}

func (f *fakeStore) allQueued() []FakeTurn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queued)
}

func (f *fakeStore) allRuns() []fakeRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.runs)
}

func (f *fakeStore) calls() (nextDue, due int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nextDueCalls, f.dueCalls
}

func (f *fakeStore) claimCallCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.claimCalls
}

func (f *fakeStore) DueTasks(ctx context.Context, now time.Time, limit int) ([]Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dueCalls++
	if f.failDue > 0 {
		f.failDue--
		return nil, errFakeStore
	}
	var due []Task
	for _, t := range f.tasks {
		if t.Status == StatusActive && !t.Next.IsZero() && !t.Next.After(now) {
			due = append(due, *t)
		}
	}
	slices.SortFunc(due, func(a, b Task) int {
		return cmp.Or(a.Next.Compare(b.Next), cmp.Compare(a.ID, b.ID))
	})
	if len(due) > limit {
		due = due[:limit]
	}
	return due, nil
}

func (f *fakeStore) NextDue(ctx context.Context) (time.Time, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextDueCalls++
	var next time.Time
	for _, t := range f.tasks {
		if t.Status == StatusActive && !t.Next.IsZero() && (next.IsZero() || t.Next.Before(next)) {
			next = t.Next
		}
	}
	return next, !next.IsZero(), nil
}

// applies reports whether a may change its task (step 1 of ClaimRuns).
func (f *fakeStore) applies(a Advance) (*Task, bool) {
	t, ok := f.tasks[a.TaskID]
	if !ok || t.Status != StatusActive || !t.Next.Equal(a.From) {
		return nil, false
	}
	return t, true
}

// advance is step 4 of ClaimRuns.
func advance(t *Task, a Advance) {
	if a.HasNext {
		t.Next = a.Next
		return
	}
	t.Status, t.Next = StatusCompleted, time.Time{}
}

func (f *fakeStore) ClaimRuns(ctx context.Context, claims []Claim) ([]int64, error) {
	runIDs, _ := f.claimRuns(claims, false)
	return runIDs, nil
}

func (f *fakeStore) ClaimAndQueue(ctx context.Context, claims []Claim) ([]int64, []error, error) {
	runIDs, errs := f.claimRuns(claims, true)
	return runIDs, errs, nil
}

// claimRuns is ClaimRuns, and ClaimAndQueue when queue is set.
func (f *fakeStore) claimRuns(claims []Claim, queue bool) ([]int64, []error) {
	f.mu.Lock()
	f.claimCalls++
	runIDs, errs := make([]int64, len(claims)), make([]error, len(claims))
	for i, c := range claims {
		runIDs[i] = f.claim(c.Advance, c.Slot)
		if runIDs[i] != 0 && c.Missed {
			f.missed[runIDs[i]] = true
		}
		if queue && runIDs[i] != 0 {
			errs[i] = f.queue(c.TaskID, runIDs[i])
		}
	}
	f.mu.Unlock()
	if f.afterClaim != nil {
		for i, c := range claims {
			f.afterClaim(c.Advance, c.Slot, runIDs[i] != 0)
		}
	}
	return runIDs, errs
}

// queue queues the turn of a claimed run or, when the task's folder is
// gone, fails the run; f.mu is held.
func (f *fakeStore) queue(taskID, runID int64) error {
	t := f.tasks[taskID]
	if f.gone[t.Folder] {
		err := fmt.Errorf("group %s no longer exists", t.Folder)
		f.runs[runID-1].Status, f.runs[runID-1].Reason = RunFailed, err.Error()
		return err
	}
	f.queued = append(f.queued, FakeTurn{RunID: runID, TaskID: taskID, Folder: t.Folder, ChatJID: t.ChatJID,
		Prompt: t.Prompt, Isolated: t.Context == ContextIsolated})
	return nil
}

// claim applies one claim; f.mu is held.
func (f *fakeStore) claim(a Advance, slot time.Time) int64 {
	t, ok := f.applies(a)
	if !ok {
		return 0
	}
	advance(t, a)
	key := runKey{a.TaskID, slot.Unix()}
	if _, dup := f.claimed[key]; dup {
		return 0
	}
	id := int64(len(f.runs) + 1)
	f.runs = append(f.runs, fakeRun{ID: id, TaskID: a.TaskID, Slot: slot, Status: RunFired})
	f.claimed[key] = id
	return id
}

func (f *fakeStore) SkipRuns(ctx context.Context, a Advance, skipped int) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.applies(a)
	if !ok {
		return false, nil
	}
	advance(t, a)
	f.skipped[a.TaskID] += skipped
	return true, nil
}

func (f *fakeStore) FailRun(ctx context.Context, runID int64, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if runID < 1 || int(runID) > len(f.runs) {
		return errors.New("no such run")
	}
	if r := &f.runs[runID-1]; r.Status == RunFired {
		r.Status, r.Reason = RunFailed, reason
	}
	return nil
}

// fire is one call of fakeFirer.Fire.
type fire struct {
	Task  int64
	Slot  time.Time
	Run   int64
	At    time.Time // the clock when Fire was called
	Alive bool      // false: the "process" had crashed (ctx done)
}

// fakeFirer records fires; err, when set, decides Fire's result.
type fakeFirer struct {
	mu    sync.Mutex
	fires []fire
	err   func(Task) error
}

func (f *fakeFirer) Fire(ctx context.Context, t Task, slot time.Time, runID int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fires = append(f.fires, fire{Task: t.ID, Slot: slot, Run: runID, At: time.Now(), Alive: ctx.Err() == nil})
	if f.err != nil {
		return f.err(t)
	}
	return nil
}

// fakeStarter is a fakeFirer that is also a TurnStarter, so that a Loop
// over a fakeStore claims and queues; it records each started turn as a
// fire, and counts Fire calls apart (there should be none).
type fakeStarter struct {
	fakeFirer
	fireCalls int
}

func (f *fakeStarter) Fire(ctx context.Context, t Task, slot time.Time, runID int64) error {
	f.mu.Lock()
	f.fireCalls++
	f.mu.Unlock()
	return f.fakeFirer.Fire(ctx, t, slot, runID)
}

func (f *fakeStarter) StartTurns(ctx context.Context, fires []Fired) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fr := range fires {
		f.fires = append(f.fires, fire{Task: fr.Task.ID, Slot: fr.Slot, Run: fr.RunID, At: time.Now(), Alive: ctx.Err() == nil})
	}
}

// recorder is what the loop tests read back from either firer.
type recorder interface {
	Firer
	all() []fire
}

// firers are the two ways a Loop fires (see Loop): each loop test that
// does not depend on the way runs under both.
var firers = []struct {
	name string
	new  func() recorder
}{
	{"claim then fire", func() recorder { return &fakeFirer{} }},
	{"claim and queue", func() recorder { return &fakeStarter{} }},
}

func (f *fakeFirer) all() []fire {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fires)
}
