// Package schedulertest holds the conformance suite for scheduler.Store:
// a store implementation (the SQL one, the scheduler's in-memory fake) runs
// TestStore from its own tests to show that it honours the contract
// documented on scheduler.Store, claim-once included, and on
// scheduler.ClaimQueuer when it has that capability.
package schedulertest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/groups"
	"switchboard/scheduler"
)

// Run is a run row as the suite inspects it.
type Run struct {
	ID     int64
	Slot   time.Time
	Status string
	Reason string
}

// Turn is a task turn queued by ClaimAndQueue, as the suite inspects it.
type Turn struct {
	RunID, TaskID int64
	Folder        groups.Folder
	ChatJID       string
	Prompt        string
	Isolated      bool // the task's context is "isolated"
}

// Harness gives the suite a fresh, empty store and the few extra
// operations the Store interface leaves to the rest of the program.
type Harness struct {
	Store scheduler.Store
	// AddTask stores t (its ID is ignored) and returns the new ID; t's
	// folder exists from then on.
	AddTask func(t scheduler.Task) int64
	// Task reads a task back.
	Task func(id int64) scheduler.Task
	// Runs lists a task's runs, oldest first.
	Runs func(taskID int64) []Run

	// For a store that is a scheduler.ClaimQueuer:

	// Queued lists the task turns queued, oldest first.
	Queued func() []Turn
	// RemoveFolder deletes a folder, so that the turns of its tasks can no
	// longer be queued.
	RemoveFolder func(folder groups.Folder)
}

// base is a slot in a zone with daylight saving, to catch stores that
// compare local strings instead of instants.
var base = func() time.Time {
	loc, err := scheduler.LoadZone("America/New_York")
	if err != nil { // unreachable: package scheduler embeds tzdata
		loc = time.FixedZone("EDT", -4*60*60)
	}
	return time.Date(2027, 3, 14, 3, 0, 0, 0, loc)
}()

func task(next time.Time) scheduler.Task {
	return scheduler.Task{
		Folder: "main", ChatJID: "web:alice", Prompt: "check the news", Spec: "0 * * * *",
		Kind: scheduler.KindCron, Timezone: "America/New_York", Context: "isolated",
		Missed: scheduler.MissedOnce, Status: scheduler.StatusActive, Next: next, CreatedBy: "main",
	}
}

// TestStore runs the conformance suite; newHarness must return a harness
// over a fresh, empty store for each call.
func TestStore(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"DueTasksFiltersAndOrders", testDueTasks},
		{"NextDue", testNextDue},
		{"ClaimRunAdvancesAndRecords", testClaimRun},
		{"ClaimRunsBatch", testClaimRunsBatch},
		{"ClaimRunCompareAndSet", testClaimRunRefused},
		{"ClaimRunDuplicateSlotStillAdvances", testClaimRunDuplicate},
		{"ClaimRunCompletes", testClaimRunCompletes},
		{"SkipRuns", testSkipRuns},
		{"FailRun", testFailRun},
		{"ConcurrentClaimsOneWins", testConcurrentClaims},
		{"ClaimAndQueueBatch", testClaimAndQueueBatch},
		{"ClaimAndQueueFolderGone", testClaimAndQueueFolderGone},
		{"ConcurrentClaimAndQueueOneWins", testConcurrentClaimAndQueue},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newHarness(t)) })
	}
}

// queuer returns h's store as a ClaimQueuer, or skips the test.
func queuer(t *testing.T, h Harness) scheduler.ClaimQueuer {
	t.Helper()
	q, ok := h.Store.(scheduler.ClaimQueuer)
	if !ok {
		t.Skip("the store is not a scheduler.ClaimQueuer")
	}
	if h.Queued == nil || h.RemoveFolder == nil {
		t.Fatal("a ClaimQueuer's harness needs Queued and RemoveFolder")
	}
	return q
}

