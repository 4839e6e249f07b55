package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
)

// Status is what `switchboard status` shows, read from the database alone so
// that it works whether or not the gateway runs.
type Status struct {
	Waiting       map[groups.Folder]int // trigger work items (messages, prompts) waiting per folder
	Running       []RunningTurn         // batches whose turn has started and not finished
	OutboxPending int
	OutboxFailed  int
	NextTasks     []NextTask
	FailedTurns   []Turn // the most recent failed turns, newest first
	// FailedDeliveries are the outbox items given up on most recently,
	// newest first: which chat, and why.
	FailedDeliveries []FailedDelivery
	DBBytes          int64 // database file plus its WAL
}

// RunningTurn is a batch whose turn is running (or was, when the gateway died).
type RunningTurn struct {
	Folder  groups.Folder
	ChatJID adapters.JID
	Started time.Time
}

// FailedDelivery is an outbox item given up on for good.
type FailedDelivery struct {
	ID      int64
	Folder  groups.Folder // the sender; "" for the operator
	ChatJID adapters.JID
	Error   string
	Failed  time.Time
}

// NextTask is a task and when it next fires.
type NextTask struct {
	ID       int64
	Folder   groups.Folder
	Spec     string
	Timezone string // the task's IANA zone, which its schedule is evaluated in
	Next     time.Time
}

// Status reads the queue, running turns, outbox, next tasks and recent
// failures.
func (s *Store) Status(ctx context.Context) (Status, error) {
	st := Status{Waiting: map[groups.Folder]int{}}
	q := func(query string, scan func(scanner) error) error {
		rows, err := s.r.QueryContext(ctx, query)
		return each(rows, err, scan)
	}
	err := errors.Join(
		// Messages, not rows: a row may stand for a run (workRowItems).
		q(`SELECT folder, sum(`+workRowItems+`) FROM work w WHERE mode = 'trigger' GROUP BY folder ORDER BY folder`, func(r scanner) error {
			var f groups.Folder
			var n int
			err := r.Scan(&f, &n)
			st.Waiting[f] = n
			return err
		}),
		q(`SELECT folder, chat_jid, max(started_ms) FROM work WHERE started_ms > 0 GROUP BY folder, chat_jid, topic ORDER BY folder`, func(r scanner) error {
			var t RunningTurn
			err := r.Scan(&t.Folder, &t.ChatJID, msTime(&t.Started))
			st.Running = append(st.Running, t)
			return err
		}),
		// Two ranges of outbox_due, not a scan of every reply ever sent.
		q(`SELECT (SELECT count(*) FROM outbox WHERE status IN ('pending', 'sending')), (SELECT count(*) FROM outbox WHERE status = 'failed')`, func(r scanner) error {
			return r.Scan(&st.OutboxPending, &st.OutboxFailed)
		}),
		q(`SELECT id, folder, spec, timezone, next_s FROM tasks WHERE status = 'active' AND next_s > 0 ORDER BY next_s LIMIT 5`, func(r scanner) error {
			var t NextTask
			var next int64
			err := r.Scan(&t.ID, &t.Folder, &t.Spec, &t.Timezone, &next)
			t.Next = time.Unix(next, 0)
			st.NextTasks = append(st.NextTasks, t)
			return err
		}),
		q(`SELECT id, folder, chat_jid, trigger, attempt, started_ms, duration_ms, error FROM turns WHERE status = 'failed'
			ORDER BY started_ms DESC LIMIT 5`, func(r scanner) error {
			var t Turn
			err := r.Scan(&t.ID, &t.Folder, &t.ChatJID, &t.Trigger, &t.Attempt, msTime(&t.Started), msDuration(&t.Duration), &t.Error)
			t.Status = TurnFailed
			st.FailedTurns = append(st.FailedTurns, t)
			return err
		}),
		// Failed rows are few: the outbox_due range, then a sort.
		q(`SELECT id, folder, chat_jid, error, done_ms FROM outbox WHERE status = 'failed' ORDER BY done_ms DESC, id DESC LIMIT 5`, func(r scanner) error {
			var d FailedDelivery
			err := r.Scan(&d.ID, &d.Folder, &d.ChatJID, &d.Error, msTime(&d.Failed))
			st.FailedDeliveries = append(st.FailedDeliveries, d)
			return err
		}),
	)
	if err != nil {
		return st, fmt.Errorf("read status: %w", err)
	}
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			st.DBBytes += fi.Size()
		}
	}
	return st, nil
}

// Backup writes a consistent copy of the database to path (VACUUM INTO,
// safe while the gateway writes) and checks the copy: it opens, passes
// SQLite's integrity check and has this database's schema version. path must
// not exist: it is created exclusively (mode 0600, so the copy is never
// readable by others, and two backups never write one file). On any failure
// nothing is left there and the database is untouched: the copy is read
// through a read-only connection.
func (s *Store) Backup(ctx context.Context, path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("backup: %s already exists; choose a new file name", abs)
	case err != nil:
		return fmt.Errorf("backup: create %s: %w (does the directory exist and is it writable?)", abs, err)
	}
	f.Close()
	if err := s.backupInto(ctx, abs); err != nil {
		os.Remove(abs)
		return fmt.Errorf("backup to %s: %w", abs, err)
	}
	return nil
}

func (s *Store) backupInto(ctx context.Context, abs string) error {
	// VACUUM INTO accepts an empty file: the one just created.
	if _, err := s.r.ExecContext(ctx, `VACUUM INTO ?`, abs); err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	want, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if err := verifyCopy(ctx, abs, want); err != nil {
		return fmt.Errorf("the copy does not verify: %w", err)
	}
	return nil
}

// verifyCopy opens the copy read-only and checks its integrity and schema.
func verifyCopy(ctx context.Context, path string, schema int) error {
	db, err := sql.Open("sqlite3", dsn(path, readerParams))
	if err != nil {
		return err
	}
	defer db.Close()
	var ok string
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil {
		return err
	}
	if ok != "ok" {
		return fmt.Errorf("integrity check: %s", ok)
	}
	v, err := schemaVersion(ctx, db)
	if err != nil {
		return err
	}
	if v != schema {
		return fmt.Errorf("schema version %d, the database has %d", v, schema)
	}
	return nil
}
