package scheduler

import (
	"context"
	"time"

	"switchboard/groups"
)

// Task is a scheduled task as the Store keeps it.
type Task struct {
	ID        int64
	Folder    groups.Folder // the group folder the turn runs in
	ChatJID   string        // the chat the turn answers in
	Prompt    string
	Spec      string // the schedule as given (see Parse)
	Kind      Kind
	Timezone  string // IANA zone the spec is evaluated in
	Context   string // "group" (the chat's session) or "isolated" (a fresh one)
	Missed    Missed
	Status    TaskStatus
	Next      time.Time // the first unrun slot; zero when none remains
	CreatedBy string
}

// NextRun is when t fires next: never (zero) once it is cancelled or
// completed, whatever slot Next still holds. What the CLI and the task
// tools show as a task's next run.
func (t Task) NextRun() time.Time {
	if t.Status == StatusCancelled || t.Status == StatusCompleted {
		return time.Time{}
	}
	return t.Next
}

// TaskStatus is where a task is in its life: active (it fires), paused (it
// keeps its schedule but does not fire), completed (no slot is left) or
// cancelled (stopped for good).
type TaskStatus string

// Task statuses.
const (
	StatusActive    TaskStatus = "active"
	StatusPaused    TaskStatus = "paused"
	StatusCompleted TaskStatus = "completed"
	StatusCancelled TaskStatus = "cancelled"
)

// Run statuses the scheduler writes. The gateway writes the outcome of a
// turn (its own statuses, such as "ok" or "error") over "fired".
const (
	RunFired  = "fired"  // claimed and handed to the Firer (or about to be)
	RunFailed = "failed" // claimed, but the Firer could not start the turn
)

// Advance moves a task from one Next to another. From is the task's Next as
// the scheduler read it: an Advance applies only while the stored Next still
// equals From (compare-and-set), so two schedulers, or a scheduler racing a
// pause or cancel, can never both act on the same slot.
type Advance struct {
	TaskID int64
	From   time.Time // the stored Next this change was computed from
	Next   time.Time // the new Next, when HasNext
	// HasNext false means the schedule has no slot left: the task becomes
	// "completed" with a zero Next.
	HasNext bool
}

// Claim asks to run one slot of a task and advance the task: see
// Store.ClaimRuns.
type Claim struct {
	Advance
	// Slot is the slot being run: normally Advance.From itself; a catch-up
	// run may claim a later slot (the latest missed one) while advancing
	// from From.
	Slot time.Time
	// Missed: the slot is one the task's missed policy runs (a catch-up
	// claims them one by one); ClaimAndQueue queues it even behind the
	// task's runs that have not started, and an on-time slot after it is
	// not held back by it.
	Missed bool
}