func testDueTasks(t *testing.T, h Harness) {
	ctx := t.Context()
	a := h.AddTask(task(base.Add(2 * time.Minute)))
	b := h.AddTask(task(base.Add(time.Minute)))
	paused := task(base)
	paused.Status = scheduler.StatusPaused
	h.AddTask(paused)
	h.AddTask(task(base.Add(time.Hour)))
	f := h.AddTask(task(base.Add(time.Minute).UTC())) // same instant as b, written in UTC
	now := base.Add(2 * time.Minute).In(time.UTC)
	due, err := h.Store.DueTasks(ctx, now, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(due); !slices.Equal(got, []int64{b, f, a}) {
		t.Fatalf("DueTasks = %v, want %v (by Next, then ID; active only)", got, []int64{b, f, a})
	}
	if want := task(base.Add(time.Minute)); !sameTask(due[0], want) {
		t.Errorf("DueTasks returned %+v, want the stored fields %+v", due[0], want)
	}
	if due, _ := h.Store.DueTasks(ctx, now, 2); !slices.Equal(ids(due), []int64{b, f}) {
		t.Errorf("DueTasks limit 2 = %v, want %v", ids(due), []int64{b, f})
	}
}

func testNextDue(t *testing.T, h Harness) {
	ctx := t.Context()
	if _, ok, err := h.Store.NextDue(ctx); err != nil || ok {
		t.Fatalf("empty store: NextDue ok=%v err=%v, want none", ok, err)
	}
	paused := task(base)
	paused.Status = scheduler.StatusPaused
	h.AddTask(paused)
	h.AddTask(task(base.Add(time.Hour)))
	h.AddTask(task(base.Add(time.Minute)))
	next, ok, err := h.Store.NextDue(ctx)
	if err != nil || !ok || !next.Equal(base.Add(time.Minute)) {
		t.Errorf("NextDue = %s %v %v, want %s (paused tasks ignored)", next, ok, err, base.Add(time.Minute))
	}
}

func testClaimRun(t *testing.T, h Harness) {
	id := h.AddTask(task(base))
	a := scheduler.Advance{TaskID: id, From: base.UTC(), Next: base.Add(time.Hour), HasNext: true}
	runID, claimed, err := claim(t, h, a, base)
	if err != nil || !claimed {
		t.Fatalf("claim = %d %v %v, want a claimed run", runID, claimed, err)
	}
	if got := h.Task(id); !got.Next.Equal(base.Add(time.Hour)) || got.Status != scheduler.StatusActive {
		t.Errorf("task after claim: status %q Next %s, want active at %s", got.Status, got.Next, base.Add(time.Hour))
	}
	runs := h.Runs(id)
	if len(runs) != 1 || runs[0].ID != runID || !runs[0].Slot.Equal(base) || runs[0].Status != scheduler.RunFired {
		t.Errorf("runs %+v, want one %q run %d at %s", runs, scheduler.RunFired, runID, base)
	}
}

// testClaimRunsBatch: one call applies its claims in order, each on its
// own terms: claimed, refused, duplicate and completing claims mixed, and
// two chained claims of one task.
func testClaimRunsBatch(t *testing.T, h Harness) {
	claimBatch(t, h, h.Store.ClaimRuns)
}

// testClaimAndQueueBatch: ClaimAndQueue claims as ClaimRuns does, and
// queues one turn, from the stored task, for each run it claims.
func testClaimAndQueueBatch(t *testing.T, h Harness) {
	q := queuer(t, h)
	var errs []error
	tasks, runIDs := claimBatch(t, h, func(ctx context.Context, claims []scheduler.Claim) ([]int64, error) {
		runIDs, e, err := q.ClaimAndQueue(ctx, claims)
		errs = e
		return runIDs, err
	})
	if len(errs) != len(runIDs) {
		t.Fatalf("ClaimAndQueue answered %d errors for %d claims", len(errs), len(runIDs))
	}
	var want []Turn
	for i, runID := range runIDs {
		if errs[i] != nil {
			t.Errorf("claim %d: %v", i, errs[i])
		}
		if runID != 0 {
			st := h.Task(tasks[i])
			want = append(want, Turn{RunID: runID, TaskID: st.ID, Folder: st.Folder, ChatJID: st.ChatJID, Prompt: st.Prompt,
				Isolated: st.Context == scheduler.ContextIsolated})
		}
	}
	if got := h.Queued(); !slices.Equal(got, want) {
		t.Errorf("queued turns\n got %+v\nwant %+v (one per run claimed, in order)", got, want)
	}
}

// claimBatch runs the mixed batch through claimRuns and checks the claims; it
// returns each claim's task and run id.
func claimBatch(t *testing.T, h Harness, claimRuns func(context.Context, []scheduler.Claim) ([]int64, error)) (taskIDs, runIDs []int64) {
	ctx := t.Context()
	second := task(base)
	second.Folder, second.ChatJID, second.Prompt, second.Context = "ops", "web:ops", "rotate the keys", "group"
	a, b, dup := h.AddTask(task(base)), h.AddTask(second), h.AddTask(task(base))
	paused := task(base)
	paused.Status = scheduler.StatusPaused
	p := h.AddTask(paused)
	s2, s3 := base.Add(time.Hour), base.Add(2*time.Hour)
	if _, claimed, err := claim(t, h, scheduler.Advance{TaskID: dup, From: base, Next: s2, HasNext: true}, base); err != nil || !claimed {
		t.Fatalf("first claim of the duplicate: %v %v", claimed, err)
	}
	if runIDs, err := claimRuns(ctx, nil); err != nil || len(runIDs) != 0 {
		t.Errorf("claiming no claims = %v %v, want no run ids and no error", runIDs, err)
	}
	claims := []scheduler.Claim{
		{Advance: scheduler.Advance{TaskID: a, From: base, Next: s2, HasNext: true}, Slot: base},
		{Advance: scheduler.Advance{TaskID: p, From: base, Next: s2, HasNext: true}, Slot: base}, // paused
		{Advance: scheduler.Advance{TaskID: b, From: s2, Next: s3, HasNext: true}, Slot: s2},     // stale From
		{Advance: scheduler.Advance{TaskID: dup, From: s2, Next: s3, HasNext: true}, Slot: base}, // slot already run
		{Advance: scheduler.Advance{TaskID: a, From: s2, Next: s3, HasNext: true}, Slot: s2},     // from the first claim's Next
		{Advance: scheduler.Advance{TaskID: b, From: base}, Slot: base},                          // the last slot
	}
	runIDs, err := claimRuns(ctx, claims)
	if err != nil || len(runIDs) != len(claims) {
		t.Fatalf("claiming the batch = %v %v, want %d run ids", runIDs, err, len(claims))
	}
	for i, want := range []bool{true, false, false, false, true, true} {
		if got := runIDs[i] != 0; got != want {
			t.Errorf("claim %d: claimed = %v (run id %d), want %v", i, got, runIDs[i], want)
		}
	}
	if runIDs[0] == runIDs[4] || runIDs[0] == runIDs[5] || runIDs[4] == runIDs[5] {
		t.Errorf("run ids %v are not distinct", runIDs)
	}
	checks := []struct {
		name   string
		id     int64
		next   time.Time
		status scheduler.TaskStatus
		runs   int
	}{
		{"two chained claims", a, s3, scheduler.StatusActive, 2},
		{"refused: paused", p, base, scheduler.StatusPaused, 0},
		{"stale, then completed", b, time.Time{}, scheduler.StatusCompleted, 1},
		{"duplicate still advances", dup, s3, scheduler.StatusActive, 1},
	}
	for _, c := range checks {
		got := h.Task(c.id)
		if !got.Next.Equal(c.next) || got.Status != c.status || len(h.Runs(c.id)) != c.runs {
			t.Errorf("%s: status %q Next %s, %d runs; want %q, %s, %d runs", c.name, got.Status, got.Next, len(h.Runs(c.id)), c.status, c.next, c.runs)
		}
	}
	if runs := h.Runs(a); len(runs) == 2 && (runs[0].ID != runIDs[0] || !runs[1].Slot.Equal(s2) || runs[1].ID != runIDs[4]) {
		t.Errorf("runs of the chained task %+v, want ids %d and %d", runs, runIDs[0], runIDs[4])
	}
	for _, c := range claims {
		taskIDs = append(taskIDs, c.TaskID)
	}
	return taskIDs, runIDs
}

// testClaimAndQueueFolderGone: a claimed slot whose folder is gone queues
// nothing; its run is failed with the reason, the task still advances, and
// the other claims of the batch are unaffected.
func testClaimAndQueueFolderGone(t *testing.T, h Harness) {
	q := queuer(t, h)
	goneTask := task(base)
	goneTask.Folder = "old"
	gone, kept := h.AddTask(goneTask), h.AddTask(task(base))
	h.RemoveFolder("old")
	next := base.Add(time.Hour)
	runIDs, errs, err := q.ClaimAndQueue(t.Context(), []scheduler.Claim{
		{Advance: scheduler.Advance{TaskID: gone, From: base, Next: next, HasNext: true}, Slot: base},
		{Advance: scheduler.Advance{TaskID: kept, From: base, Next: next, HasNext: true}, Slot: base},
	})
	if err != nil || len(runIDs) != 2 || len(errs) != 2 {
		t.Fatalf("ClaimAndQueue = %v %v %v, want two answers", runIDs, errs, err)
	}
	if runIDs[0] == 0 || errs[0] == nil || runIDs[1] == 0 || errs[1] != nil {
		t.Fatalf("run ids %v errors %v: want both claimed, the first failed", runIDs, errs)
	}
	runs := h.Runs(gone)
	if len(runs) != 1 || runs[0].ID != runIDs[0] || runs[0].Status != scheduler.RunFailed || runs[0].Reason != errs[0].Error() {
		t.Errorf("runs of the task whose folder is gone: %+v, want run %d failed with %q", runs, runIDs[0], errs[0])
	}
	if got := h.Task(gone).Next; !got.Equal(next) {
		t.Errorf("the task whose folder is gone did not advance: Next %s, want %s", got, next)
	}
	if got := h.Queued(); len(got) != 1 || got[0].RunID != runIDs[1] || got[0].TaskID != kept {
		t.Errorf("queued %+v, want only run %d of task %d", got, runIDs[1], kept)
	}
	if runs := h.Runs(kept); len(runs) != 1 || runs[0].Status != scheduler.RunFired {
		t.Errorf("runs of the other task: %+v, want one %q", runs, scheduler.RunFired)
	}
}

// testConcurrentClaimAndQueue: of concurrent ClaimAndQueue calls for one
// slot, one claims it and exactly one turn is queued.
func testConcurrentClaimAndQueue(t *testing.T, h Harness) {
	q := queuer(t, h)
	id := h.AddTask(task(base))
	claims := []scheduler.Claim{{Advance: scheduler.Advance{TaskID: id, From: base, Next: base.Add(time.Hour), HasNext: true}, Slot: base}}
	const n = 8
	var wg sync.WaitGroup
	won := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			runIDs, _, err := q.ClaimAndQueue(t.Context(), claims)
			if err != nil || len(runIDs) != 1 {
				t.Errorf("concurrent ClaimAndQueue: %v %v", runIDs, err)
				return
			}
			won[i] = runIDs[0] != 0
		})
	}
	wg.Wait()
	if w := len(slices.DeleteFunc(won, func(b bool) bool { return !b })); w != 1 || len(h.Queued()) != 1 || len(h.Runs(id)) != 1 {
		t.Errorf("%d of %d concurrent claims won, %d turns queued, %d runs; want exactly one each", w, n, len(h.Queued()), len(h.Runs(id)))
	}
}

