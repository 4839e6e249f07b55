package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Versioned group folders (docs/scaling.md, step 4). The KV bucket
// FoldersBucket holds one entry per folder, keyed by folderKey(dir): its
// current content (digest) and how to get it (a full snapshot object plus
// the deltas applied since). The entry's KV revision is the folder's
// version: every change is a kv.Update at the revision it was based on, so
// a writer on an older version (a stale worker after a partition) is
// refused.
const (
	FoldersBucket = "switchboard_folders"        // KV: folder key → folderEntry
	ObjectsBucket = "switchboard_folder_objects" // object store: snapshots and deltas
	// maxDeltas is how many deltas an entry chains before the next turn
	// of the folder uploads a full snapshot again.
	maxDeltas = 8
	// keepApplied is how many applied turns an entry remembers, so that
	// the same outcome applied twice is not taken for a stale one.
	keepApplied = 16
)

// folderEntry is a folder's value in FoldersBucket.
type folderEntry struct {
	Dir     string     `json:"dir"`
	Digest  string     `json:"digest"`
	Object  string     `json:"object"`            // full snapshot
	Deltas  []deltaRef `json:"deltas,omitempty"`  // applied after Object, in order
	Applied []string   `json:"applied,omitempty"` // the last turns whose deltas made a version
}

// deltaRef is one applied delta: changed files (Object) and deleted paths.
type deltaRef struct {
	Object  string   `json:"object"`
	Deleted []string `json:"deleted,omitempty"`
}

// FolderRef is the folder version a job runs on: the worker makes its
// copy equal to it (Object, then Deltas) unless it already holds Digest.
type FolderRef struct {
	Version uint64     `json:"version"` // the entry's KV revision
	Digest  string     `json:"digest"`
	Object  string     `json:"object"`
	Deltas  []deltaRef `json:"deltas,omitempty"`
}

// FolderDelta is what a turn changed in its folder: the files in Object
// (added or changed), the paths deleted, on top of version Base; Digest is
// the folder's digest after it.
type FolderDelta struct {
	Dir     string   `json:"dir"`
	Base    uint64   `json:"base"`
	Object  string   `json:"object"`
	Deleted []string `json:"deleted,omitempty"`
	Digest  string   `json:"digest"`
}

// folderKey is a folder's key in FoldersBucket: a hash of its absolute path.
func folderKey(dir string) string {
	h := sha256.Sum256([]byte(dir))
	return hex.EncodeToString(h[:16])
}

// folderStores opens (creating when missing) the folders bucket and the
// object store.
func folderStores(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, jetstream.ObjectStore, error) {
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: FoldersBucket, Storage: jetstream.FileStorage, History: 1})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, FoldersBucket)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("create bucket %s: %w", FoldersBucket, err)
	}
	obs, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: ObjectsBucket, Storage: jetstream.FileStorage})
	if errors.Is(err, jetstream.ErrBucketExists) {
		obs, err = js.ObjectStore(ctx, ObjectsBucket)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("create object store %s: %w", ObjectsBucket, err)
	}
	return kv, obs, nil
}

