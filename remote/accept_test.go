package remote

import (
	"archive/tar"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

// forger writes folder entries, uploads objects and publishes outcomes of
// its choosing: as worst a case as NATS authentication leaves, a worker's
// credentials (an outcome goes out with the credentials of the worker it
// names, so the subject matches) plus folder entries made with the
// gateway's (js).
type forger struct {
	t   *testing.T
	nc  *nats.Conn
	js  jetstream.JetStream
	kv  jetstream.KeyValue
	obs jetstream.ObjectStore
}

func newForger(t *testing.T, nc *nats.Conn, js jetstream.JetStream) *forger {
	kv, obs, err := folderStores(t.Context(), js)
	if err != nil {
		t.Fatal(err)
	}
	return &forger{t: t, nc: nc, js: js, kv: kv, obs: obs}
}

// upload puts a tar holding name (content body) as object obj.
func (f *forger) upload(obj, name string) {
	data := tgz(f.t, &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 3, Mode: 0o644})
	if _, err := f.obs.PutBytes(f.t.Context(), obj, data); err != nil {
		f.t.Fatal(err)
	}
}

// version is dir's current version, made when missing (a folder entry for
// any directory, as the forger likes).
func (f *forger) version(dir string) uint64 {
	e, err := f.kv.Get(f.t.Context(), folderKey(dir))
	if err == nil {
		return e.Revision()
	}
	data, _ := json.Marshal(folderEntry{Dir: dir, Digest: manifest{}.digest(), Object: folderKey(dir) + "/f.full.tgz"})
	rev, err := f.kv.Create(f.t.Context(), folderKey(dir), data)
	if err != nil {
		f.t.Fatal(err)
	}
	return rev
}

func (f *forger) publish(o Outcome) {
	data, _ := json.Marshal(o)
	js, err := jetstream.New(workerConn(f.t, f.nc, o.Worker))
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), resultSubject(o.Worker, o.TurnID), data); err != nil {
		f.t.Fatal(err)
	}
}