func testClaimRunRefused(t *testing.T, h Harness) {
	ctx := t.Context()
	id := h.AddTask(task(base))
	paused := task(base)
	paused.Status = scheduler.StatusPaused
	pid := h.AddTask(paused)
	cases := []struct {
		name string
		a    scheduler.Advance
	}{
		{"stale From", scheduler.Advance{TaskID: id, From: base.Add(-time.Hour), Next: base.Add(time.Hour), HasNext: true}},
		{"paused task", scheduler.Advance{TaskID: pid, From: base, Next: base.Add(time.Hour), HasNext: true}},
		{"missing task", scheduler.Advance{TaskID: id + pid + 1000, From: base, Next: base.Add(time.Hour), HasNext: true}},
	}
	for _, tc := range cases {
		if _, claimed, err := claim(t, h, tc.a, tc.a.From); err != nil || claimed {
			t.Errorf("%s: claimed=%v err=%v, want refused without error", tc.name, claimed, err)
		}
		if ok, err := h.Store.SkipRuns(ctx, tc.a, 1); err != nil || ok {
			t.Errorf("%s: SkipRuns applied, want refused", tc.name)
		}
	}
	for _, tid := range []int64{id, pid} {
		if got := h.Task(tid); !got.Next.Equal(base) || len(h.Runs(tid)) != 0 {
			t.Errorf("task %d changed by refused claims: Next %s, %d runs", tid, got.Next, len(h.Runs(tid)))
		}
	}
}

