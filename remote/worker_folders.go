package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
)

// workerFolders are a worker's copies of group folders:
// <data dir>/folders/<key> (folderKey of the gateway's absolute path), side
// by side, so that no copy lies inside another (a job naming a folder's
// parent cannot reach the copies of its children), and never the gateway's
// folder itself (they may share a filesystem). What each copy holds (its
// digest and manifest) is remembered in memory and in
// <data dir>/folder-state/<key>.json, so that a restarted worker still
// knows: a job on the version a copy holds downloads nothing.
type workerFolders struct {
	dir    string // <data dir>/folders
	state  string // <data dir>/folder-state
	obs    jetstream.ObjectStore
	ex     excluder
	max    int64
	log    *slog.Logger
	locks  keyLocks
	mu     sync.Mutex
	held   map[string]heldFolder // folder key → what its copy holds
	gets   atomic.Int64          // objects downloaded
	hashes hashCache             // of the copies
}

// heldFolder is what a copy holds.
type heldFolder struct {
	Dir      string   `json:"dir"`
	Digest   string   `json:"digest"`
	Manifest manifest `json:"manifest"`
}

func newWorkerFolders(dataDir string, obs jetstream.ObjectStore, ex excluder, max int64, log *slog.Logger) (*workerFolders, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("worker data_dir: %w", err)
	}
	f := &workerFolders{dir: filepath.Join(abs, "folders"), state: filepath.Join(abs, "folder-state"), obs: obs, ex: ex, max: max,
		log: log, held: map[string]heldFolder{}}
	for _, d := range []string{f.dir, f.state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("worker data_dir: %w", err)
		}
	}
	return f, nil
}

func (f *workerFolders) load(key string) heldFolder {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, ok := f.held[key]; ok {
		return h
	}
	var h heldFolder
	if data, err := os.ReadFile(filepath.Join(f.state, key+".json")); err == nil {
		_ = json.Unmarshal(data, &h) // unreadable: held nothing
	}
	f.held[key] = h
	return h
}

func (f *workerFolders) save(key string, h heldFolder) {
	f.mu.Lock()
	f.held[key] = h
	f.mu.Unlock()
	data, _ := json.Marshal(h)
	tmp := filepath.Join(f.state, key+".json.tmp")
	err := os.WriteFile(tmp, data, 0o600)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(f.state, key+".json"))
	}
	if err != nil {
		f.log.Warn("record the folder copy's version", "dir", h.Dir, "err", err)
	}
}

// forget marks a copy as holding nothing known (a failed download).
func (f *workerFolders) forget(key, dir string) { f.save(key, heldFolder{Dir: dir}) }

// folderTurn is a turn's hold on its folder's copy.
type folderTurn struct {
	f      *workerFolders
	dir    string // the gateway's path
	copy   string // the worker's copy
	key    string
	before manifest
	base   uint64
	unlock func()
}

// prepare makes the copy of dir equal to ref (when it does not hold it
// already) and holds it for the turn until finish. A job without ref (a
// gateway without snapshots) runs in the copy as it is.
func (f *workerFolders) prepare(ctx context.Context, dir string, ref *FolderRef) (*folderTurn, error) {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir {
		return nil, fmt.Errorf("the job's folder %q is not a clean absolute path", dir)
	}
	key := folderKey(dir)
	t := &folderTurn{f: f, dir: dir, copy: filepath.Join(f.dir, key), key: key, unlock: f.locks.lock(key)}
	if err := os.MkdirAll(t.copy, 0o700); err != nil {
		t.unlock()
		return nil, fmt.Errorf("create the copy of group folder %s on the worker: %w", dir, err)
	}
	h := f.load(key)
	root, err := os.OpenRoot(t.copy)
	if err != nil {
		t.unlock()
		return nil, err
	}
	defer root.Close()
	if ref != nil {
		t.base = ref.Version
		if h.Digest == ref.Digest && h.Manifest != nil {
			// Only if the copy still holds it: a copy changed behind the
			// worker's back (wiped) would otherwise come back as deletions.
			if m, _, err := scanFolder(root, f.ex, 0, &f.hashes); err == nil && m.digest() == h.Digest {
				t.before = h.Manifest
				return t, nil
			}
			f.log.Warn("folder copy differs from the version recorded for it; downloading it again", "dir", dir, "version", ref.Version)
		}
	}
	if ref != nil {
		if err := f.fetch(ctx, root, dir, ref); err != nil {
			f.forget(key, dir)
			t.unlock()
			return nil, fmt.Errorf("fetch version %d of group folder %s: %w", ref.Version, dir, err)
		}
	}
	m, _, err := scanFolder(root, f.ex, 0, &f.hashes)
	if err != nil {
		t.unlock()
		return nil, fmt.Errorf("scan the copy of group folder %s: %w", dir, err)
	}
	if ref != nil && m.digest() != ref.Digest {
		f.forget(key, dir)
		t.unlock()
		return nil, fmt.Errorf("the copy of group folder %s does not match version %d after its download (digest %s, want %s); "+
			"check that the gateway's and this worker's nats.snapshot_exclude agree", dir, ref.Version, m.digest(), ref.Digest)
	}
	f.save(key, heldFolder{Dir: dir, Digest: m.digest(), Manifest: m})
	t.before = m
	return t, nil
}