// Forged outcomes change nothing on disk: one for a turn this gateway
// never published (writing pwned.txt outside the data dir, deleting a
// file of a group's folder), and for the turn the gateway awaits, one
// naming another group's folder (planting FORGED.md) and one from another
// worker than the turn's. Each is logged with turn and worker and
// counted; the turn's own outcome is then applied as usual.
func TestForgedOutcomesChangeNothing(t *testing.T) {
	nc := natsConn(t)
	var logs testlog.Buffer
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{`while [ ! -e "$GATE" ]; do sleep 0.02; done; echo real > real.txt; echo real`},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1})
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("GATE", gate)
	data := t.TempDir()
	mainDir, otherDir, outside := filepath.Join(data, "groups", "main"), filepath.Join(data, "groups", "other"), t.TempDir()
	writeFiles(t, mainDir, keptFiles)
	writeFiles(t, otherDir, map[string]string{"work.md": "other\n"})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	f := newForger(t, nc, js)

	in := turnInput(t, "t-real")
	in.Dir = mainDir
	done := make(chan awaited, 1)
	go func() {
		res, err := r.Run(context.Background(), agent.Spec{Timeout: 30 * time.Second, Env: []string{"GATE"}}, in)
		done <- awaited{res, err}
	}()
	testwait.For(t, 10*time.Second, "the turn given to w1", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.by["t-real"] == "w1"
	})

	// 1. A turn that never existed writes outside the data dir.
	f.upload(folderKey(outside)+"/t-ghost.delta.tgz", "pwned.txt")
	f.publish(Outcome{TurnID: "t-ghost", Worker: "w1", Reply: "pwned",
		Folder: &FolderDelta{Dir: outside, Base: f.version(outside), Object: folderKey(outside) + "/t-ghost.delta.tgz", Digest: "x"}})
	// 2. A turn that never existed deletes a group's file.
	f.publish(Outcome{TurnID: "t-ghost2", Worker: "w1",
		Folder: &FolderDelta{Dir: mainDir, Base: f.version(mainDir), Deleted: []string{"work.md"}, Digest: "x"}})
	// 3. The awaited turn's id, another group's folder.
	f.upload(folderKey(otherDir)+"/t-real.delta.tgz", "FORGED.md")
	f.publish(Outcome{TurnID: "t-real", Worker: "w1", Reply: "forged",
		Folder: &FolderDelta{Dir: otherDir, Base: f.version(otherDir), Object: folderKey(otherDir) + "/t-real.delta.tgz", Digest: "x"}})
	// 4. The awaited turn's id and folder, another worker.
	f.upload(folderKey(mainDir)+"/t-real.delta.tgz", "FORGED.md")
	f.publish(Outcome{TurnID: "t-real", Worker: "w-evil", Reply: "forged",
		Folder: &FolderDelta{Dir: mainDir, Base: f.version(mainDir), Object: folderKey(mainDir) + "/t-real.delta.tgz", Deleted: []string{"notes/n1.md"}, Digest: "x"}})
	testwait.For(t, 10*time.Second, "the four forged outcomes refused", func() bool { return r.RefusedOutcomes() == 4 })

	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil || o.res.Reply != "real" {
		t.Errorf("the awaited turn: reply %q err %v; want its own worker's outcome", o.res.Reply, o.err)
	}
	if exists(filepath.Join(outside, "pwned.txt")) {
		t.Error("pwned.txt was written outside the data dir")
	}
	for _, d := range []string{mainDir, otherDir} {
		if exists(filepath.Join(d, "FORGED.md")) {
			t.Errorf("FORGED.md was planted in %s", d)
		}
	}
	checkKept(t, mainDir, "the turn's folder")
	if got := readFile(t, filepath.Join(mainDir, "real.txt")); got != "real\n" {
		t.Errorf("real.txt %q; want the real turn's changes applied", got)
	}
	if got := readFile(t, filepath.Join(otherDir, "work.md")); got != "other\n" {
		t.Errorf("the other group's work.md %q; want it untouched", got)
	}
	for _, want := range []string{"turn=t-ghost worker=w1", "turn=t-ghost2 worker=w1", "turn=t-real worker=w1 reason=\"changes another folder",
		"turn=t-real worker=w-evil reason=\"not from the worker"} {
		if !strings.Contains(logs.String(), `msg="remote outcome refused; nothing of it applied" `+want) {
			t.Errorf("no refusal logged for %s:\n%s", want, logs.String())
		}
	}
}

