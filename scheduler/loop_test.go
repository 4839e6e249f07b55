package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// epoch is where a synctest bubble's clock starts.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// start runs l in the background; the returned func stops it and checks
// that Run returned nil.
func start(t *testing.T, l *Loop) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

// sleepUntil advances the bubble's clock to epoch+d and lets every
// goroutine settle. Inside a synctest bubble time.Sleep waits for no real
// time: the fake clock jumps to the instant once every goroutine of the
// bubble is blocked, so the loop's timers fire in order and at once. It is
// the clock's "advance", not a wait for something to happen; synctest.Wait
// then waits for the loop to act on what fell due.
func sleepUntil(d time.Duration) {
	time.Sleep(time.Until(epoch.Add(d)))
	synctest.Wait()
}

// offsets lists fires as "slot@at" offsets from epoch, for compact wants.
func offsets(fires []fire) []string {
	var out []string
	for _, f := range fires {
		out = append(out, fmt.Sprintf("%d:%s@%s", f.Task, f.Slot.Sub(epoch), f.At.Sub(epoch)))
	}
	return out
}

// forEachFirer runs test under both ways of firing (see firers).
func forEachFirer(t *testing.T, test func(t *testing.T, fr recorder)) {
	for _, f := range firers {
		t.Run(f.name, func(t *testing.T) { test(t, f.new()) })
	}
}

// checkQueued checks, when fr is a fakeStarter, that the loop never called
// Fire and that every run in st is either failed or has exactly one turn
// queued: claim and queue loses no slot, even when the loop dies.
func checkQueued(t *testing.T, st *fakeStore, fr recorder) {
	t.Helper()
	s, ok := fr.(*fakeStarter)
	if !ok {
		return
	}
	if s.fireCalls != 0 {
		t.Errorf("Fire called %d times; a TurnStarter's turns are queued by the store", s.fireCalls)
	}
	turns := map[int64]int{}
	for _, q := range st.allQueued() {
		turns[q.RunID]++
	}
	for _, r := range st.allRuns() {
		if want := map[bool]int{true: 0, false: 1}[r.Status == RunFailed]; turns[r.ID] != want {
			t.Errorf("run %d (%s): %d turns queued, want %d", r.ID, r.Status, turns[r.ID], want)
		}
	}
}

func TestLoopFiresOnTime(t *testing.T) {
	forEachFirer(t, func(t *testing.T, fr recorder) {
		synctest.Test(t, func(t *testing.T) {
			st := newFakeStore()
			id := st.add(Task{Spec: "*/5 * * * *", Next: epoch.Add(5 * time.Minute)})
			stop := start(t, NewLoop(st, fr, nil, nil))
			sleepUntil(16 * time.Minute)
			stop()
			want := []string{"1:5m0s@5m0s", "1:10m0s@10m0s", "1:15m0s@15m0s"}
			if got := offsets(fr.all()); !equalStrings(got, want) {
				t.Errorf("fires %v, want %v", got, want)
			}
			if next := st.task(id).Next; !next.Equal(epoch.Add(20 * time.Minute)) {
				t.Errorf("Next = %s, want 00:20", next)
			}
			for _, r := range st.allRuns() {
				if r.Status != RunFired {
					t.Errorf("run %d status %q", r.ID, r.Status)
				}
			}
			checkQueued(t, st, fr)
		})
	})
}

func TestLoopIntervalStaysAnchored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, fr := newFakeStore(), &fakeFirer{}
		st.add(Task{Spec: "@every 10m", Next: epoch.Add(10*time.Minute + 30*time.Second)})
		stop := start(t, NewLoop(st, fr, nil, nil))
		sleepUntil(31 * time.Minute)
		stop()
		want := []string{"1:10m30s@10m30s", "1:20m30s@20m30s", "1:30m30s@30m30s"}
		if got := offsets(fr.all()); !equalStrings(got, want) {
			t.Errorf("fires %v, want %v", got, want)
		}
	})
}

func TestLoopManyTasksSameInstant(t *testing.T) {
	forEachFirer(t, testManyTasksSameInstant)
}

