package remote

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A snapshot of a group folder is a gzip tar of its regular files and
// directories with their permission bits. Symlinks, sockets, FIFOs and
// devices are skipped, and so is every path a exclude glob matches
// (credentials): they never leave the machine they are on, and applying a
// snapshot never overwrites or removes them.

// DefaultSnapshotExclude are the globs never snapshotted, besides
// nats.snapshot_exclude. A glob without "/" matches any one path element
// (a name anywhere in the folder); one with "/" matches consecutive
// elements (".codex/auth.json" anywhere). An excluded directory excludes
// all it holds.
var DefaultSnapshotExclude = []string{
	".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".ssh", ".gnupg", ".credentials.json", ".codex/auth.json",
	".aws/credentials", ".docker/config.json", ".kube/config", ".config/gh/hosts.yml",
}

// DefaultMaxFolderMB is nats.max_folder_mb's default.
const DefaultMaxFolderMB = 256

// excluder decides which paths (slash-separated, relative to the folder)
// are never snapshotted.
type excluder struct{ globs []string }

// newExcluder is DefaultSnapshotExclude plus extra (nats.snapshot_exclude).
func newExcluder(extra []string) (excluder, error) {
	for i, g := range extra {
		if _, err := path.Match(g, ""); err != nil || g == "" || strings.HasPrefix(g, "/") {
			return excluder{}, fmt.Errorf("nats.snapshot_exclude[%d]: %q is not a glob of a relative path (e.g. \"*.secret\" or \"config/token.json\")", i, g)
		}
	}
	return excluder{globs: append(slices.Clone(DefaultSnapshotExclude), extra...)}, nil
}

func (e excluder) excluded(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, g := range e.globs {
		n := strings.Count(g, "/") + 1
		for i := 0; i+n <= len(parts); i++ {
			if ok, _ := path.Match(g, strings.Join(parts[i:i+n], "/")); ok {
				return true
			}
		}
	}
	return false
}

// fileInfo is one manifest entry: a directory (Dir, Mode) or a regular
// file (Mode, Size, SHA256).
type fileInfo struct {
	Dir    bool        `json:"dir,omitempty"`
	Mode   fs.FileMode `json:"mode"` // permission bits
	Size   int64       `json:"size,omitempty"`
	SHA256 string      `json:"sha256,omitempty"`
}

// manifest maps a folder's paths (slash-separated, relative) to what they
// hold.
type manifest map[string]fileInfo