// A restarted gateway reattaching to a turn accepts only the outcome of
// the worker it recorded for the turn: a forged one from another worker is
// refused and changes nothing.
func TestAwaitRefusesForgedOutcome(t *testing.T) {
	nc := natsConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	f := newForger(t, nc, js)
	dir := turnInput(t, "x").Dir
	writeFiles(t, dir, keptFiles)
	deadline := time.Now().Add(time.Minute)
	// What the stopped gateway recorded of its turn.
	rec, _ := json.Marshal(turnRecord{Dir: dir, Worker: "w1", DeadlineMs: deadline.UnixMilli()})
	if err := os.WriteFile(filepath.Join(stateDir(t), "t-away.json"), rec, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureStreams(t.Context(), js, workerTTL); err != nil {
		t.Fatal(err)
	}
	var logs testlog.Buffer
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{"unused"}, StateDir: stateDir(t), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	done := awaitInBackground(t, r, "t-away", deadline)
	// Another worker answers the turn the restarted gateway awaits (on its
	// own subject: its credentials allow no other).
	f.publish(Outcome{TurnID: "t-away", Worker: "w-evil", Reply: "forged",
		Folder: &FolderDelta{Dir: dir, Base: f.version(dir), Deleted: []string{"work.md"}, Digest: "x"}})
	testwait.For(t, 10*time.Second, "the forged outcome refused", func() bool { return r.RefusedOutcomes() == 1 })
	if !strings.Contains(logs.String(), `reason="not from the worker the turn was given to"`) {
		t.Errorf("the forged outcome was not refused as another worker's:\n%s", logs.String())
	}
	f.publish(Outcome{TurnID: "t-away", Worker: "w1", Reply: "real"})
	o := <-done
	if o.err != nil || o.res.Reply != "real" {
		t.Fatalf("Await: reply %q err %v; want the recorded worker's outcome", o.res.Reply, o.err)
	}
	checkKept(t, dir, "the turn's folder")
}

// A restarted gateway reattaching to a turn learns which steering messages
// the worker wrote into its agent (the outcome's Steered, message seqs),
// both from an outcome published while no gateway ran and from one that
// comes while it waits: it did not send them, and only the outcome says.
func TestAwaitReportsSteered(t *testing.T) {
	nc := natsConn(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ensureStreams(t.Context(), js, workerTTL); err != nil {
		t.Fatal(err)
	}
	f := newForger(t, nc, js)
	r := newRunner(t, nc, "unused", 0)
	deadline := time.Now().Add(time.Minute)
	for _, turn := range []string{"t-before", "t-during"} {
		if err := r.record(turn, turnRecord{Dir: turnInput(t, "x").Dir, Worker: "w1", DeadlineMs: deadline.UnixMilli()}); err != nil {
			t.Fatal(err)
		}
	}
	f.publish(Outcome{TurnID: "t-before", Worker: "w1", Reply: "early", Steered: []int64{7, 9}})
	res, err := r.Await(t.Context(), "t-before", deadline)
	if err != nil || res.Reply != "early" || !slices.Equal(res.Steered, []int64{7, 9}) {
		t.Errorf("Await of a published outcome: reply %q steered %v err %v; want steered [7 9]", res.Reply, res.Steered, err)
	}

	done := awaitInBackground(t, r, "t-during", deadline)
	f.publish(Outcome{TurnID: "t-during", Worker: "w1", Reply: "late", Steered: []int64{12}})
	o := <-done
	if o.err != nil || o.res.Reply != "late" || !slices.Equal(o.res.Steered, []int64{12}) {
		t.Errorf("Await of an outcome that came: reply %q steered %v err %v; want steered [12]", o.res.Reply, o.res.Steered, o.err)
	}
}

// awaited is what an Await (or a Run) returned.
type awaited struct {
	res agent.Result
	err error
}

// awaitInBackground runs r.Await of turn in a goroutine and returns once
// it waits for the outcome (an outcome published from then on reaches it,
// not the look-up); its result comes on the channel.
func awaitInBackground(t *testing.T, r *Runner, turn string, deadline time.Time) <-chan awaited {
	t.Helper()
	done := make(chan awaited, 1)
	go func() {
		res, err := r.Await(context.Background(), agent.TurnID(turn), deadline)
		done <- awaited{res, err}
	}()
	testwait.For(t, 10*time.Second, "the restarted gateway awaiting "+turn, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		_, ok := r.waits[turn]
		return ok
	})
	return done
}

// After a restart the gateway reads outcomes at once, while each reattached
// turn is awaited only when its folder's worker gets to it (after an
// earlier turn of the folder, say). An outcome of a recorded turn that
// comes before its Await, from the worker the turn was given to, is no
// forgery: it is left to the Await (which looks it up on the stream), not
// refused with a warning. One from another worker still is.
func TestOutcomeBeforeItsAwaitNotRefused(t *testing.T) {
	var logs testlog.Buffer
	r := &Runner{opt: RunnerOptions{StateDir: t.TempDir()}, log: slog.New(slog.NewTextHandler(&logs, nil)),
		waits: map[string]*pending{}, ended: map[string]turnRecord{}, by: map[string]string{}}
	const turn = "t-0123456789abcdef"
	if err := r.record(turn, turnRecord{Dir: "/data/groups/main", Worker: "w1", DeadlineMs: time.Now().Add(time.Hour).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if r.acceptOutcome(Outcome{TurnID: turn, Worker: "w1"}) {
		t.Fatal("accepted before its Await: nobody would take it")
	}
	if n := r.RefusedOutcomes(); n != 0 || strings.Contains(logs.String(), "refused") {
		t.Errorf("the worker's own outcome was refused (%d): %s", n, logs.String())
	}
	if r.acceptOutcome(Outcome{TurnID: turn, Worker: "w2"}) || r.RefusedOutcomes() != 1 {
		t.Errorf("another worker's outcome of the turn was not refused (%d)", r.RefusedOutcomes())
	}
}
