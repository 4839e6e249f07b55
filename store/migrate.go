package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"time"
)

// Migrations live in migrations/NNNN_name.sql, numbered from 0001 without
// gaps. A migration is applied once, in its own transaction, and recorded in
// schema_version; a released migration is never edited, only followed by a
// new one.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// embedded is the set compiled into this binary.
var embedded = loadMigrations(migrationFiles, "migrations")

var migrationName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

type migration struct {
	version int
	name    string // file name
	sql     string
}

// migrationSet is a validated, ordered list of migrations, or the reason the
// files are unusable (reported by Open, caught by the tests).
type migrationSet struct {
	list []migration
	err  error
}

// Migrations is the number of migrations embedded in this binary: the newest
// schema version it knows.
func Migrations() int { return len(embedded.list) }

// loadMigrations reads dir in fsys and checks that the files are numbered
// 1..N without gaps or duplicates.
func loadMigrations(fsys fs.FS, dir string) migrationSet {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return migrationSet{err: fmt.Errorf("read migrations: %w", err)}
	}
	var list []migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if e.IsDir() || m == nil {
			return migrationSet{err: fmt.Errorf("migration %s: name is not NNNN_name.sql", e.Name())}
		}
		v, _ := strconv.Atoi(m[1])
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return migrationSet{err: fmt.Errorf("read migration %s: %w", e.Name(), err)}
		}
		list = append(list, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].version < list[j].version })
	for i, m := range list {
		if m.version != i+1 {
			return migrationSet{err: fmt.Errorf("migration %s: expected version %04d (migrations are numbered from 0001 without gaps or duplicates)", m.name, i+1)}
		}
	}
	return migrationSet{list: list}
}

// migrate brings the database up to the newest migration in migs, one
// transaction per migration. Each step re-reads the version inside its write
// transaction, so two processes opening the same database at once apply each
// migration exactly once.
func migrate(ctx context.Context, db *sql.DB, migs migrationSet, now func() time.Time) error {
	if migs.err != nil {
		return migs.err
	}
	err := writeTx(ctx, db, func(tx *sql.Tx) error { return bootstrap(ctx, tx) })
	if err != nil {
		return err
	}
	latest := len(migs.list)
	for {
		done := false
		err := writeTx(ctx, db, func(tx *sql.Tx) error {
			v, err := schemaVersion(ctx, tx)
			if err != nil {
				return err
			}
			if v > latest {
				return fmt.Errorf("%w: the database is at schema version %d, this switchboard knows versions up to %d; upgrade switchboard to open it",
					ErrSchemaTooNew, v, latest)
			}
			if v == latest {
				done = true
				return nil
			}
			m := migs.list[v]
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			_, err = tx.ExecContext(ctx,
				"INSERT INTO schema_version (version, name, applied_ms) VALUES (?, ?, ?)",
				m.version, m.name, now().UnixMilli())
			if err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}

// bootstrap creates schema_version in a new database, and refuses a database
// that holds someone else's tables.
func bootstrap(ctx context.Context, tx *sql.Tx) error {
	var tables, versioned int
	err := tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE name = 'schema_version')
		FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).Scan(&tables, &versioned)
	if err != nil {
		return fmt.Errorf("read schema: %w", err)
	}
	if versioned == 1 {
		return nil
	}
	if tables > 0 {
		return fmt.Errorf("%w: it has %d tables but no schema_version", ErrNotSwitchboard, tables)
	}
	_, err = tx.ExecContext(ctx, `CREATE TABLE schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_ms INTEGER NOT NULL
	)`)
	if err != nil {
		return fmt.Errorf("create schema_version: %w", err)
	}
	return nil
}

func schemaVersion(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

// SchemaVersion is the number of migrations applied to the database.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	return schemaVersion(ctx, s.r)
}

// writeTx runs fn in one BEGIN IMMEDIATE transaction on db.
func writeTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin write: %w", err)
	}
	if err := fn(tx); err != nil {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, sql.ErrTxDone) {
			// database/sql rolled the transaction back when ctx ended:
			// say so, not "already committed or rolled back".
			return fmt.Errorf("commit: %w (nothing was written)", cerr)
		}
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