func testManyTasksSameInstant(t *testing.T, fr recorder) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		const n = 250 // more than two batches
		for i := range n {
			spec := []string{"@hourly", "0 * * * *", "@every 1h"}[i%3]
			st.add(Task{Spec: spec, Missed: MissedAll, Next: epoch.Add(time.Hour)})
		}
		stop := start(t, NewLoop(st, fr, nil, nil))
		sleepUntil(time.Hour + 30*time.Minute)
		stop()
		seen := map[int64]int{}
		for _, f := range fr.all() {
			seen[f.Task]++
			if !f.Slot.Equal(epoch.Add(time.Hour)) || !f.At.Equal(f.Slot) {
				t.Errorf("task %d fired slot %s at %s", f.Task, f.Slot, f.At)
			}
		}
		if len(seen) != n {
			t.Errorf("%d tasks fired, want %d", len(seen), n)
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("task %d fired %d times", id, c)
			}
		}
		if runs := len(st.allRuns()); runs != n {
			t.Errorf("%d runs recorded, want %d", runs, n)
		}
		// One transaction per batch, not per slot: that is what keeps a
		// burst of simultaneous slots from firing late.
		if got, want := st.claimCallCount(), (n+DefaultBatchSize-1)/DefaultBatchSize; got != want {
			t.Errorf("%d claim calls for %d on-time slots, want %d (one per batch)", got, n, want)
		}
		checkQueued(t, st, fr)
	})
}

func TestLoopWake(t *testing.T) {
	cases := []struct {
		name string
		wake bool
		want string // the added task's fire
	}{
		{"wake recomputes the sleep", true, "2:5m0s@5m0s"},
		// Without Wake the loop only notices at the end of its capped
		// sleep: the slot is late (and runs only because missed=once).
		{"without wake the task is late", false, "2:5m0s@10m0s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, fr := newFakeStore(), &fakeFirer{}
				st.add(Task{Spec: "0 3 * * *", Next: epoch.Add(3 * time.Hour)})
				l := NewLoop(st, fr, nil, nil)
				stop := start(t, l)
				sleepUntil(time.Minute)
				st.add(Task{Spec: "2000-01-01T00:05:00Z", Missed: MissedOnce, Next: epoch.Add(5 * time.Minute)})
				if tc.wake {
					l.Wake()
					l.Wake() // coalesces, never blocks
				}
				sleepUntil(20 * time.Minute)
				stop()
				if got := offsets(fr.all()); !equalStrings(got, []string{tc.want}) {
					t.Errorf("fires %v, want [%s]", got, tc.want)
				}
			})
		})
	}
}

func TestLoopSleepsWhenIdle(t *testing.T) {
	cases := []struct {
		name    string
		tasks   []Task
		maxCall int // NextDue and DueTasks calls allowed over the hour
	}{
		{"no tasks: one look, then sleep until woken", nil, 1},
		{"a task next year: one look per MaxSleep", []Task{{Spec: "@yearly", Next: epoch.AddDate(1, 0, 0)}}, 7},
		{"a paused task due now", []Task{{Spec: "@hourly", Status: StatusPaused, Next: epoch}}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, fr := newFakeStore(), &fakeFirer{}
				for _, task := range tc.tasks {
					st.add(task)
				}
				stop := start(t, NewLoop(st, fr, nil, nil))
				sleepUntil(time.Hour)
				stop()
				nextDue, due := st.calls()
				if nextDue < 1 || nextDue > tc.maxCall || due > tc.maxCall {
					t.Errorf("over an idle hour: %d NextDue and %d DueTasks calls, want 1..%d", nextDue, due, tc.maxCall)
				}
				if len(fr.all()) != 0 {
					t.Errorf("fired %v", offsets(fr.all()))
				}
			})
		})
	}
}

