package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// newStore opens a fresh database in a temp dir and closes it after the test.
func newStore(t testing.TB) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "switchboard.db"))
}

func openAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func tableNames(t *testing.T, db *sql.DB) map[string]bool {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type IN ('table', 'trigger', 'index')`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names[n] = true
	}
	return names
}

func TestEmbeddedMigrationsAreValid(t *testing.T) {
	if embedded.err != nil {
		t.Fatalf("embedded migrations: %v", embedded.err)
	}
	if Migrations() < 1 || Migrations() != len(embedded.list) {
		t.Fatalf("Migrations() = %d, list has %d", Migrations(), len(embedded.list))
	}
	if got := embedded.list[0].name; got != "0001_init.sql" {
		t.Errorf("first migration = %s", got)
	}
}

func TestOpenMigratesEmptyDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s := openAt(t, path)
	ctx := context.Background()
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != Migrations() {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, Migrations())
	}
	names := tableNames(t, s.Read())
	for _, want := range []string{"schema_version", "messages", "messages_fts", "chats", "groups",
		"routes", "grant_overrides", "revision", "messages_fts_insert", "messages_fts_delete", "routes_rev_insert"} {
		if !names[want] {
			t.Errorf("schema lacks %s", want)
		}
	}
	var mode string
	if err := s.Read().QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("database file mode = %v, want 0600", perm)
	}
	if rev, err := s.Revision(ctx); err != nil || rev != 0 {
		t.Errorf("Revision of a new database = %d, %v; want 0", rev, err)
	}
}

func TestReopenIsIdempotent(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	m := &Message{ChatJID: "web:lobby", ID: "m1", Text: "kept across restarts"}
	if _, err := s.InsertMessage(ctx, m); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		s := openAt(t, path)
		var rows int
		if err := s.Read().QueryRow(`SELECT count(*) FROM schema_version`).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != Migrations() {
			t.Errorf("open %d: schema_version has %d rows, want %d", i, rows, Migrations())
		}
		got, err := s.Message(ctx, m.Seq)
		if err != nil || got.Text != m.Text {
			t.Errorf("open %d: message = %+v, %v", i, got, err)
		}
		if ok, err := s.GroupExists(ctx, "main"); err != nil || !ok {
			t.Errorf("open %d: group main lost: %v", i, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	future := Migrations() + 3
	err = s.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO schema_version (version, name, applied_ms) VALUES (?, 'future.sql', 0)`, future)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	_, err = Open(ctx, path)
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{
		"open store " + path,
		fmt.Sprintf("schema version %d", future),
		fmt.Sprintf("up to %d", Migrations()),
		"upgrade switchboard",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestOpenCorruptFile(t *testing.T) {
	random := make([]byte, 8192)
	for i := range random {
		random[i] = byte(i*7919 + i/3)
	}
	tests := []struct {
		name    string
		content []byte
	}{
		{"text file", []byte("data_dir: ./data\noperator_folder: root\n")},
		{"random bytes", random},
		{"zeroed page", make([]byte, 4096)},
		{"sqlite magic then garbage", append([]byte("SQLite format 3\x00"), random[:4000]...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "switchboard.db")
			if err := os.WriteFile(path, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(context.Background(), path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded on a corrupt file")
			}
			want := "open store " + path + ": file is not a database"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error = %q, want prefix %q", err, want)
			}
			got, rerr := os.ReadFile(path)
			if rerr != nil || string(got) != string(tc.content) {
				t.Errorf("the corrupt file was modified (read err %v)", rerr)
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Errorf("files left beside the database: %v", names)
			}
		})
	}
}