func testClaimRunDuplicate(t *testing.T, h Harness) {
	id := h.AddTask(task(base))
	s2, s3 := base.Add(time.Hour), base.Add(2*time.Hour)
	if _, claimed, err := claim(t, h, scheduler.Advance{TaskID: id, From: base, Next: s2, HasNext: true}, base); err != nil || !claimed {
		t.Fatalf("first claim: %v %v", claimed, err)
	}
	// A second claim of the same slot (from the new Next) records nothing
	// but still moves the task on.
	_, claimed, err := claim(t, h, scheduler.Advance{TaskID: id, From: s2, Next: s3, HasNext: true}, base)
	if err != nil || claimed {
		t.Fatalf("duplicate slot: claimed=%v err=%v, want refused", claimed, err)
	}
	if got := h.Task(id).Next; !got.Equal(s3) {
		t.Errorf("Next after duplicate = %s, want %s (the task must not stick)", got, s3)
	}
	if runs := h.Runs(id); len(runs) != 1 {
		t.Errorf("%d runs, want 1", len(runs))
	}
}

func testClaimRunCompletes(t *testing.T, h Harness) {
	ctx := t.Context()
	id := h.AddTask(task(base))
	if _, claimed, err := claim(t, h, scheduler.Advance{TaskID: id, From: base}, base); err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if got := h.Task(id); got.Status != scheduler.StatusCompleted || !got.Next.IsZero() {
		t.Errorf("task: status %q Next %s, want completed with no Next", got.Status, got.Next)
	}
	if due, _ := h.Store.DueTasks(ctx, base.Add(time.Hour), 10); len(due) != 0 {
		t.Errorf("completed task still due")
	}
	if _, ok, _ := h.Store.NextDue(ctx); ok {
		t.Errorf("completed task still has a NextDue")
	}
}