// TestLoopMissedPolicies: the gateway is down from 00:00 to 05:30 while an
// hourly task's slots 01:00 .. 05:00 fall due; at restart Startup applies
// the policy, then the loop carries on at 06:00.
func TestLoopMissedPolicies(t *testing.T) {
	h := time.Hour
	cases := []struct {
		name       string
		spec       string
		missed     Missed
		maxCatchup int
		next       time.Duration // the task's Next when the gateway stopped
		want       []string      // fires during Startup at 05:30, then the loop until 06:30
		skipped    int
	}{
		{"skip", "0 * * * *", MissedSkip, 0, h, []string{"1:6h0m0s@6h0m0s"}, 5},
		{"once", "0 * * * *", MissedOnce, 0, h, []string{"1:5h0m0s@5h30m0s", "1:6h0m0s@6h0m0s"}, 0},
		{"all", "0 * * * *", MissedAll, 0, h, []string{"1:1h0m0s@5h30m0s", "1:2h0m0s@5h30m0s", "1:3h0m0s@5h30m0s",
			"1:4h0m0s@5h30m0s", "1:5h0m0s@5h30m0s", "1:6h0m0s@6h0m0s"}, 0},
		{"all capped", "0 * * * *", MissedAll, 2, h, []string{"1:4h0m0s@5h30m0s", "1:5h0m0s@5h30m0s", "1:6h0m0s@6h0m0s"}, 0},
		{"interval once", "@every 20m", MissedOnce, 0, 20 * time.Minute,
			[]string{"1:5h20m0s@5h30m0s", "1:5h40m0s@5h40m0s", "1:6h0m0s@6h0m0s", "1:6h20m0s@6h20m0s"}, 0},
		{"skip keeps a slot within grace", "@every 1h", MissedSkip, 0, 5*h + 29*time.Minute + 30*time.Second,
			[]string{"1:5h29m30s@5h30m0s", "1:6h29m30s@6h29m30s"}, 0},
		{"one-shot skipped", "2000-01-01T02:00:00Z", MissedSkip, 0, 2 * h, nil, 1},
		{"one-shot run late", "2000-01-01T02:00:00Z", MissedAll, 0, 2 * h, []string{"1:2h0m0s@5h30m0s"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachFirer(t, func(t *testing.T, fr recorder) {
				synctest.Test(t, func(t *testing.T) {
					st := newFakeStore()
					id := st.add(Task{Spec: tc.spec, Missed: tc.missed, Next: epoch.Add(tc.next)})
					sleepUntil(5*h + 30*time.Minute) // down
					l := NewLoop(st, fr, nil, nil)
					if tc.maxCatchup > 0 {
						l.MaxCatchup = tc.maxCatchup
					}
					if err := l.Startup(t.Context(), time.Now()); err != nil {
						t.Fatal(err)
					}
					stop := start(t, l)
					sleepUntil(6*h + 30*time.Minute)
					stop()
					if got := offsets(fr.all()); !equalStrings(got, tc.want) {
						t.Errorf("fires\n got %v\nwant %v", got, tc.want)
					}
					if got := st.skipped[id]; got != tc.skipped {
						t.Errorf("skipped %d, want %d", got, tc.skipped)
					}
					// The catch-up's claims say they are missed runs, so a
					// store queues each even behind the runs still waiting
					// (ErrRunWaiting is for on-time slots only).
					st.mu.Lock()
					for _, f := range fr.all() {
						if late := f.At.Sub(f.Slot) > l.Grace; st.missed[f.Run] != late {
							t.Errorf("run %d (slot %s, fired at %s) claimed as missed: %v, want %v", f.Run, f.Slot.Sub(epoch), f.At.Sub(epoch), st.missed[f.Run], late)
						}
					}
					st.mu.Unlock()
					checkQueued(t, st, fr)
				})
			})
		})
	}
}

// crashCase is a case of TestLoopClaimOnceAcrossCrash.
type crashCase struct {
	name      string
	missed    Missed
	crashAt   int // A dies after this many claims
	restartAt time.Duration
	wantA     []string // A's fires; "dead" ones were started by a dead process
	wantB     []string
}

// TestLoopClaimOnceAcrossCrash: loop A dies right after claiming; loop B,
// on the same store, must neither fire the claimed slot nor lose the rest.
// A "dead" fire is lost when claiming then firing (the turn was never
// queued), not when claiming and queueing (checkQueued).
func TestLoopClaimOnceAcrossCrash(t *testing.T) {
	cases := []crashCase{
		{"crash between claim and fire", MissedSkip, 1, 90 * time.Minute,
			[]string{"1:1h0m0s@1h0m0s dead"}, []string{"1:2h0m0s@2h0m0s"}},
		{"crash in the middle of a catch-up", MissedAll, 2, 5*time.Hour + 31*time.Minute,
			[]string{"1:1h0m0s@5h30m0s alive", "1:2h0m0s@5h30m0s dead"},
			[]string{"1:3h0m0s@5h31m0s", "1:4h0m0s@5h31m0s", "1:5h0m0s@5h31m0s", "1:6h0m0s@6h0m0s"}},
	}
	for _, tc := range cases {
		for _, f := range firers {
			t.Run(tc.name+"/"+f.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testCrash(t, tc, f.new(), f.new()) })
			})
		}
	}
}