// Store persists tasks and their runs for the Loop. Implementations must be
// safe for concurrent use. All times are instants; slots are whole seconds,
// so storing Unix seconds (UTC) round-trips them exactly, and comparisons
// ("equals From", "Next <= now") are between instants. Errors are returned
// only for storage failures: a refused claim or advance is not an error.
//
// A task is due when it is "active" and its Next is at or before now. The
// Loop expects whoever creates or resumes a task to set Next (normally
// Schedule.Next(now)) and then call Loop.Wake; a task resumed with a Next in
// the past is handled as a missed run under its policy. Pausing and
// cancelling only change the status (a paused task keeps its Next).
type Store interface {
	// DueTasks returns the tasks with status "active" and a non-zero Next at
	// or before now, ordered by Next then ID, at most limit of them.
	DueTasks(ctx context.Context, now time.Time, limit int) ([]Task, error)

	// NextDue returns the earliest Next among tasks with status "active" and
	// a non-zero Next; ok is false when there is none.
	NextDue(ctx context.Context) (next time.Time, ok bool, err error)

	// ClaimRuns records that the claims' slots are being run. It applies
	// the claims in order, in one transaction, and returns one run id per
	// claim, 0 for a claim that was not claimed (a run id is never 0). For
	// each claim c:
	//
	//  1. If the task does not exist, its status is not "active", or its
	//     Next is not c.From: change nothing for c; its run id is 0.
	//  2. If a run row for (task, c.Slot) already exists (runs are unique
	//     on that pair): insert nothing, but still apply step 4; the run id
	//     is 0. The slot must not fire again, and the task must not stay
	//     stuck on it.
	//  3. Otherwise insert a run row (task, slot, status "fired", started
	//     at the store's current time); its id is c's run id.
	//  4. Set the task's Next to c.Next, or, when !c.HasNext, set its
	//     status to "completed" and its Next to zero.
	//
	// A claim sees the effects of the claims before it in the same call (it
	// may advance from the Next an earlier one set). On error nothing is
	// applied. Because runs are unique on (task, slot) and the claims
	// commit before the Loop fires any of them, a slot fires at most once
	// however many loops or restarts there are. The Loop claims a batch of
	// on-time slots in one call, so that one transaction serves many fires.
	ClaimRuns(ctx context.Context, claims []Claim) (runIDs []int64, err error)

	// SkipRuns advances a task past missed slots without running them (the
	// skip policy), in one transaction: when the task exists, is "active"
	// and its Next equals a.From, apply step 4 of ClaimRuns and return
	// ok = true; otherwise change nothing and return ok = false. skipped is
	// the number of slots passed over, for the task's history (a store may
	// note it); it must not insert a run row per skipped slot.
	SkipRuns(ctx context.Context, a Advance, skipped int) (ok bool, err error)

	// FailRun marks run runID "failed" with reason (why its turn never
	// started) if its status is still "fired"; a run with any other status
	// keeps it. The task is not changed. An unknown runID is an error.
	FailRun(ctx context.Context, runID int64, reason string) error
}

// ClaimQueuer is an optional Store capability: a store that keeps the
// gateway's queue of turns as well can queue the turn of each slot it
// claims in the claim's own transaction. The Loop uses it, instead of
// ClaimRuns followed by Firer.Fire, when its Firer is a TurnStarter; a
// crash can then never leave a slot claimed with its turn neither queued
// nor recorded failed.
type ClaimQueuer interface {
	// ClaimAndQueue is ClaimRuns (the same contract, the same run ids)
	// that, in the same transaction, also settles the turn of each slot it
	// claims (runIDs[i] != 0), from the task as stored:
	//
	//   - normally it queues the turn, as Firer.Fire would (the task's
	//     prompt into its folder as a task turn that writes its outcome to
	//     run runIDs[i]), and errs[i] is nil;
	//   - when the turn cannot run (the task's folder no longer exists), it
	//     queues nothing and records the run "failed" with the reason, and
	//     errs[i] is that reason;
	//   - when the claim is not Missed and an earlier on-time run of the
	//     task is still queued, not started, it queues nothing and records
	//     the run "skipped", and errs[i] wraps ErrRunWaiting.
	//
	// errs has one entry per claim (nil for a claim not claimed). On error
	// nothing is applied, queued or recorded.
	ClaimAndQueue(ctx context.Context, claims []Claim) (runIDs []int64, errs []error, err error)
}

// Fired is a claimed slot whose turn is queued.
type Fired struct {
	Task  Task // as DueTasks returned it, before the claim moved its Next
	Slot  time.Time
	RunID int64
}

// TurnStarter is the optional Firer capability that goes with a
// ClaimQueuer store: the store queues the turns, the Firer starts them.
type TurnStarter interface {
	// StartTurns starts the turns that ClaimAndQueue queued for fires (in
	// the order claimed). It must not block on the turns, and it cannot
	// fail: the turns are already queued, and the queue's owner must also
	// find queued turns on its own (at start-up, for one), so a lost start
	// delays a turn but never drops it.
	StartTurns(ctx context.Context, fires []Fired)
}

// Firer starts the turn for a claimed slot.
type Firer interface {
	// Fire injects the task's prompt into its folder as a task turn (t is
	// the task as DueTasks returned it, before the claim moved its Next) and
	// returns once the turn is queued; the turn runs asynchronously and the
	// gateway writes its outcome to run runID. An error means the turn will
	// not run: the Loop marks the run failed with it (and does not retry).
	// Fire must not block on the turn itself.
	Fire(ctx context.Context, t Task, slot time.Time, runID int64) error
}