func testSkipRuns(t *testing.T, h Harness) {
	ctx := t.Context()
	id := h.AddTask(task(base))
	ok, err := h.Store.SkipRuns(ctx, scheduler.Advance{TaskID: id, From: base, Next: base.Add(5 * time.Hour), HasNext: true}, 5)
	if err != nil || !ok {
		t.Fatalf("SkipRuns = %v %v", ok, err)
	}
	if got := h.Task(id).Next; !got.Equal(base.Add(5 * time.Hour)) {
		t.Errorf("Next = %s, want %s", got, base.Add(5*time.Hour))
	}
	if runs := h.Runs(id); len(runs) != 0 {
		t.Errorf("SkipRuns inserted runs %+v", runs)
	}
	if ok, _ := h.Store.SkipRuns(ctx, scheduler.Advance{TaskID: id, From: base, Next: base.Add(time.Hour), HasNext: true}, 1); ok {
		t.Errorf("SkipRuns from a stale Next applied")
	}
	if ok, _ := h.Store.SkipRuns(ctx, scheduler.Advance{TaskID: id, From: base.Add(5 * time.Hour)}, 1); !ok || h.Task(id).Status != scheduler.StatusCompleted {
		t.Errorf("SkipRuns without a next did not complete the task")
	}
}

func testFailRun(t *testing.T, h Harness) {
	ctx := t.Context()
	id := h.AddTask(task(base))
	runID, _, err := claim(t, h, scheduler.Advance{TaskID: id, From: base, Next: base.Add(time.Hour), HasNext: true}, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Store.FailRun(ctx, runID, "folder main is gone"); err != nil {
		t.Fatal(err)
	}
	runs := h.Runs(id)
	if len(runs) != 1 || runs[0].Status != scheduler.RunFailed || runs[0].Reason != "folder main is gone" {
		t.Errorf("runs %+v, want one failed with the reason", runs)
	}
	if got := h.Task(id).Next; !got.Equal(base.Add(time.Hour)) {
		t.Errorf("FailRun changed the task: Next %s", got)
	}
	if err := h.Store.FailRun(ctx, runID+1000, "x"); err == nil {
		t.Errorf("FailRun of an unknown run: no error")
	}
}

func testConcurrentClaims(t *testing.T, h Harness) {
	id := h.AddTask(task(base))
	a := scheduler.Advance{TaskID: id, From: base, Next: base.Add(time.Hour), HasNext: true}
	const n = 8
	var wg sync.WaitGroup
	results := make([]bool, n)
	for i := range n {
		wg.Go(func() {
			_, claimed, err := claim(t, h, a, base)
			if err != nil {
				t.Errorf("concurrent ClaimRuns: %v", err)
			}
			results[i] = claimed
		})
	}
	wg.Wait()
	won := 0
	for _, c := range results {
		if c {
			won++
		}
	}
	if won != 1 || len(h.Runs(id)) != 1 {
		t.Errorf("%d of %d concurrent claims won, %d runs; want exactly one", won, n, len(h.Runs(id)))
	}
}

// claim is ClaimRuns for a single claim.
func claim(t *testing.T, h Harness, a scheduler.Advance, slot time.Time) (runID int64, claimed bool, err error) {
	runIDs, err := h.Store.ClaimRuns(t.Context(), []scheduler.Claim{{Advance: a, Slot: slot}})
	if err != nil {
		return 0, false, err
	}
	if len(runIDs) != 1 {
		return 0, false, fmt.Errorf("ClaimRuns answered %d run ids for one claim", len(runIDs))
	}
	return runIDs[0], runIDs[0] != 0, nil
}

func ids(ts []scheduler.Task) []int64 {
	var out []int64
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// sameTask compares everything but the ID, Next as an instant.
func sameTask(got, want scheduler.Task) bool {
	gotNext, wantNext := got.Next, want.Next
	got.ID, want.ID, got.Next, want.Next = 0, 0, time.Time{}, time.Time{}
	return got == want && gotNext.Equal(wantNext)
}