// digest identifies the folder's content: a SHA-256 over the sorted
// manifest.
func (m manifest) digest() string {
	h := sha256.New()
	for _, p := range slices.Sorted(mapKeys(m)) {
		f := m[p]
		fmt.Fprintf(h, "%q %t %o %d %s\n", p, f.Dir, f.Mode, f.Size, f.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func mapKeys(m manifest) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// bytes is the size of the manifest's files together.
func (m manifest) bytes() int64 {
	var n int64
	for _, f := range m {
		n += f.Size
	}
	return n
}

// tooBig is the error of a folder over nats.max_folder_mb.
func tooBig(dir string, size, max int64) error {
	return fmt.Errorf("group folder %s holds %d MB of files, over nats.max_folder_mb (%d); remove files from it or raise nats.max_folder_mb",
		dir, (size+(1<<20)-1)>>20, max>>20)
}

// walkIncluded walks root's folder depth-first, without "." itself and
// without excluded paths (an excluded directory is not entered).
func walkIncluded(root *os.Root, ex excluder, fn func(p string, d fs.DirEntry) error) error {
	return fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if ex.excluded(p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return fn(p, d)
	})
}

// hashCache keeps file hashes by what stat says, so that a folder's
// unchanged files are not read again at every turn: a file whose size,
// modification and change times, inode and mode are those it had when it
// was hashed gets that hash. A file modified less than racyWindow before
// it was hashed is read again (a later write in the same clock tick would
// leave its stamp as it was). nil: no cache.
type hashCache struct {
	mu    sync.Mutex
	m     map[string]cachedHash // absolute path → its last hash
	reads atomic.Int64          // files read to hash them
}

type fileStamp struct {
	size, mtime, ctime int64 // bytes; Unix ns
	ino                uint64
	mode               fs.FileMode
}

type cachedHash struct {
	stamp  fileStamp
	hashed int64 // Unix ns
	info   fileInfo
}

// racyWindow: see hashCache. A variable for tests.
var racyWindow = 2 * time.Second

// maxCachedHashes bounds the cache: past it, it starts again empty.
const maxCachedHashes = 200_000

func (c *hashCache) get(path string, s fileStamp) (fileInfo, bool) {
	if c == nil {
		return fileInfo{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[path]
	if !ok || e.stamp != s || e.hashed-max(s.mtime, s.ctime) < int64(racyWindow) {
		return fileInfo{}, false
	}
	return e.info, true
}

func (c *hashCache) put(path string, s fileStamp, hashed time.Time, info fileInfo) {
	if c == nil {
		return
	}
	c.reads.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedHashes {
		c.m = map[string]cachedHash{}
	}
	c.m[path] = cachedHash{stamp: s, hashed: hashed.UnixNano(), info: info}
}

// scanFolder is the manifest of root's folder and how many entries it
// skipped (symlinks, sockets, devices). Excluded paths are left out
// silently. Over max bytes of files (max > 0) it fails with tooBig. Files
// unchanged since cache hashed them are not read.
func scanFolder(root *os.Root, ex excluder, max int64, cache *hashCache) (manifest, int, error) {
	m := manifest{}
	skipped := 0
	var total int64
	err := walkIncluded(root, ex, func(p string, d fs.DirEntry) error {
		switch {
		case d.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			m[p] = fileInfo{Dir: true, Mode: info.Mode().Perm()}
		case d.Type().IsRegular():
			f, err := hashFile(root, p, d, cache)
			if errors.Is(err, errNotRegular) {
				skipped++
				return nil
			}
			if err != nil {
				return err
			}
			total += f.Size
			if max > 0 && total > max {
				return tooBig(root.Name(), total, max)
			}
			m[p] = f
		default:
			skipped++
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return m, skipped, nil
}

// hashFile opens p through root (no symlink is followed out of it) and
// hashes it, refusing what is not a regular file by then; unless cache
// holds its hash for what the walk's stat (d) says of it.
func hashFile(root *os.Root, p string, d fs.DirEntry, cache *hashCache) (fileInfo, error) {
	key := filepath.Join(root.Name(), filepath.FromSlash(p))
	if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
		// Unchanged since it was hashed: not opened at all.
		if fi, ok := cache.get(key, stampOf(info)); ok {
			return fi, nil
		}
	}
	f, err := root.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return fileInfo{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fileInfo{}, err
	}
	if !info.Mode().IsRegular() {
		return fileInfo{}, errNotRegular
	}
	stamp := stampOf(info)
	hashed := time.Now()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fileInfo{}, fmt.Errorf("read %s: %w", p, err)
	}
	fi := fileInfo{Mode: info.Mode().Perm(), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	if n == info.Size() {
		cache.put(key, stamp, hashed, fi)
	}
	return fi, nil
}

// writeTar writes the entries of m named in paths (sorted) from root as a
// gzip tar to w. A file whose content no longer matches m (it changed
// since the scan) is an error: the snapshot would not match its digest.
func writeTar(w io.Writer, root *os.Root, m manifest, paths []string) error {
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	for _, p := range paths {
		fi := m[p]
		if fi.Dir {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: int64(fi.Mode)}); err != nil {
				return err
			}
			continue
		}
		if err := writeTarFile(tw, root, p, fi); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func writeTarFile(tw *tar.Writer, root *os.Root, p string, fi fileInfo) error {
	f, err := root.OpenFile(p, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: int64(fi.Mode), Size: fi.Size}); err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.CopyN(io.MultiWriter(tw, h), f, fi.Size); err != nil || hex.EncodeToString(h.Sum(nil)) != fi.SHA256 {
		return fmt.Errorf("%s changed while it was being snapshotted; try again", p)
	}
	return nil
}

// diff is what changed from before to after: the paths to send (added or
// changed, sorted) and the paths deleted.
func diff(before, after manifest) (changed, deleted []string) {
	for p, f := range after {
		if b, ok := before[p]; !ok || b != f {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			deleted = append(deleted, p)
		}
	}
	slices.Sort(changed)
	slices.Sort(deleted)
	return changed, deleted
}

// checkName refuses a snapshot entry's name that is not a clean path
// inside the folder.
func checkName(name string) error {
	if name == "" || !filepath.IsLocal(name) || path.Clean(name) != name || strings.Contains(name, `\`) {
		return fmt.Errorf("snapshot entry %q is not a path inside the folder; refused", name)
	}
	return nil
}

// removePaths removes deleted paths (from a delta) in root, deepest first;
// a directory that still holds something (a file added meanwhile, an
// excluded one) stays. Excluded paths are never removed.
func removePaths(root *os.Root, deleted []string, ex excluder) error {
	for _, p := range slices.Backward(slices.Sorted(slices.Values(deleted))) {
		if err := checkName(p); err != nil {
			return err
		}
		if ex.excluded(p) {
			continue
		}
		fi, err := root.Lstat(p)
		if err != nil {
			continue // gone already
		}
		err = root.Remove(p)
		if err != nil && !fi.IsDir() && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return nil
}

// pruneTo removes from root what a full snapshot did not hold (names):
// files and directories it lacks, and every symlink, socket or device;
// excluded paths stay.
func pruneTo(root *os.Root, names map[string]bool, ex excluder) error {
	var gone []string
	err := walkIncluded(root, ex, func(p string, d fs.DirEntry) error {
		if !names[p] || !(d.IsDir() || d.Type().IsRegular()) {
			gone = append(gone, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return removePaths(root, gone, ex)
}