// fetch makes root equal to ref: the full snapshot (what it lacks is
// removed, except excluded files), then each delta.
func (f *workerFolders) fetch(ctx context.Context, root *os.Root, dir string, ref *FolderRef) error {
	f.gets.Add(1)
	names, err := unpackObject(ctx, f.obs, ref.Object, root, f.ex, limitsFor(f.max))
	if err != nil {
		return err
	}
	if err := pruneTo(root, names, f.ex); err != nil {
		return err
	}
	for _, d := range ref.Deltas {
		if d.Object != "" {
			f.gets.Add(1)
		}
		if err := applyDelta(ctx, f.obs, root, d, f.ex, limitsFor(f.max)); err != nil {
			return err
		}
	}
	f.log.Info("folder copy fetched", "dir", dir, "version", ref.Version, "objects", 1+len(ref.Deltas))
	return nil
}

// uploadTry bounds one attempt to upload a turn's folder changes.
const uploadTry = 10 * time.Second

// finish releases the copy after the turn: when anything changed since
// prepare, it uploads the changed files as a delta object (named after
// turn) and returns what the outcome carries.
func (t *folderTurn) finish(ctx context.Context, turn string) (*FolderDelta, error) {
	defer t.unlock()
	f := t.f
	root, err := os.OpenRoot(t.copy)
	if err != nil {
		f.forget(t.key, t.dir)
		return nil, err
	}
	defer root.Close()
	after, skipped, err := scanFolder(root, f.ex, f.max, &f.hashes)
	if err != nil {
		f.forget(t.key, t.dir)
		return nil, fmt.Errorf("the turn's changes to group folder %s are not uploaded: %w", t.dir, err)
	}
	if skipped > 0 {
		f.log.Info("folder upload skips symlinks and special files", "dir", t.dir, "turn", turn, "skipped", skipped)
	}
	changed, deleted := diff(t.before, after)
	if len(changed) == 0 && len(deleted) == 0 {
		return nil, nil
	}
	name := t.key + "/" + turn + ".delta.tgz"
	// Tried again until ctx ends: NATS may be away (an embedded server
	// restarting with its gateway) while the gateway still awaits the turn.
	for try := 0; ; try++ {
		pctx, cancel := context.WithTimeout(ctx, uploadTry)
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(writeTar(pw, root, after, changed)) }()
		_, err = f.obs.Put(pctx, jetstream.ObjectMeta{Name: name}, pr)
		pr.Close()
		cancel()
		if err == nil || ctx.Err() != nil {
			break
		}
		if try == 0 {
			f.log.Warn("upload the turn's folder changes failed; trying again until the turn's deadline", "dir", t.dir, "turn", turn, "err", err)
		}
		sleep(ctx, time.Second)
	}
	if err != nil {
		f.forget(t.key, t.dir)
		return nil, fmt.Errorf("upload the turn's changes to group folder %s (object store %s): %w", t.dir, ObjectsBucket, err)
	}
	f.save(t.key, heldFolder{Dir: t.dir, Digest: after.digest(), Manifest: after})
	return &FolderDelta{Dir: t.dir, Base: t.base, Object: name, Deleted: slices.Clip(deleted), Digest: after.digest()}, nil
}

func newWorkerFoldersIn(obs jetstream.ObjectStore, opt WorkerOptions) (*workerFolders, error) {
	ex, err := newExcluder(opt.SnapshotExclude)
	if err != nil {
		return nil, err
	}
	return newWorkerFolders(opt.Dir, obs, ex, maxBytes(opt.MaxFolderMB), opt.Logger)
}

// finishFolder uploads the turn's folder changes; when that fails, the
// turn fails with why (its changes would be lost), unless it failed
// already.
func (w *Worker) finishFolder(ft *folderTurn, j Job, runErr *error) *FolderDelta {
	// Until the gateway stops waiting for the turn (its deadline + grace),
	// and at least a minute.
	until := time.UnixMilli(j.DeadlineMs).Add(DefaultGrace)
	if min := time.Now().Add(time.Minute); until.Before(min) {
		until = min
	}
	ctx, cancel := context.WithDeadline(context.Background(), until)
	defer cancel()
	d, err := ft.finish(ctx, j.TurnID)
	if err != nil {
		w.log.Error("upload the turn's folder changes", "turn", j.TurnID, "dir", j.Dir, "err", err)
		if *runErr == nil {
			*runErr = agent.Failed(err.Error())
		}
	}
	return d
}