func testCrash(t *testing.T, tc crashCase, frA, frB recorder) {
	st := newFakeStore()
	st.add(Task{Spec: "0 * * * *", Missed: tc.missed, Next: epoch.Add(time.Hour)})
	if tc.missed == MissedAll {
		sleepUntil(5*time.Hour + 30*time.Minute) // down before A starts
	}
	ctxA, crashA := context.WithCancel(t.Context())
	claims := 0
	st.afterClaim = func(Advance, time.Time, bool) {
		if claims++; claims == tc.crashAt {
			crashA()
		}
	}
	a := NewLoop(st, frA, nil, nil)
	if err := a.Startup(ctxA, time.Now()); err != nil {
		t.Fatal(err)
	}
	doneA := make(chan error, 1)
	go func() { doneA <- a.Run(ctxA) }()
	<-doneA
	st.afterClaim = nil

	sleepUntil(tc.restartAt)
	b := NewLoop(st, frB, nil, nil)
	if err := b.Startup(t.Context(), time.Now()); err != nil {
		t.Fatal(err)
	}
	stop := start(t, b)
	sleepUntil(6*time.Hour + 30*time.Minute)
	stop()

	var gotA []string
	for _, f := range frA.all() {
		state := " dead" // the process had died
		if f.Alive {
			state = " alive"
		}
		gotA = append(gotA, offsets([]fire{f})[0]+state)
	}
	if !equalStrings(gotA, tc.wantA) {
		t.Errorf("A fired %v, want %v", gotA, tc.wantA)
	}
	gotB := offsets(frB.all())
	if len(gotB) > len(tc.wantB) {
		gotB = gotB[:len(tc.wantB)]
	}
	if !equalStrings(gotB, tc.wantB) {
		t.Errorf("B fired %v, want %v first", offsets(frB.all()), tc.wantB)
	}
	perSlot := map[time.Time]int{}
	for _, r := range st.allRuns() {
		if perSlot[r.Slot]++; perSlot[r.Slot] > 1 {
			t.Errorf("slot %s has %d runs", r.Slot, perSlot[r.Slot])
		}
	}
	checkQueued(t, st, frA)
}

// TestLoopsShareStore: two loops racing on one store fire every slot of
// every task exactly once between them.
func TestLoopsShareStore(t *testing.T) {
	for _, f := range firers {
		t.Run(f.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testLoopsShareStore(t, f.new(), f.new()) })
		})
	}
}

func testLoopsShareStore(t *testing.T, frA, frB recorder) {
	st := newFakeStore()
	const tasks, minutes = 20, 30
	for range tasks {
		st.add(Task{Spec: "* * * * *", Next: epoch.Add(time.Minute)})
	}
	stopA := start(t, NewLoop(st, frA, nil, nil))
	stopB := start(t, NewLoop(st, frB, nil, nil))
	sleepUntil(minutes*time.Minute + 30*time.Second)
	stopA()
	stopB()
	type key struct {
		task int64
		slot time.Time
	}
	seen := map[key]int{}
	for _, f := range append(frA.all(), frB.all()...) {
		seen[key{f.Task, f.Slot}]++
		if !f.At.Equal(f.Slot) {
			t.Errorf("task %d slot %s fired at %s", f.Task, f.Slot, f.At)
		}
	}
	if len(seen) != tasks*minutes {
		t.Errorf("%d distinct fires, want %d", len(seen), tasks*minutes)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("task %d slot %s fired %d times", k.task, k.slot, n)
		}
	}
	if len(frA.all()) == 0 || len(frB.all()) == 0 {
		t.Logf("one loop did all the work (A %d, B %d)", len(frA.all()), len(frB.all()))
	}
	checkQueued(t, st, frA)
	checkQueued(t, st, frB)
}

