package testenv_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"switchboard/internal/testenv"
)

// childEnv marks the child process that runs one helper and reports.
const childEnv = "TESTENV_CHILD"

// TestChild is the child: it calls the helper that childEnv names.
func TestChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "":
		t.Skip("helper process for TestMissingTool")
	case "need":
		testenv.Need(t, "switchboard-no-such-tool", "nothing installs it")
	case "require":
		testenv.Require(t, "switchboard-no-such-tool", "nothing installs it")
	case "found":
		if p := testenv.Need(t, "sh", "it is everywhere"); !strings.HasSuffix(p, "/sh") {
			t.Fatalf("Need(sh) = %q", p)
		}
	}
}

// A missing tool skips the test outside CI and fails it with CI set;
// Require fails it either way; a present one is returned.
func TestMissingTool(t *testing.T) {
	for _, tc := range []struct {
		name, helper, ci string
		fails            bool
		output           string
	}{
		{"need outside CI", "need", "", false, "--- SKIP: TestChild"},
		{"need in CI", "need", "true", true, "CI is set: a test that cannot run here fails"},
		{"require outside CI", "require", "", true, "switchboard-no-such-tool is not installed (nothing installs it)"},
		{"found in CI", "found", "true", false, "--- PASS: TestChild"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+tc.helper, "CI="+tc.ci)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.fails {
				t.Errorf("child failed: %v, want %v\n%s", failed, tc.fails, out)
			}
			if !strings.Contains(string(out), tc.output) {
				t.Errorf("child output lacks %q:\n%s", tc.output, out)
			}
		})
	}
}
