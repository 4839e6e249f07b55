package remote

import (
	"archive/tar"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
)

// Unpacking a snapshot or delta is capped: a small object may expand to
// any size (a 23 KB gzip holds a 24 MB file), so the bytes written are
// counted against the folder cap (nats.max_folder_mb) and the entries read
// against maxUnpackEntries, on the gateway (a turn's delta) and on a
// worker (a version's snapshot and deltas) alike. An unpack is staged
// first (stageTar): its files are written beside their places under
// temporary names and only renamed into place (commit) once the whole tar
// was read within the caps and the object store has checked the object's
// digest; a refused one (discard) removes every temporary file and every
// directory it created, and leaves the folder's files as they were.

// maxUnpackEntries is how many entries one snapshot or delta may hold: far
// more than a group folder has files, far less than a flood of empty files
// that would exhaust inodes. A variable for tests.
var maxUnpackEntries = 100_000

// unpackLimits cap one unpack.
type unpackLimits struct {
	bytes   int64 // file bytes written: the folder cap
	entries int   // tar entries read, excluded ones included
}

func limitsFor(maxBytes int64) unpackLimits {
	return unpackLimits{bytes: maxBytes, entries: maxUnpackEntries}
}

// staged is an unpack waiting for commit or discard.
type staged struct {
	root    *os.Root
	names   map[string]bool        // every path the tar held (not excluded)
	files   []stagedFile           // in tar order
	dirs    map[string]fs.FileMode // directory entries → their mode
	created []string               // directories this unpack created, parents first
	written int64
	entries int
}

type stagedFile struct {
	tmp, name string
	mode      fs.FileMode
}

// applyTar writes a snapshot or delta (gzip tar from r) into root within
// lim: stageTar, then commit. It returns the names the tar held.
func applyTar(root *os.Root, r io.Reader, ex excluder, lim unpackLimits) (map[string]bool, error) {
	st, err := stageTar(root, r, ex, lim)
	if err != nil {
		return nil, err
	}
	return st.commit()
}

// stageTar reads a snapshot or delta (gzip tar from r) into root without
// replacing anything yet: its directories are created and its regular
// files written under temporary names beside their places. Any other entry
// type, a name outside the folder, more than lim.entries entries or more
// than lim.bytes of files is an error naming it, and what was staged is
// removed; os.Root keeps every write inside the folder besides. Excluded
// paths are never written: local credentials stay as they are.
func stageTar(root *os.Root, r io.Reader, ex excluder, lim unpackLimits) (*staged, error) {
	st := &staged{root: root, names: map[string]bool{}, dirs: map[string]fs.FileMode{}}
	if err := st.read(r, ex, lim); err != nil {
		st.discard()
		return nil, err
	}
	return st, nil
}

func (st *staged) read(r io.Reader, ex excluder, lim unpackLimits) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read snapshot: %w", err)
		}
		if st.entries++; st.entries > lim.entries {
			return fmt.Errorf("snapshot holds more than %d entries (the cap of one snapshot or delta); refused", lim.entries)
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if err := checkName(name); err != nil {
			return err
		}
		if ex.excluded(name) {
			continue
		}
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := st.mkdirs(name, true); err != nil {
				return fmt.Errorf("snapshot entry %q: %w", name, err)
			}
			st.dirs[name] = mode
		case tar.TypeReg:
			if err := st.file(name, mode, hdr.Size, tr, lim.bytes); err != nil {
				return err
			}
		default:
			return fmt.Errorf("snapshot entry %q is of tar type %q, not a file or directory; refused", name, hdr.Typeflag)
		}
		st.names[name] = true
	}
}

// tooLarge is the error of an unpack past the folder cap.
func tooLarge(name string, max int64) error {
	return fmt.Errorf("snapshot entry %q expands the unpacked files past %d MB (nats.max_folder_mb); refused, nothing of it kept", name, max>>20)
}

// file stages a file entry of size bytes, counted against max.
func (st *staged) file(name string, mode fs.FileMode, size int64, r io.Reader, max int64) error {
	if size < 0 || st.written+size > max {
		return tooLarge(name, max)
	}
	dir := path.Dir(name)
	if dir != "." {
		if err := st.mkdirs(dir, false); err != nil {
			return fmt.Errorf("snapshot entry %q: %w", name, err)
		}
	}
	tmp := path.Join(dir, ".switchboard-"+rand.Text())
	f, err := st.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("snapshot entry %q: %w", name, err)
	}
	st.files = append(st.files, stagedFile{tmp: tmp, name: name, mode: mode})
	// Never more than the cap, whatever the header said.
	n, err := io.Copy(f, io.LimitReader(r, max-st.written+1))
	st.written += n
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("snapshot entry %q: %w", name, err)
	}
	if st.written > max {
		return tooLarge(name, max)
	}
	return nil
}

// mkdirs creates dir and its missing parents, remembering those it made.
// A file where the entry's own directory goes (entry: a directory entry)
// is removed first, as the snapshot replaces it.
func (st *staged) mkdirs(dir string, entry bool) error {
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := st.root.Lstat(p)
		if err == nil && fi.IsDir() {
			continue
		}
		if err == nil && entry && i == len(parts)-1 {
			if err := st.root.Remove(p); err != nil {
				return err
			}
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := st.root.Mkdir(p, 0o700); err != nil {
			return err
		}
		st.created = append(st.created, p)
	}
	return nil
}

// commit renames the staged files into place (a directory there is
// replaced, a symlink there replaced, not followed) and sets the
// directories' modes. It returns the names the tar held.
func (st *staged) commit() (map[string]bool, error) {
	for i, f := range st.files {
		err := st.root.Chmod(f.tmp, f.mode) // not narrowed by the umask
		if fi, lerr := st.root.Lstat(f.name); err == nil && lerr == nil && fi.IsDir() {
			err = st.root.RemoveAll(f.name)
		}
		if err == nil {
			err = st.root.Rename(f.tmp, f.name)
		}
		if err != nil {
			st.files = st.files[i:]
			st.created = nil // what is renamed stays: the folder is partly updated, as the error says
			st.discard()
			return nil, fmt.Errorf("snapshot entry %q: %w; the folder is partly updated", f.name, err)
		}
	}
	st.files = nil
	// Directory modes last: a read-only directory would refuse its files.
	for _, d := range slices.Backward(slices.Sorted(maps.Keys(st.dirs))) {
		if err := st.root.Chmod(d, st.dirs[d]|0o700); err != nil {
			return nil, fmt.Errorf("snapshot entry %q: %w", d, err)
		}
	}
	return st.names, nil
}

// discard removes what stageTar wrote: the temporary files, then the
// directories it created (deepest first).
func (st *staged) discard() {
	for _, f := range st.files {
		_ = st.root.Remove(f.tmp)
	}
	st.files = nil
	for _, d := range slices.Backward(st.created) {
		_ = st.root.Remove(d)
	}
	st.created = nil
}
