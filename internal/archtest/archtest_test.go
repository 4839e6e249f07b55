package archtest

import (
	"bufio"
	"os"
	"os/exec"
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

	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}:{{join .Imports " "}}`, "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	actual := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		pkg, imports, _ := strings.Cut(strings.TrimSpace(line), ":")
		pkg = strings.TrimPrefix(pkg, module)
		if pkg == "internal/archtest" {
			continue
		}
		var deps []string
		for _, imp := range strings.Fields(imports) {
			if dep, ok := strings.CutPrefix(imp, module); ok {
				deps = append(deps, dep)
			}
		}
		slices.Sort(deps)
		actual[pkg] = deps
	}
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

func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}
