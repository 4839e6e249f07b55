package remote

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkScanFolder: what hashing a group folder costs at each publish
// and twice per worker turn, for a folder of 1,000 files of 50 KB (50 MB):
// read whole (cold), and with its files unchanged since the cache hashed
// them.
//
//	go test -run '^$' -bench ScanFolder ./remote/
func BenchmarkScanFolder(b *testing.B) {
	dir := b.TempDir()
	data := make([]byte, 50<<10)
	for i := range data {
		data[i] = byte(i)
	}
	for i := range 1000 {
		sub := filepath.Join(dir, fmt.Sprintf("d%02d", i%20))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d.txt", i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	ex, err := newExcluder(nil)
	if err != nil {
		b.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	scan := func(b *testing.B, cache *hashCache) {
		for b.Loop() {
			m, _, err := scanFolder(root, ex, 0, cache)
			if err != nil || len(m) != 1020 {
				b.Fatalf("%d entries, %v", len(m), err)
			}
			_ = m.digest()
		}
	}
	b.Run("cold", func(b *testing.B) { scan(b, nil) })
	// The files were written more than racyWindow ago: what a folder that a
	// turn did not change costs at the next publish.
	var cache hashCache
	cache.m = map[string]cachedHash{}
	old := time.Now().Add(-time.Hour)
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			err = os.Chtimes(p, old, old)
		}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(racyWindow) // the change times (Chtimes) age too
	b.Run("unchanged", func(b *testing.B) { scan(b, &cache) })
}

// A folder's unchanged files are not read again to hash them; a file
// rewritten with the same size and its old modification time set back is
// (its change time moved), and so is one modified within racyWindow of
// its hashing.
func TestScanFolderHashCache(t *testing.T) {
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "aaaa")
	write("b.txt", "bbbb")
	ex, err := newExcluder(nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	var cache hashCache
	scan := func() manifest {
		t.Helper()
		m, _, err := scanFolder(root, ex, 0, &cache)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first := scan()
	if n := cache.reads.Load(); n != 2 {
		t.Fatalf("first scan read %d files; want 2", n)
	}
	if again := scan(); cache.reads.Load() != 2 || again.digest() != first.digest() {
		t.Errorf("unchanged folder: %d reads in all, digest %s → %s; want no more reads, the same digest", cache.reads.Load(), first.digest(), again.digest())
	}
	info, err := os.Stat(filepath.Join(dir, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	write("a.txt", "AAAA")
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), info.ModTime(), info.ModTime()); err != nil {
		t.Fatal(err)
	}
	changed := scan()
	if cache.reads.Load() != 3 || changed["a.txt"].SHA256 == first["a.txt"].SHA256 || changed["b.txt"] != first["b.txt"] {
		t.Errorf("a.txt rewritten (same size, mtime set back): %d reads in all, sha %s → %s; want a.txt alone read again and its new hash",
			cache.reads.Load(), first["a.txt"].SHA256, changed["a.txt"].SHA256)
	}
	racyWindow = time.Hour // every file was modified "just before" it was hashed
	scan()
	if n := cache.reads.Load(); n != 5 {
		t.Errorf("racily hashed files: %d reads in all; want both read again (5)", n)
	}
}
