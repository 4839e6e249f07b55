package remote

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// files lists what dir holds (slash paths, directories with a trailing /).
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			rel += "/"
		}
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// bomb is a small gzip tar that expands past 1 MB: a changed work.md, a
// new directory with a file, then 24 MB of one byte repeated.
func bomb(t *testing.T) []byte {
	obj := tgz(t, &tar.Header{Typeflag: tar.TypeReg, Name: "work.md", Size: 5, Mode: 0o600},
		&tar.Header{Typeflag: tar.TypeDir, Name: "newdir/", Mode: 0o755},
		&tar.Header{Typeflag: tar.TypeReg, Name: "newdir/small", Size: 10, Mode: 0o600},
		&tar.Header{Typeflag: tar.TypeReg, Name: "big", Size: 24 << 20, Mode: 0o600})
	if len(obj) > 64<<10 {
		t.Fatalf("the bomb is %d bytes; want a small object", len(obj))
	}
	return obj
}

// A small object that expands past nats.max_folder_mb is refused on both
// sides, with an error naming the cap, and leaves nothing behind: before,
// a 23 KB object became a 24 MB file on the gateway and on the worker.
func TestUnpackPastFolderCapRefused(t *testing.T) {
	nc := natsConn(t)
	obj := bomb(t)
	t.Logf("object: %d bytes for 24 MB", len(obj))
	t.Run("gateway", func(t *testing.T) {
		r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{"true"}, MaxFolderMB: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		dir := turnInput(t, "x").Dir
		writeFiles(t, dir, map[string]string{"work.md": "mine\n"})
		ref, err := r.fold.publish(t.Context(), dir, "t-pub")
		if err != nil {
			t.Fatal(err)
		}
		name := folderKey(dir) + "/t-bomb.delta.tgz"
		if _, err := r.fold.obs.PutBytes(t.Context(), name, obj); err != nil {
			t.Fatal(err)
		}
		err = r.fold.apply(t.Context(), Outcome{TurnID: "t-bomb", Worker: "w1",
			Folder: &FolderDelta{Dir: dir, Base: ref.Version, Object: name, Digest: ref.Digest}})
		if err == nil || !strings.Contains(err.Error(), "nats.max_folder_mb") || !strings.Contains(err.Error(), `"big"`) {
			t.Errorf("apply: %v; want a refusal naming the entry and nats.max_folder_mb", err)
		}
		if got := files(t, dir); !slices.Equal(got, []string{"work.md"}) {
			t.Errorf("the gateway's folder holds %q; want only work.md", got)
		}
		if got := readFile(t, filepath.Join(dir, "work.md")); got != "mine\n" {
			t.Errorf("work.md %q; want it as it was", got)
		}
	})
	t.Run("worker", func(t *testing.T) {
		wdir := t.TempDir()
		w, err := NewWorker(t.Context(), nc, WorkerOptions{ID: "w1", Slots: 1, Prepare: shSpec, Dir: wdir, MaxFolderMB: 1})
		if err != nil {
			t.Fatal(err)
		}
		dir := turnInput(t, "x").Dir
		name := folderKey(dir) + "/t-bomb.full.tgz"
		if _, err := w.folders.obs.PutBytes(t.Context(), name, obj); err != nil {
			t.Fatal(err)
		}
		copyDir := filepath.Join(wdir, "folders", folderKey(dir))
		writeFiles(t, copyDir, map[string]string{"work.md": "copy\n"})
		_, err = w.folders.prepare(t.Context(), dir, &FolderRef{Version: 1, Digest: strings.Repeat("0", 64), Object: name})
		if err == nil || !strings.Contains(err.Error(), "nats.max_folder_mb") {
			t.Errorf("prepare: %v; want a refusal naming nats.max_folder_mb", err)
		}
		if got := files(t, copyDir); !slices.Equal(got, []string{"work.md"}) {
			t.Errorf("the worker's copy holds %q; want only work.md", got)
		}
		if got := readFile(t, filepath.Join(copyDir, "work.md")); got != "copy\n" {
			t.Errorf("the copy's work.md %q; want it as it was", got)
		}
	})
}

// A snapshot with more entries than maxUnpackEntries is refused, naming
// the cap, and what it staged is removed.
func TestUnpackEntriesCapped(t *testing.T) {
	defer func(n int) { maxUnpackEntries = n }(maxUnpackEntries)
	maxUnpackEntries = 3
	folder := t.TempDir()
	root, err := os.OpenRoot(folder)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var hs []*tar.Header
	for _, n := range []string{"a", "b", "c", "d"} {
		hs = append(hs, &tar.Header{Typeflag: tar.TypeReg, Name: "d/" + n, Size: 1, Mode: 0o600})
	}
	ex, _ := newExcluder(nil)
	_, err = applyTar(root, bytes.NewReader(tgz(t, hs...)), ex, limitsFor(maxBytes(0)))
	if err == nil || !strings.Contains(err.Error(), "more than 3 entries") {
		t.Errorf("err %v; want a refusal naming the entry cap", err)
	}
	if got := files(t, folder); len(got) != 0 {
		t.Errorf("the folder holds %q after the refusal; want nothing", got)
	}
}