// keyLocks serializes work on one folder.
type keyLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (l *keyLocks) lock(key string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	m := l.locks[key]
	if m == nil {
		m = &sync.Mutex{}
		l.locks[key] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// folders is the gateway's side: it publishes folder versions and applies
// the deltas workers send back.
type folders struct {
	kv      jetstream.KeyValue
	obs     jetstream.ObjectStore
	ex      excluder
	max     int64
	log     *slog.Logger
	locks   keyLocks
	refused atomic.Int64
	hashes  hashCache // of the gateway's folders
	// known are the objects this gateway uploaded, applied or found: only
	// it deletes objects (dropObjects), so a turn does not look them up
	// again (objectsExist). Under knownMu.
	knownMu sync.Mutex
	known   map[string]bool
}

func readEntry(ctx context.Context, kv jetstream.KeyValue, key string) (folderEntry, uint64, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return folderEntry{}, 0, nil
	}
	if err != nil {
		return folderEntry{}, 0, fmt.Errorf("read folder version (bucket %s): %w", FoldersBucket, err)
	}
	var fe folderEntry
	if err := json.Unmarshal(e.Value(), &fe); err != nil {
		return folderEntry{}, 0, nil // unreadable: replaced by a full snapshot
	}
	return fe, e.Revision(), nil
}

// publish makes sure the folder's current content is a version in the
// bucket and returns it: the entry as it is when the folder's digest
// matches it and its objects exist, else a full snapshot uploaded as a
// new version (the object named after turn).
func (f *folders) publish(ctx context.Context, dir, turn string) (FolderRef, error) {
	key := folderKey(dir)
	defer f.locks.lock(key)()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return FolderRef{}, fmt.Errorf("group folder: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return FolderRef{}, fmt.Errorf("group folder: %w", err)
	}
	defer root.Close()
	m, skipped, err := scanFolder(root, f.ex, f.max, &f.hashes)
	if err != nil {
		return FolderRef{}, err
	}
	if skipped > 0 {
		f.log.Info("folder snapshot skips symlinks and special files", "dir", dir, "turn", turn, "skipped", skipped)
	}
	fe, rev, err := readEntry(ctx, f.kv, key)
	if err != nil {
		return FolderRef{}, err
	}
	digest := m.digest()
	if rev > 0 && fe.Digest == digest && len(fe.Deltas) < maxDeltas && f.objectsExist(ctx, fe) {
		return FolderRef{Version: rev, Digest: fe.Digest, Object: fe.Object, Deltas: fe.Deltas}, nil
	}
	name := key + "/" + turn + ".full.tgz"
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeTar(pw, root, m, slices.Sorted(mapKeys(m)))) }()
	_, err = f.obs.Put(ctx, jetstream.ObjectMeta{Name: name}, pr)
	pr.Close()
	if err != nil {
		return FolderRef{}, fmt.Errorf("upload the folder snapshot of %s to object store %s: %w", dir, ObjectsBucket, err)
	}
	f.knowObject(name, true)
	ne := folderEntry{Dir: dir, Digest: digest, Object: name, Applied: fe.Applied}
	nrev, err := f.putEntry(ctx, key, ne, rev)
	if err != nil {
		f.knowObject(name, false)
		_ = f.obs.Delete(ctx, name)
		return FolderRef{}, err
	}
	f.dropObjects(ctx, fe)
	f.log.Debug("folder snapshot uploaded", "dir", dir, "turn", turn, "version", nrev, "files", len(m), "bytes", m.bytes())
	return FolderRef{Version: nrev, Digest: digest, Object: name}, nil
}

// putEntry creates the entry (rev 0) or updates it at rev.
func (f *folders) putEntry(ctx context.Context, key string, fe folderEntry, rev uint64) (uint64, error) {
	data, _ := json.Marshal(fe)
	var err error
	var nrev uint64
	if rev == 0 {
		nrev, err = f.kv.Create(ctx, key, data)
	} else {
		nrev, err = f.kv.Update(ctx, key, data, rev)
	}
	if err != nil {
		return 0, fmt.Errorf("record the new version of folder %s (bucket %s, at version %d): %w", fe.Dir, FoldersBucket, rev, err)
	}
	return nrev, nil
}

// objectsExist reports whether the version's objects are in the object
// store; only those this gateway does not know yet are looked up.
func (f *folders) objectsExist(ctx context.Context, fe folderEntry) bool {
	if fe.Object == "" {
		return false
	}
	for _, name := range append([]string{fe.Object}, deltaObjects(fe.Deltas)...) {
		f.knownMu.Lock()
		known := f.known[name]
		f.knownMu.Unlock()
		if known {
			continue
		}
		if _, err := f.obs.GetInfo(ctx, name); err != nil {
			return false
		}
		f.knowObject(name, true)
	}
	return true
}

// knowObject records that object name exists (or no longer does).
func (f *folders) knowObject(name string, exists bool) {
	f.knownMu.Lock()
	defer f.knownMu.Unlock()
	if !exists {
		delete(f.known, name)
		return
	}
	if f.known == nil {
		f.known = map[string]bool{}
	}
	f.known[name] = true
}

// doubt makes the next publish of dir look its objects up again: a worker
// could not fetch its version (an object removed behind the gateway's
// back is then uploaded anew).
func (f *folders) doubt(dir string) {
	prefix := folderKey(dir) + "/"
	f.knownMu.Lock()
	defer f.knownMu.Unlock()
	for name := range f.known {
		if strings.HasPrefix(name, prefix) {
			delete(f.known, name)
		}
	}
}

func deltaObjects(ds []deltaRef) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Object)
	}
	return out
}

// dropObjects deletes a replaced version's objects.
func (f *folders) dropObjects(ctx context.Context, fe folderEntry) {
	for _, name := range append([]string{fe.Object}, deltaObjects(fe.Deltas)...) {
		if name != "" {
			f.knowObject(name, false)
			if err := f.obs.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
				f.log.Warn("delete replaced folder object", "object", name, "err", err)
			}
		}
	}
}

