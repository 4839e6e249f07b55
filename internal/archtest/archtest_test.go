package archtest

import (
	"bufio"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "switchboard/"

// TestArchitectureMatchesImports: every package of the module is in
// ARCHITECTURE.md's imports block with exactly the project packages it
// imports, and the block names no package that does not exist.
func TestArchitectureMatchesImports(t *testing.T) {
	root := moduleRoot(t)
	documented := readDocumented(t, filepath.Join(root, "ARCHITECTURE.md"))

	actual := imports(t, root)
	for pkg, deps := range actual {
		doc, ok := documented[pkg]
		switch {
		case !ok:
			t.Errorf("ARCHITECTURE.md does not list package %s (it imports %v)", pkg, deps)
		case !slices.Equal(doc, deps):
			t.Errorf("ARCHITECTURE.md: %s imports %v; the code imports %v", pkg, doc, deps)
		}
	}
	for pkg := range documented {
		if _, ok := actual[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md lists %s, which is not a package of the module", pkg)
		}
	}
}

// readDocumented parses the "```imports" block: one "pkg: dep dep" a line.
func readDocumented(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```imports":
			in = true
		case in && line == "```":
			in = false
		case in && line != "":
			pkg, deps, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("ARCHITECTURE.md imports block: %q is not \"pkg: deps\"", line)
			}
			d := strings.Fields(deps)
			slices.Sort(d)
			doc[strings.TrimSpace(pkg)] = d
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(doc) == 0 {
		t.Fatal("ARCHITECTURE.md has no ```imports block")
	}
	return doc
}

// imports reads each package's non-test imports of project packages, as
// go list would (go/build, the same build constraints). Reading the files
// here, not in a go list subprocess, also lets go test's cache see them.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	actual := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		p, err := build.Default.ImportDir(path, 0)
		if _, none := err.(*build.NoGoError); none {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, _ := filepath.Rel(root, path)
		pkg := filepath.ToSlash(rel)
		if pkg == "internal/archtest" {
			return nil
		}
		deps := []string{}
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				deps = append(deps, dep)
			}
		}
		slices.Sort(deps)
		actual[pkg] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return actual
}

// moduleRoot is two levels up: go test runs in the package's directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	return root
}
