package remote

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

// outcomeOf waits for turn's outcome on the results stream.
func outcomeOf(t *testing.T, js jetstream.JetStream, worker, turn string) Outcome {
	t.Helper()
	var o Outcome
	testwait.For(t, 20*time.Second, "the outcome of "+turn, func() bool {
		s, err := js.Stream(t.Context(), ResultsStream)
		if err != nil {
			return false
		}
		m, err := s.GetLastMsgForSubject(t.Context(), resultSubject(worker, turn))
		return err == nil && json.Unmarshal(m.Data, &o) == nil
	})
	return o
}

// The files a group folder must keep.
var keptFiles = map[string]string{"work.md": "work\n", "notes/n1.md": "note\n", ".mcp.json": "{}\n"}

func checkKept(t *testing.T, dir, what string) {
	t.Helper()
	for name, want := range keptFiles {
		if got := readFile(t, filepath.Join(dir, name)); got != want {
			t.Errorf("%s: %s = %q; want %q", what, name, got, want)
		}
	}
}

// A worker refuses a job that names the folder "/" (whose copy would be
// the worker's whole folders directory: before, it wiped every copy), a
// relative, dotted or outside folder, or a malformed root, command,
// deadline or folder version: each is logged with the reason and answered
// with a failed, not-started outcome, and the worker's copies and the
// gateway's folder keep their files.
func TestWorkerRefusesBadJobs(t *testing.T) {
	nc := natsConn(t)
	wdir := t.TempDir()
	var wlog testlog.Buffer
	runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1, Dir: wdir, Logger: slog.New(slog.NewTextHandler(&wlog, nil))})
	r := newRunner(t, nc, `echo ok`, 0)
	in := turnInput(t, "t-real-1")
	writeFiles(t, in.Dir, keptFiles)
	if _, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, in); err != nil {
		t.Fatal(err)
	}
	copyDir := filepath.Join(wdir, "folders", folderKey(in.Dir))
	checkKept(t, copyDir, "the worker's copy after the first turn")

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(t.Context(), ObjectsBucket)
	if err != nil {
		t.Fatal(err)
	}
	// An empty snapshot for "/", as a forger would upload it.
	emptyName := folderKey("/") + "/t-forged.full.tgz"
	if _, err := obs.PutBytes(t.Context(), emptyName, tgz(t)); err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(in.Dir)
	valid := func(turn string) Job {
		return Job{TurnID: turn, Dir: in.Dir, Root: root, Prompt: "x", Command: []string{"agent"},
			DeadlineMs: time.Now().Add(time.Minute).UnixMilli()}
	}
	ownRef := func(dir string) *FolderRef {
		return &FolderRef{Version: 1, Digest: manifest{}.digest(), Object: folderKey(dir) + "/t-forged.full.tgz"}
	}
	for _, tc := range []struct {
		name   string
		change func(*Job)
		reason string
	}{
		{"slash", func(j *Job) {
			j.Dir, j.Folder = "/", &FolderRef{Version: 1, Digest: manifest{}.digest(), Object: emptyName}
		}, `folder "/"`},
		{"slash root", func(j *Job) { j.Root, j.Dir = "/", "/x" }, `folders root "/"`},
		{"relative", func(j *Job) { j.Dir = "groups/main" }, `folder "groups/main"`},
		{"dotted", func(j *Job) { j.Dir = in.Dir + "/../other" }, "/../other"},
		{"outside", func(j *Job) { j.Dir = "/etc" }, `folder "/etc"`},
		{"the root itself", func(j *Job) { j.Dir = root }, "inside the gateway's folders root"},
		{"no command", func(j *Job) { j.Command = nil }, "no agent command"},
		{"no deadline", func(j *Job) { j.DeadlineMs = 0 }, "deadline 0"},
		{"far deadline", func(j *Job) { j.DeadlineMs = time.Now().Add(365 * 24 * time.Hour).UnixMilli() }, "more than"},
		{"another folder's snapshot", func(j *Job) { j.Folder = ownRef("/elsewhere") }, "is not one of folder"},
		{"bad digest", func(j *Job) { j.Folder = ownRef(in.Dir); j.Folder.Digest = "x" }, "malformed"},
		{"escaping delete", func(j *Job) {
			j.Folder = ownRef(in.Dir)
			j.Folder.Deltas = []deltaRef{{Deleted: []string{"../../x"}}}
		}, `"../../x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := valid(subjectSafe("t-bad-" + tc.name))
			tc.change(&j)
			data, _ := json.Marshal(j)
			if _, err := js.Publish(t.Context(), workerSubject("w1"), data); err != nil {
				t.Fatal(err)
			}
			o := outcomeOf(t, js, "w1", j.TurnID)
			if !o.NotStarted || !strings.Contains(o.Error, "refused the job") || !strings.Contains(o.Error, tc.reason) {
				t.Errorf("outcome %+v; want not started, refused naming %s", o, tc.reason)
			}
			if !strings.Contains(wlog.String(), `msg="job refused" worker=w1 turn=`+j.TurnID) {
				t.Errorf("no log line for the refusal of %s", j.TurnID)
			}
			checkKept(t, copyDir, "the worker's copy")
		})
	}
	// A job that passes the checks but names the folders' parent (its root
	// one level up, as its own job says) with an empty snapshot: the
	// parent's copy lies beside the group's copy, not around it, so the
	// group's copy keeps its files.
	parent := filepath.Dir(in.Dir)
	parentSnap := folderKey(parent) + "/t-parent.full.tgz"
	if _, err := obs.PutBytes(t.Context(), parentSnap, tgz(t)); err != nil {
		t.Fatal(err)
	}
	pj := valid("t-parent")
	pj.Root, pj.Dir = filepath.Dir(parent), parent
	pj.Folder = &FolderRef{Version: 1, Digest: manifest{}.digest(), Object: parentSnap}
	data, _ := json.Marshal(pj)
	if _, err := js.Publish(t.Context(), workerSubject("w1"), data); err != nil {
		t.Fatal(err)
	}
	outcomeOf(t, js, "w1", pj.TurnID)
	checkKept(t, copyDir, "the group's copy after a job for its parent folder")

	// A job with a malformed turn id is dropped: it names no results subject.
	j := valid("t.bad")
	data, _ = json.Marshal(j)
	if _, err := js.Publish(context.Background(), workerSubject("w1"), data); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the malformed turn id dropped", func() bool {
		return strings.Contains(wlog.String(), "without a well formed turn id; dropped")
	})
	// The next real turn downloads nothing and changes nothing.
	next := turnInput(t, "t-real-2")
	next.Dir = in.Dir
	if _, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, next); err != nil {
		t.Fatal(err)
	}
	checkKept(t, in.Dir, "the gateway's folder after the next turn")
}

// A worker's copy that no longer holds what its state file says (wiped
// behind its back) is downloaded again, not uploaded as deletions: before,
// the next turn's delta deleted work.md, notes/ and .mcp.json from the
// gateway's folder.
func TestWorkerWipedCopyDownloadedAgain(t *testing.T) {
	nc := natsConn(t)
	wdir := t.TempDir()
	w := runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1, Dir: wdir})
	r := newRunner(t, nc, `echo "$SWITCHBOARD_TURN_ID" > last.txt; echo ok`, 0)
	dir := turnInput(t, "x").Dir
	writeFiles(t, dir, keptFiles)
	run := func(turn string) {
		t.Helper()
		in := turnInput(t, turn)
		in.Dir = dir
		if _, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, in); err != nil {
			t.Fatal(err)
		}
	}
	run("t-w1")
	copyDir := filepath.Join(wdir, "folders", folderKey(dir))
	if err := removeAllIn(copyDir); err != nil {
		t.Fatal(err)
	}
	run("t-w2")
	checkKept(t, dir, "the gateway's folder after a turn on a wiped copy")
	if got := readFile(t, filepath.Join(dir, "last.txt")); got != "t-w2\n" {
		t.Errorf("last.txt %q; want the second turn's write", got)
	}
	if n := w.ObjectGets(); n != 3 {
		t.Errorf("%d objects downloaded; want 3 (the snapshot, then again with the first turn's delta for the wiped copy)", n)
	}
}

// removeAllIn empties dir.
func removeAllIn(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
