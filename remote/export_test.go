package remote

// Counters only the tests read.

// RefusedOutcomes is how many outcomes were refused: of a turn this
// gateway does not await, from another worker than the turn's, or naming
// another folder or object than the turn's.
func (r *Runner) RefusedOutcomes() int64 { return r.refused.Load() }

// DroppedEnv is how many job environment entries the worker dropped
// (neither SWITCHBOARD_* nor named by its agent.env).
func (w *Worker) DroppedEnv() int64 { return w.dropped.Load() }

// ObjectGets is how many folder objects (snapshots, deltas) the worker
// downloaded.
func (w *Worker) ObjectGets() int64 { return w.folders.gets.Load() }
