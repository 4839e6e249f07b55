// Package store owns switchboard's SQLite database: it is the one place that
// opens it. It applies the embedded numbered migrations, runs the database in
// WAL mode with a single writer connection and a separate pool of readers, and
// holds messages (with an FTS5 index), chats, groups, routes, grant overrides
// and the revision counter that lets a running gateway notice changes made by
// the CLI. Times in the database are integer unix milliseconds; they cross
// the package boundary as time.Time (the zero time: none) and durations as
// time.Duration.
//
// Every build, test and vet of this package needs the sqlite_fts5 build tag
// (GOFLAGS=-tags=sqlite_fts5).
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// Connection parameters. The writer takes BEGIN IMMEDIATE so a transaction
// never has to upgrade a read lock to a write lock (the classic source of
// "database is locked"); busy_timeout makes a second process (the CLI while
// the gateway runs) wait for the lock instead of failing.
const (
	writerParams = "_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_foreign_keys=on&_synchronous=NORMAL"
	readerParams = "mode=ro&_busy_timeout=10000&_foreign_keys=on&_synchronous=NORMAL"
)

// Store is an open switchboard database. It is safe for concurrent use.
type Store struct {
	path string
	w    *sql.DB // the one writer connection
	r    *sql.DB // readers; WAL lets them run while the writer writes
	ckpt *checkpointer
	now  func() time.Time
	// memJournals is set once migrations ran: from then on the writer
	// keeps statement journals in memory (memoryJournals).
	memJournals atomic.Bool

	insertMsg      *sql.Stmt
	msgSeqByID     *sql.Stmt
	touchChat      *sql.Stmt
	insertWorkStmt *sql.Stmt
	msgRows        multiInsert // EnqueueMessages' multi-row inserts (initInserts)
	workRows       multiInsert // and those of their work
}

// Open opens the database at path, creating the file (mode 0600) if it is
// missing, and applies any migrations the database lacks. The parent
// directory must exist. A database migrated by a newer switchboard is refused
// with an error wrapping ErrSchemaTooNew.
func Open(ctx context.Context, path string) (*Store, error) {
	s, err := open(ctx, path, embedded)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return s, nil
}