// apply applies the folder delta of an outcome (see Runner.applyFolder).
func (f *folders) apply(ctx context.Context, o Outcome) error {
	d := o.Folder
	if d == nil {
		return nil
	}
	key := folderKey(d.Dir)
	defer f.locks.lock(key)()
	fe, rev, err := readEntry(ctx, f.kv, key)
	if err != nil {
		return err
	}
	if slices.Contains(fe.Applied, o.TurnID) {
		f.log.Debug("folder delta already applied", "turn", o.TurnID, "dir", d.Dir)
		return nil
	}
	if rev == 0 || rev != d.Base || fe.Dir != d.Dir {
		f.refuseStale(o, fmt.Sprintf("the folder is at version %d", rev))
		return fmt.Errorf("%w: turn %s on worker %s changed folder %s at version %d, which is now at %d", ErrStaleFolder, o.TurnID, o.Worker, d.Dir, d.Base, rev)
	}
	root, err := os.OpenRoot(d.Dir)
	if err != nil {
		return fmt.Errorf("group folder: %w", err)
	}
	defer root.Close()
	if err := applyDelta(ctx, f.obs, root, deltaRef{Object: d.Object, Deleted: d.Deleted}, f.ex, limitsFor(f.max)); err != nil {
		return fmt.Errorf("apply the folder changes of turn %s (worker %s) to %s: %w", o.TurnID, o.Worker, d.Dir, err)
	}
	if d.Object != "" {
		f.knowObject(d.Object, true) // read whole just now
	}
	fe.Digest = d.Digest
	fe.Deltas = append(fe.Deltas, deltaRef{Object: d.Object, Deleted: d.Deleted})
	fe.Applied = append(fe.Applied, o.TurnID)
	if len(fe.Applied) > keepApplied {
		fe.Applied = fe.Applied[len(fe.Applied)-keepApplied:]
	}
	nrev, err := f.putEntry(ctx, key, fe, rev)
	if err != nil {
		return err
	}
	f.log.Debug("folder delta applied", "turn", o.TurnID, "worker", o.Worker, "dir", d.Dir, "version", nrev)
	return nil
}

// refuseStale refuses the folder changes of o, accepted as its turn's
// own (Runner.acceptOutcome): logged, counted, its delta object deleted.
func (f *folders) refuseStale(o Outcome, why string) {
	d := o.Folder
	f.log.Warn("stale folder upload refused", "worker", o.Worker, "turn", o.TurnID, "dir", d.Dir, "base", d.Base, "why", why)
	f.refused.Add(1) // after the log: whoever sees the count sees the log
	if d.Object == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.obs.Delete(ctx, d.Object); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		f.log.Warn("delete refused folder delta", "object", d.Object, "err", err)
	}
}

// applyDelta writes a delta's files (object d.Object of obs) into root and
// removes its deleted paths: the gateway applying a turn's changes, and a
// worker bringing its copy to a version. Its files are unpacked within
// lim; a refused delta changes nothing.
func applyDelta(ctx context.Context, obs jetstream.ObjectStore, root *os.Root, d deltaRef, ex excluder, lim unpackLimits) error {
	for _, p := range d.Deleted { // refused before anything is written
		if err := checkName(p); err != nil {
			return err
		}
	}
	if d.Object != "" {
		if _, err := unpackObject(ctx, obs, d.Object, root, ex, lim); err != nil {
			return err
		}
	}
	return removePaths(root, d.Deleted, ex)
}

// unpackObject unpacks object name of obs (a gzip tar) into root within
// lim, once the object store has checked the whole object's digest: a
// refused or corrupt object leaves root as it was. It returns the names
// the tar held.
func unpackObject(ctx context.Context, obs jetstream.ObjectStore, name string, root *os.Root, ex excluder, lim unpackLimits) (map[string]bool, error) {
	var st *staged
	err := getObject(ctx, obs, name, func(r io.Reader) error {
		var err error
		st, err = stageTar(root, r, ex, lim)
		return err
	})
	if err != nil {
		if st != nil {
			st.discard()
		}
		return nil, err
	}
	return st.commit()
}

// getObject reads an object through fn; the object store checks its
// digest at the end.
func getObject(ctx context.Context, obs jetstream.ObjectStore, name string, fn func(io.Reader) error) error {
	res, err := obs.Get(ctx, name)
	if err != nil {
		return fmt.Errorf("get %s from object store %s: %w", name, ObjectsBucket, err)
	}
	defer res.Close()
	if err := fn(res); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, res) // to EOF, where the digest is checked
	if err := res.Error(); err != nil {
		return fmt.Errorf("get %s from object store %s: %w", name, ObjectsBucket, err)
	}
	return nil
}

func maxBytes(mb int) int64 {
	if mb <= 0 {
		mb = DefaultMaxFolderMB
	}
	return int64(mb) << 20
}

func newFolders(ctx context.Context, js jetstream.JetStream, exclude []string, maxMB int, log *slog.Logger) (*folders, error) {
	ex, err := newExcluder(exclude)
	if err != nil {
		return nil, err
	}
	kv, obs, err := folderStores(ctx, js)
	if err != nil {
		return nil, err
	}
	return &folders{kv: kv, obs: obs, ex: ex, max: maxBytes(maxMB), log: log}, nil
}