func TestOpenPathErrors(t *testing.T) {
	base := t.TempDir()
	notDir := filepath.Join(base, "plain-file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "dir.db"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"missing parent directory", filepath.Join(base, "nope", "deeper", "switchboard.db"),
			[]string{"directory " + filepath.Join(base, "nope", "deeper") + " does not exist"}},
		{"parent is a file", filepath.Join(notDir, "switchboard.db"), []string{notDir, "not a directory"}},
		{"path is a directory", filepath.Join(base, "dir.db"), []string{"is a directory"}},
		{"empty path", "", []string{"empty database path"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(context.Background(), tc.path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !strings.HasPrefix(err.Error(), "open store "+tc.path+": ") {
				t.Errorf("error %q does not start with the operation and path", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(base, "nope")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created the missing directory: %v", err)
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "odd ?dir#50%")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sw?x=1#frag%20.db")
	s := openAt(t, path)
	if err := s.AddGroup(context.Background(), "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at the literal path: %v", err)
	}
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE invoices (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(context.Background(), path)
	if !errors.Is(err, ErrNotSwitchboard) {
		t.Fatalf("Open = %v, want ErrNotSwitchboard", err)
	}
}

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		files   fstest.MapFS
		want    int
		wantErr string
	}{
		{"ordered", fstest.MapFS{"m/0002_b.sql": file("B"), "m/0001_a.sql": file("A")}, 2, ""},
		{"gap", fstest.MapFS{"m/0001_a.sql": file("A"), "m/0003_c.sql": file("C")}, 0, "expected version 0002"},
		{"duplicate", fstest.MapFS{"m/0001_a.sql": file("A"), "m/0001_b.sql": file("B")}, 0, "expected version 0002"},
		{"starts at two", fstest.MapFS{"m/0002_a.sql": file("A")}, 0, "expected version 0001"},
		{"bad name", fstest.MapFS{"m/0001_a.sql": file("A"), "m/2_b.sql": file("B")}, 0, "not NNNN_name.sql"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set := loadMigrations(tc.files, "m")
			if tc.wantErr != "" {
				if set.err == nil || !strings.Contains(set.err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", set.err, tc.wantErr)
				}
				return
			}
			if set.err != nil || len(set.list) != tc.want {
				t.Fatalf("got %d migrations, %v", len(set.list), set.err)
			}
			for i, m := range set.list {
				if m.version != i+1 {
					t.Errorf("migration %d has version %d", i, m.version)
				}
			}
		})
	}
}

// withExtra returns the embedded migrations followed by extra ones.
func withExtra(extra ...string) migrationSet {
	list := append([]migration(nil), embedded.list...)
	for _, sql := range extra {
		v := len(list) + 1
		list = append(list, migration{version: v, name: fmt.Sprintf("%04d_test.sql", v), sql: sql})
	}
	return migrationSet{list: list}
}

func TestLaterMigrationsApplyInOrder(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s := openAt(t, path)
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	next := withExtra(
		`CREATE TABLE future (id INTEGER PRIMARY KEY, folder TEXT NOT NULL);`,
		`ALTER TABLE future ADD COLUMN prompt TEXT NOT NULL DEFAULT ''; INSERT INTO future (folder, prompt) SELECT folder, 'hi' FROM groups;`,
	)
	s2, err := open(ctx, path, next)
	if err != nil {
		t.Fatalf("open with two new migrations: %v", err)
	}
	defer s2.Close()
	v, _ := s2.SchemaVersion(ctx)
	if v != Migrations()+2 {
		t.Errorf("version = %d, want %d", v, Migrations()+2)
	}
	var prompt string
	if err := s2.Read().QueryRow(`SELECT prompt FROM future WHERE folder = 'main'`).Scan(&prompt); err != nil || prompt != "hi" {
		t.Errorf("second migration did not run after the first: %q, %v", prompt, err)
	}
	s2.Close()

	// The older binary now refuses the newer database.
	if _, err := Open(ctx, path); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("old binary Open = %v, want ErrSchemaTooNew", err)
	}
}

func TestFailingMigrationRollsBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	openAt(t, path).Close()

	bad := withExtra(`CREATE TABLE half (id INTEGER); INSERT INTO no_such_table VALUES (1);`)
	if _, err := open(ctx, path, bad); err == nil || !strings.Contains(err.Error(), "apply migration") {
		t.Fatalf("open with a failing migration = %v", err)
	}
	s := openAt(t, path)
	if v, _ := s.SchemaVersion(ctx); v != Migrations() {
		t.Errorf("version after failed migration = %d, want %d", v, Migrations())
	}
	if tableNames(t, s.Read())["half"] {
		t.Error("the failed migration's first statement was kept")
	}
}

func TestConcurrentOpenMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "switchboard.db")
	const n = 6
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			s, err := Open(context.Background(), path)
			if err != nil {
				errs <- err
				return
			}
			errs <- s.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	s := openAt(t, path)
	var rows int
	if err := s.Read().QueryRow(`SELECT count(*) FROM schema_version`).Scan(&rows); err != nil || rows != Migrations() {
		t.Errorf("schema_version rows = %d, %v; want %d", rows, err, Migrations())
	}
}

func TestWriteRollsBackOnError(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	boom := errors.New("boom")
	err := s.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`INSERT INTO groups (folder, created_ms) VALUES ('ghost', 0)`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want boom", err)
	}
	if ok, _ := s.GroupExists(ctx, "ghost"); ok {
		t.Error("Write committed despite the error")
	}
}

func TestReadPoolIsReadOnly(t *testing.T) {
	s := newStore(t)
	_, err := s.Read().Exec(`INSERT INTO groups (folder, created_ms) VALUES ('x', 0)`)
	if err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Errorf("write through Read() = %v, want a readonly error", err)
	}
}

// A write whose context ends before its commit writes nothing, and the
// error says the context ended (database/sql's own "transaction has
// already been committed or rolled back" said neither).
func TestWriteTxCancelledBeforeCommit(t *testing.T) {
	s := newStore(t)
	for range 20 { // database/sql reports it two ways, depending on timing
		ctx, cancel := context.WithCancel(context.Background())
		err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_ms) VALUES (9999, 'x', 0)`); err != nil {
				return err
			}
			cancel()
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v; want it to wrap context.Canceled", err)
		}
		var n int
		if err := s.w.QueryRow(`SELECT count(*) FROM schema_version WHERE version = 9999`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("rows written by the cancelled transaction: %d (%v); want 0", n, err)
		}
	}
}

// queryPlan is SQLite's plan for q with args, its steps' details joined
// by "; ", for the tests that a query searches an index.
func queryPlan(t *testing.T, s *Store, q string, args ...any) string {
	t.Helper()
	rows, err := s.r.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}