func open(ctx context.Context, path string, migs migrationSet) (*Store, error) {
	if path == "" {
		return nil, errors.New("empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := prepareFile(abs); err != nil {
		return nil, err
	}
	s := &Store{path: abs, now: time.Now}
	s.initInserts()
	if s.w, err = openWriter(ctx, abs, &s.memJournals); err != nil {
		return nil, err
	}
	if err := s.init(ctx, abs, migs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// init runs the checks and migrations on the writer, then opens the readers
// and prepares the hot statements.
func (s *Store) init(ctx context.Context, abs string, migs migrationSet) error {
	if err := checkFTS5(ctx, s.w); err != nil {
		return err
	}
	if err := migrate(ctx, s.w, migs, s.now); err != nil {
		return err
	}
	s.memJournals.Store(true)
	if _, err := s.w.ExecContext(ctx, memoryJournals); err != nil {
		return fmt.Errorf("set writer pragmas: %w", err)
	}
	r, err := sql.Open("sqlite3", dsn(abs, readerParams))
	if err != nil {
		return err
	}
	s.r = r
	n := max(4, runtime.GOMAXPROCS(0))
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		return fmt.Errorf("open readers: %w", err)
	}
	if s.ckpt, err = startCheckpointer(ctx, abs); err != nil {
		return err
	}
	return s.prepare(ctx)
}

// openWriter opens the single writer connection and checks that the file is
// a database in WAL mode. The writer does not checkpoint (see checkpointer).
func openWriter(ctx context.Context, abs string, memJournals *atomic.Bool) (*sql.DB, error) {
	w := sql.OpenDB(newWriterConnector(dsn(abs, writerParams), memJournals))
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	var mode string
	err := w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	// While another process runs WAL recovery or closes the database (the
	// last connection checkpoints and deletes the WAL), opening can fail
	// with SQLITE_BUSY without SQLite calling the busy handler: retry briefly.
	for wait := 10 * time.Millisecond; isBusy(err) && wait < 3*time.Second; wait *= 2 {
		select {
		case <-ctx.Done():
			w.Close()
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		err = w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	}
	if err == nil && !strings.EqualFold(mode, "wal") {
		err = fmt.Errorf("journal mode is %q, not wal: the filesystem may not support WAL (shared memory)", mode)
	}
	if err != nil {
		w.Close()
		return nil, explainOpenError(abs, err)
	}
	return w, nil
}

func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// dsn builds a file: URI so that a path with '?', '#' or '%' in it is not
// mistaken for URI syntax; SQLite decodes the escapes.
func dsn(abs, params string) string {
	p := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	return "file:" + p + "?" + params
}

// prepareFile checks the directory and creates the database file when it is
// missing, so that the errors name the real problem and the file is private.
func prepareFile(abs string) error {
	dir := filepath.Dir(abs)
	st, err := os.Stat(dir)
	if err != nil {
		err = unwrapPath(err)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("directory %s does not exist (create it first): %w", dir, err)
		}
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	st, err = os.Stat(abs)
	switch {
	case err == nil && st.IsDir():
		return fmt.Errorf("%s is a directory, not a database file", abs)
	case err == nil:
		// SQLite would quietly open a read-only file read-only and fail
		// on the first write; say so now.
		f, err := os.OpenFile(abs, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("database file is not writable: %w", unwrapPath(err))
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // another process created it first
	}
	if err != nil {
		return fmt.Errorf("cannot create the database file in directory %s: %w", dir, unwrapPath(err))
	}
	return f.Close()
}

// explainOpenError adds what the operator needs to know to SQLite's terse
// open errors.
func explainOpenError(abs string, err error) error {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code {
	case sqlite3.ErrNotADB:
		return fmt.Errorf("%w (it is not an SQLite database, or it is encrypted or damaged; the file was left untouched)", err)
	case sqlite3.ErrCorrupt:
		return fmt.Errorf("%w (the file was left untouched; restore it from a backup)", err)
	case sqlite3.ErrCantOpen, sqlite3.ErrReadonly, sqlite3.ErrPerm:
		if werr := probeWritable(filepath.Dir(abs)); werr != nil {
			return fmt.Errorf("%w: directory %s is not writable (WAL mode needs to create %s-wal and %s-shm there): %w",
				err, filepath.Dir(abs), filepath.Base(abs), filepath.Base(abs), werr)
		}
		f, ferr := os.OpenFile(abs, os.O_RDWR, 0)
		if ferr != nil {
			return fmt.Errorf("%w: %w", err, ferr)
		}
		f.Close()
	}
	return err
}

// probeWritable reports whether a file can be created in dir. It runs only
// on the error path.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".switchboard-probe-*")
	if err != nil {
		return unwrapPath(err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// unwrapPath drops the *fs.PathError wrapper when the message already names
// the path, leaving the cause ("permission denied").
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// checkFTS5 fails when the binary was built without the sqlite_fts5 tag:
// without it the schema cannot be created and search cannot work.
func checkFTS5(ctx context.Context, db *sql.DB) error {
	var on bool
	if err := db.QueryRowContext(ctx, "SELECT sqlite_compileoption_used('ENABLE_FTS5')").Scan(&on); err != nil {
		return fmt.Errorf("check fts5: %w", err)
	}
	if !on {
		return fmt.Errorf("%w: build switchboard with -tags sqlite_fts5 (GOFLAGS=-tags=sqlite_fts5, as the Makefile does)", ErrNoFTS5)
	}
	return nil
}

// Path is the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close stops the checkpointer, then closes the readers and the writer
// (closing the last connection to the database checkpoints it and removes
// the WAL). The store must not be used after.
func (s *Store) Close() error {
	var errs []error
	if s.ckpt != nil {
		errs = append(errs, s.ckpt.close())
	}
	for _, st := range []*sql.Stmt{s.insertMsg, s.msgSeqByID, s.touchChat, s.insertWorkStmt} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, s.msgRows.close()...)
	errs = append(errs, s.workRows.close()...)
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	return nil
}

// Write runs fn in one write transaction (BEGIN IMMEDIATE) on the writer and
// commits it when fn returns nil; otherwise it rolls back and returns fn's
// error. fn must use only tx: calling other Store write methods from inside
// fn waits forever for the one writer connection that fn holds.
func (s *Store) Write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return writeTx(ctx, s.w, fn)
}

// Read returns the pool of read-only connections. They see the last committed
// state and never wait for the writer.
func (s *Store) Read() *sql.DB { return s.r }

// nowMS is the store clock in unix milliseconds.
func (s *Store) nowMS() int64 { return s.now().UnixMilli() }

// Now is the store's clock: rows are stamped with it and waits stored on
// work (DeferChat, retries) end by it.
func (s *Store) Now() time.Time { return s.now() }

// SetClock replaces the store's clock (default time.Now). Tests that move
// time on instead of sleeping set it once, before the store is shared,
// to the same clock as the gateway's Options.Now.
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Ping checks that the database answers and is writable (a write
// transaction that changes nothing).
func (s *Store) Ping(ctx context.Context) error {
	return writeTx(ctx, s.w, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE revision SET n = n WHERE id = 0`)
		return err
	})
}