func TestLoopFireErrorMarksRunFailed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := newFakeStore()
		fr := &fakeFirer{err: func(Task) error { return errors.New("folder main is gone") }}
		id := st.add(Task{Spec: "@hourly", Next: epoch.Add(time.Hour)})
		stop := start(t, NewLoop(st, fr, nil, nil))
		sleepUntil(time.Hour + 30*time.Minute)
		stop()
		if got := offsets(fr.all()); !equalStrings(got, []string{"1:1h0m0s@1h0m0s"}) {
			t.Errorf("fires %v: a failed fire is not retried", got)
		}
		runs := st.allRuns()
		if len(runs) != 1 || runs[0].Status != RunFailed || !strings.Contains(runs[0].Reason, "folder main is gone") {
			t.Errorf("runs %+v, want one failed with the reason", runs)
		}
		if next := st.task(id).Next; !next.Equal(epoch.Add(2 * time.Hour)) {
			t.Errorf("Next = %s, want 02:00", next)
		}
	})
}

// TestLoopQueueRefused: with claim and queue, a slot whose turn the store
// cannot queue (its folder is gone) is claimed and failed in one step: it
// is not started, the loop does not fail it again, and the task moves on.
func TestLoopQueueRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, fr := newFakeStore(), &fakeStarter{}
		gone := st.add(Task{Folder: "old", Spec: "@hourly", Next: epoch.Add(time.Hour)})
		kept := st.add(Task{Folder: "main", Spec: "@hourly", Next: epoch.Add(time.Hour)})
		st.removeFolder("old")
		stop := start(t, NewLoop(st, fr, nil, nil))
		sleepUntil(time.Hour + 30*time.Minute)
		stop()
		if got := offsets(fr.all()); !equalStrings(got, []string{fmt.Sprintf("%d:1h0m0s@1h0m0s", kept)}) {
			t.Errorf("started %v, want only task %d", got, kept)
		}
		for _, r := range st.allRuns() {
			failed := r.Status == RunFailed && strings.Contains(r.Reason, "group old no longer exists")
			if (r.TaskID == gone) != failed {
				t.Errorf("run %+v: want the run of task %d failed with the reason, the other fired", r, gone)
			}
		}
		if next := st.task(gone).Next; !next.Equal(epoch.Add(2 * time.Hour)) {
			t.Errorf("Next of the task whose folder is gone = %s, want 02:00", next)
		}
		checkQueued(t, st, fr)
	})
}

func TestLoopStoreErrorsBackOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, fr := newFakeStore(), &fakeFirer{}
		st.failDue = 3
		st.add(Task{Spec: "@hourly", Next: epoch})
		stop := start(t, NewLoop(st, fr, nil, nil))
		sleepUntil(time.Minute)
		stop()
		// Fails at 0s, 1s and 3s; backs off 1s, 2s, 4s; succeeds at 7s.
		if got := offsets(fr.all()); !equalStrings(got, []string{"1:0s@7s"}) {
			t.Errorf("fires %v, want [1:0s@7s]", got)
		}
		// Three failed calls, then a pass: one call finds the task, one more
		// finds nothing left.
		if _, due := st.calls(); due != 5 {
			t.Errorf("%d DueTasks calls, want 5", due)
		}
	})
}

func TestLoopCompletesTasks(t *testing.T) {
	cases := []struct {
		name, spec string
		runStatus  string
		fires      int
	}{
		{"one-shot fires once", "2000-01-01T00:05:00Z", RunFired, 1},
		{"unusable schedule is retired", "0 9 * * * *", RunFailed, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				st, fr := newFakeStore(), &fakeFirer{}
				id := st.add(Task{Spec: tc.spec, Next: epoch.Add(5 * time.Minute)})
				stop := start(t, NewLoop(st, fr, nil, nil))
				sleepUntil(time.Hour)
				stop()
				task := st.task(id)
				if task.Status != StatusCompleted || !task.Next.IsZero() {
					t.Errorf("task status %q next %s, want completed with no next", task.Status, task.Next)
				}
				if len(fr.all()) != tc.fires {
					t.Errorf("fires %v, want %d", offsets(fr.all()), tc.fires)
				}
				runs := st.allRuns()
				if len(runs) != 1 || runs[0].Status != tc.runStatus {
					t.Errorf("runs %+v, want one %q", runs, tc.runStatus)
				}
				if nextDue, _ := st.calls(); nextDue > 3 {
					t.Errorf("%d NextDue calls after completion, want a few", nextDue)
				}
			})
		})
	}
}

func TestLoopRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLoop(newFakeStore(), &fakeFirer{}, nil, nil)
		stop := start(t, l)
		synctest.Wait()
		if err := l.Run(t.Context()); !errors.Is(err, ErrLoopRunning) {
			t.Errorf("second Run = %v, want ErrLoopRunning", err)
		}
		stop()
	})
}

// refusingStore is a broken store whose claims never take and never move
// the task: the loop must back off, not spin.
type refusingStore struct{ *fakeStore }

func (refusingStore) ClaimRuns(_ context.Context, claims []Claim) ([]int64, error) {
	return make([]int64, len(claims)), nil
}

func (r refusingStore) DueTasks(ctx context.Context, now time.Time, limit int) ([]Task, error) {
	if _, due := r.calls(); due > 1000 {
		return nil, errors.New("spinning") // break the spin so the test can fail
	}
	return r.fakeStore.DueTasks(ctx, now, limit)
}

func TestLoopDoesNotSpinOnRefusedClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, fr := refusingStore{newFakeStore()}, &fakeFirer{}
		st.add(Task{Spec: "@hourly", Next: epoch})
		stop := start(t, NewLoop(st, fr, nil, nil))
		sleepUntil(10 * time.Minute)
		stop()
		// Backoff 1s, 2s, 4s ... capped at a minute: about 15 passes.
		if _, due := st.calls(); due > 30 {
			t.Errorf("%d DueTasks calls in 10 minutes with a stuck task", due)
		}
		if len(fr.all()) != 0 {
			t.Errorf("fired without a claim: %v", offsets(fr.all()))
		}
	})
}

// TestLoopShortIntervalAfterDowntime: an interval shorter than Grace has
// several slots within Grace of a restart. Only the latest is on time; the
// older ones are missed and go through the policy, so that missed=skip does
// not fire a burst of back-to-back runs (nor once more than one catch-up).
func TestLoopShortIntervalAfterDowntime(t *testing.T) {
	h := time.Hour
	cases := []struct {
		name    string
		missed  Missed
		down    time.Duration // from the task's Next at 5h to the restart
		want    []string      // fires during Startup
		skipped int
	}{
		{"skip, down 35s", MissedSkip, 35 * time.Second, []string{"1:5h0m30s@5h0m35s"}, 3},
		{"once, down 35s", MissedOnce, 35 * time.Second, []string{"1:5h0m20s@5h0m35s", "1:5h0m30s@5h0m35s"}, 0}, // skipped counts only runs SkipRuns passes over
		{"all, down 35s", MissedAll, 35 * time.Second,
			[]string{"1:5h0m0s@5h0m35s", "1:5h0m10s@5h0m35s", "1:5h0m20s@5h0m35s", "1:5h0m30s@5h0m35s"}, 0},
		{"skip, down 5m", MissedSkip, 5*time.Minute + 5*time.Second, []string{"1:5h5m0s@5h5m5s"}, 30},
		{"once, down 5m", MissedOnce, 5*time.Minute + 5*time.Second, []string{"1:5h4m50s@5h5m5s", "1:5h5m0s@5h5m5s"}, 0},
		{"skip, down 5s: on time", MissedSkip, 5 * time.Second, []string{"1:5h0m0s@5h0m5s"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachFirer(t, func(t *testing.T, fr recorder) {
				synctest.Test(t, func(t *testing.T) {
					st := newFakeStore()
					id := st.add(Task{Spec: "@every 10s", Missed: tc.missed, Next: epoch.Add(5 * h)})
					sleepUntil(5*h + tc.down)
					l := NewLoop(st, fr, nil, nil)
					if err := l.Startup(t.Context(), time.Now()); err != nil {
						t.Fatal(err)
					}
					if got := offsets(fr.all()); !equalStrings(got, tc.want) {
						t.Errorf("fires\n got %v\nwant %v", got, tc.want)
					}
					if got := st.skipped[id]; got != tc.skipped {
						t.Errorf("skipped %d, want %d", got, tc.skipped)
					}
					checkQueued(t, st, fr)
				})
			})
		})
	}
}
