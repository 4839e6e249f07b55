package scheduler

import "switchboard/groups"

// FakeStoreForConformance exposes the in-memory fake to the conformance
// suite, which runs from package scheduler_test (schedulertest imports
// scheduler, so package scheduler's own tests cannot import it).
func FakeStoreForConformance() (store Store, add func(Task) int64, get func(int64) Task, runs func(int64) []FakeRun,
	queued func() []FakeTurn, removeFolder func(groups.Folder)) {
	f := newFakeStore()
	runs = func(taskID int64) []FakeRun {
		var out []FakeRun
		for _, r := range f.allRuns() {
			if r.TaskID == taskID {
				out = append(out, r)
			}
		}
		return out
	}
	return f, f.add, f.task, runs, f.allQueued, f.removeFolder
}

// FakeRun is a run row of the fake store.
type FakeRun = fakeRun

// FakeTurn is a turn the fake store queued.
type FakeTurn struct {
	RunID, TaskID int64
	Folder        groups.Folder
	ChatJID       string
	Prompt        string
	Isolated      bool
}
