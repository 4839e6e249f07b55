//go:build linux

package store

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"switchboard/internal/testenv"
)

// roDirEnv carries the working directory to the child process that runs the
// read-only cases as an unprivileged user.
const roDirEnv = "STORE_TEST_READONLY_BASE"

// TestOpenReadOnlyDir checks the errors an operator sees when the data
// directory is not writable. Permission bits do not bind root, so as root the
// test re-runs itself as nobody (uid 65534) in a child process.
func TestOpenReadOnlyDir(t *testing.T) {
	if base := os.Getenv(roDirEnv); base != "" {
		readOnlyCases(t, base)
		return
	}
	base, err := os.MkdirTemp("", "store-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		readOnlyCases(t, base)
		return
	}
	bin := filepath.Join(base, "store.test")
	if err := copyExecutable(bin); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestOpenReadOnlyDir$", "-test.v", "-test.count=1")
	cmd.Dir = base
	cmd.Env = append(os.Environ(), roDirEnv+"="+base, "HOME="+base, "TMPDIR="+base)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(err.Error(), "operation not permitted") {
			// Root without CAP_SETUID (a user namespace): the cases would
			// pass as root whatever the code does, so they are not run.
			testenv.Unavailable(t, "running as root, cannot switch to an unprivileged user to test permission errors: %v", err)
		}
		t.Fatalf("read-only cases as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestOpenReadOnlyDir") {
		t.Fatalf("child did not run the cases:\n%s", out)
	}
	t.Logf("ran as nobody:\n%s", out)
}

func readOnlyCases(t *testing.T, base string) {
	ctx := context.Background()

	t.Run("new database in read-only dir", func(t *testing.T) {
		dir := filepath.Join(base, "ro-new")
		mustMkdir(t, dir, 0o555)
		path := filepath.Join(dir, "switchboard.db")
		_, err := Open(ctx, path)
		if err == nil {
			t.Fatal("Open succeeded in a read-only directory")
		}
		want := "open store " + path + ": cannot create the database file in directory " + dir + ": permission denied"
		if err.Error() != want {
			t.Errorf("error = %q\nwant    %q", err, want)
		}
	})

	t.Run("existing database in read-only dir", func(t *testing.T) {
		dir := filepath.Join(base, "ro-existing")
		mustMkdir(t, dir, 0o755)
		path := filepath.Join(dir, "switchboard.db")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AddGroup(ctx, "main"); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		_, err = Open(ctx, path)
		if err == nil {
			t.Fatal("Open succeeded although WAL files cannot be created")
		}
		for _, w := range []string{"open store " + path, "directory " + dir + " is not writable", "permission denied"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	})

	t.Run("read-only database file", func(t *testing.T) {
		dir := filepath.Join(base, "ro-file")
		mustMkdir(t, dir, 0o755)
		path := filepath.Join(dir, "switchboard.db")
		s, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := os.Chmod(path, 0o400); err != nil {
			t.Fatal(err)
		}
		_, err = Open(ctx, path)
		if err == nil {
			t.Fatal("Open succeeded on a read-only file")
		}
		for _, w := range []string{"open store " + path, "permission denied"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q lacks %q", err, w)
			}
		}
	})
}

func mustMkdir(t *testing.T, dir string, perm os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
}

// copyExecutable copies the running test binary to dst, readable and
// executable by everyone (go test's own build dir is private).
func copyExecutable(dst string) error {
	src, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
