package remote

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Which outcomes the gateway applies. Whoever can publish on the results
// stream can name any turn, worker, folder and object in an outcome, so
// the Runner keeps its own book of the turns it published: the folder and
// the worker of each (pending), in memory while it awaits the turn, on
// disk (RunnerOptions.StateDir) until the turn is over so that a restarted
// gateway can reattach to it (Await), and in memory for a while after it
// gave up (ended), so that a late outcome is refused as stale. An outcome
// changes something (its folder delta, its reply, its usage) only when
// acceptOutcome says so; the folder it changes is always the one recorded
// for the turn, never a path or key the outcome or a KV entry names.

// pending is a turn the Runner published and awaits: Run or Await.
type pending struct {
	ch       chan Outcome // buffered; handOver sends once
	dir      string       // the group folder the job named
	worker   string       // the worker the job was given to
	answered bool         // an outcome was accepted
}

// turnRecord is a pending turn as StateDir keeps it.
type turnRecord struct {
	Dir        string `json:"dir"`
	Worker     string `json:"worker"`
	DeadlineMs int64  `json:"deadline_ms"`
	// Seq is the job's sequence in TurnsStream (0: not published yet).
	Seq uint64 `json:"seq,omitempty"`
}

// maxEnded is how many turns the Runner remembers after it stopped
// awaiting them (their late outcomes are refused as stale).
const maxEnded = 4096

// acceptOutcome reports whether o may change anything: its turn is one
// this Runner awaits, it comes from the worker that turn was given to,
// and its folder changes are that turn's own (the turn's folder, its
// delta object <folder key>/<turn>.delta.tgz). Anything else is logged
// once (turn, worker, reason) and counted (RefusedOutcomes); a late
// outcome of a turn no longer awaited is refused as a stale upload (its
// delta deleted); a second outcome of a turn already answered is dropped.
func (r *Runner) acceptOutcome(o Outcome) bool {
	// A turn a restarted gateway reattaches to is awaited once its
	// folder's worker gets to it (Await, which then looks its outcome up
	// on the stream): its outcome may come first.
	later, rec := r.awaitedLater(o.TurnID)
	r.mu.Lock()
	p, waited := r.waits[o.TurnID]
	e, ended := r.ended[o.TurnID]
	later = later && !waited && !ended
	switch {
	case waited:
		e = turnRecord{Dir: p.dir, Worker: p.worker}
	case later:
		e = rec
	}
	reason := ""
	switch {
	case !waited && !ended && !later:
		reason = "not a turn this gateway awaits"
	case o.Worker == "" || o.Worker != e.Worker:
		reason = "not from the worker the turn was given to"
	case o.Folder != nil && o.Folder.Dir != e.Dir:
		reason = "changes another folder than the turn's"
	case o.Folder != nil && o.Folder.Object != "" && o.Folder.Object != deltaName(e.Dir, o.TurnID):
		reason = "names another object than the turn's delta"
	}
	dup := waited && reason == "" && p.answered
	if waited && reason == "" {
		p.answered = true
	}
	r.mu.Unlock()
	switch {
	case reason != "":
		// Logged before it is counted: whoever sees the count sees the log.
		r.log.Warn("remote outcome refused; nothing of it applied", "turn", o.TurnID, "worker", o.Worker, "reason", reason)
		r.refused.Add(1)
		return false
	case dup:
		r.log.Info("remote outcome of a turn already answered; dropped", "turn", o.TurnID, "worker", o.Worker)
		return false
	case later:
		r.log.Info("remote outcome of a reattached turn not awaited yet; its await takes it", "turn", o.TurnID, "worker", o.Worker)
		return false
	case !waited:
		if o.Folder != nil {
			r.fold.refuseStale(o, "the turn is no longer awaited")
		} else {
			r.log.Info("remote outcome of a turn no longer waited for; dropped", "turn", o.TurnID, "worker", o.Worker)
		}
		return false
	}
	return true
}

// awaitedLater reports whether turn is recorded (StateDir) but not awaited
// by this Runner: a turn a restarted gateway reattaches to, before its
// Await. rec is its record.
func (r *Runner) awaitedLater(turn string) (bool, turnRecord) {
	r.mu.Lock()
	_, waited := r.waits[turn]
	_, ended := r.ended[turn]
	r.mu.Unlock()
	if waited || ended {
		return false, turnRecord{}
	}
	rec, ok := r.recorded(turn)
	return ok, rec
}

// deltaName is the object a worker uploads turn's changes to dir as.
func deltaName(dir, turn string) string { return folderKey(dir) + "/" + turn + ".delta.tgz" }

// expect registers a wait for turn's outcome in folder dir, given to
// worker ("" until it is picked: setWorker); deliver hands it over once
// on ch. forget ends the wait; the turn is then remembered as ended.
func (r *Runner) expect(turn, dir, worker string) (ch chan Outcome, forget func()) {
	p := &pending{ch: make(chan Outcome, 1), dir: dir, worker: worker}
	r.mu.Lock()
	r.waits[turn] = p
	r.mu.Unlock()
	return p.ch, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.waits, turn)
		delete(r.by, turn)
		if p.worker == "" {
			return // never published
		}
		if _, ok := r.ended[turn]; !ok {
			r.endedOrder = append(r.endedOrder, turn)
		}
		r.ended[turn] = turnRecord{Dir: p.dir, Worker: p.worker}
		if len(r.endedOrder) > maxEnded {
			delete(r.ended, r.endedOrder[0])
			r.endedOrder = r.endedOrder[1:]
		}
	}
}

// setWorker records the worker turn was given to.
func (r *Runner) setWorker(turn, worker string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p, ok := r.waits[turn]; ok {
		p.worker = worker
	}
	r.by[turn] = worker
}

// record keeps turn's folder and worker in StateDir until unrecord, so
// that a restarted gateway can reattach to it.
func (r *Runner) record(turn string, rec turnRecord) error {
	if r.opt.StateDir == "" {
		return nil
	}
	data, _ := json.Marshal(rec)
	tmp := filepath.Join(r.opt.StateDir, turn+".json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.opt.StateDir, turn+".json"))
}

// recorded is what StateDir holds of turn.
func (r *Runner) recorded(turn string) (turnRecord, bool) {
	if r.opt.StateDir == "" || !validTurnID(turn) {
		return turnRecord{}, false
	}
	data, err := os.ReadFile(filepath.Join(r.opt.StateDir, turn+".json"))
	var rec turnRecord
	if err != nil || json.Unmarshal(data, &rec) != nil || rec.Dir == "" || rec.Worker == "" {
		return turnRecord{}, false
	}
	return rec, true
}

func (r *Runner) unrecord(turn string) {
	if r.opt.StateDir == "" {
		return
	}
	if err := os.Remove(filepath.Join(r.opt.StateDir, turn+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Warn("remove the record of a remote turn", "turn", turn, "err", err)
	}
}

// pruneRecords removes the records of turns whose outcome can no longer
// come (their deadline and grace passed an hour ago: the results stream
// keeps outcomes an hour).
func (r *Runner) pruneRecords() error {
	if r.opt.StateDir == "" {
		return nil
	}
	if err := os.MkdirAll(r.opt.StateDir, 0o700); err != nil {
		return err
	}
	ents, err := os.ReadDir(r.opt.StateDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		turn, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		rec, ok := r.recorded(turn)
		if !ok || time.Since(time.UnixMilli(rec.DeadlineMs)) > r.opt.Grace+keep {
			_ = os.Remove(filepath.Join(r.opt.StateDir, e.Name()))
		}
	}
	return nil
}
