package scheduler_test

import (
	"testing"

	"switchboard/scheduler"
	"switchboard/scheduler/schedulertest"
)

// TestFakeStoreConformance holds the tests' fake to the same contract as
// the SQL store, so that the loop tests prove something about production.
func TestFakeStoreConformance(t *testing.T) {
	schedulertest.TestStore(t, func(t *testing.T) schedulertest.Harness {
		store, add, get, runs, queued, removeFolder := scheduler.FakeStoreForConformance()
		return schedulertest.Harness{
			Store:   store,
			AddTask: add,
			Task:    get,
			Runs: func(id int64) []schedulertest.Run {
				var out []schedulertest.Run
				for _, r := range runs(id) {
					out = append(out, schedulertest.Run{ID: r.ID, Slot: r.Slot, Status: r.Status, Reason: r.Reason})
				}
				return out
			},
			Queued: func() []schedulertest.Turn {
				var out []schedulertest.Turn
				for _, q := range queued() {
					out = append(out, schedulertest.Turn(q))
				}
				return out
			},
			RemoveFolder: removeFolder,
		}
	})
}
