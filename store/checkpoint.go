package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"
)

// WAL checkpoints run off the commit path. By default SQLite checkpoints on
// the connection that commits, once the WAL passes 1000 pages: that commit
// then copies the WAL into the database and syncs both files before it
// returns, and every write queued behind the one writer connection waits
// too (a burst of scheduled tasks fell due hundreds of milliseconds late
// this way). Instead, a goroutine of the Store checkpoints every
// checkpointEvery, on a connection of its own, in PASSIVE mode: it copies
// what it can and never waits for, or blocks, a reader or the writer.
//
// Once a checkpoint has caught up, the writer's next transaction starts the
// WAL over from its beginning, so the WAL holds about a second of writes.
// The writer still checkpoints itself, as a safety net, past walMaxFrames
// (wal_autocheckpoint): only a flood of writes (thousands of transactions a
// second, as when a script adds tasks one by one) or a reader that holds
// one snapshot for long gets there. The WAL file is cut back to 64 MiB
// (journal_size_limit) when it starts over, and closing the last connection
// to the database checkpoints it and deletes the WAL.
const (
	checkpointEvery = time.Second
	walMaxFrames    = 8192     // 32 MiB of 4 KiB pages
	walSizeLimit    = 64 << 20 // bytes

	// A PASSIVE checkpoint never calls the busy handler, so the timeout
	// only lets the connection open while another process is running WAL
	// recovery or closing the database (with 0 that open failed at once
	// with "database is locked").
	checkpointerParams = "_busy_timeout=10000&_synchronous=NORMAL"
)

// writerConnector opens the writer's connections with the pragmas a DSN
// cannot carry, so that a connection database/sql opens again has them too.
type writerConnector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

// newWriterConnector makes the writer's connector; once memJournals is
// set, its connections keep statement journals in memory (memoryJournals).
func newWriterConnector(dsn string, memJournals *atomic.Bool) writerConnector {
	pragmas := fmt.Sprintf("PRAGMA wal_autocheckpoint = %d; PRAGMA journal_size_limit = %d", walMaxFrames, walSizeLimit)
	return writerConnector{dsn: dsn, drv: &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		p := pragmas
		if memJournals.Load() {
			p += "; " + memoryJournals
		}
		if _, err := c.Exec(p, nil); err != nil {
			return fmt.Errorf("set writer pragmas: %w", err)
		}
		return nil
	}}}
}

// memoryJournals keeps the writer's statement journals in memory. Inside
// a transaction, SQLite keeps the pages a statement changes in a statement
// journal when the statement may fail halfway (an INSERT into messages
// does: its full-text index's trigger writes a second table), and spills
// the journal into a temporary file past 64 KiB: EnqueueMessages' inserts
// of many rows opened, wrote and deleted a file each (a quarter of a
// group commit's time). In memory a journal takes as much as the pages its
// statement changed; the largest a running gateway writes in one statement
// is a table such as routes (a few MB at 100,000). Migrations run before
// it is set: they may rewrite whole tables in one statement.
const memoryJournals = "PRAGMA temp_store = MEMORY"

func (c writerConnector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c writerConnector) Driver() driver.Driver                        { return c.drv }

// checkpointer checkpoints the WAL in the background until close.
type checkpointer struct {
	db   *sql.DB // its own connection
	stop context.CancelFunc
	done chan struct{}
}

// startCheckpointer starts the checkpointer's goroutine, which runs until
// close (ctx's cancellation does not stop it). Its connection opens at the
// first checkpoint, so a short-lived store (a CLI command) never opens it.
func startCheckpointer(ctx context.Context, abs string) (*checkpointer, error) {
	db, err := sql.Open("sqlite3", dsn(abs, checkpointerParams))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &checkpointer{db: db, stop: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c, nil
}

func (c *checkpointer) run(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// An error is not reported: a busy database (another process
		// checkpointing) clears by the next tick, and a fault that lasts
		// fails the writes too, which report it.
		c.checkpoint(ctx)
	}
}

// checkpoint runs PRAGMA wal_checkpoint(PASSIVE) and returns the frames in
// the WAL and how many of them are in the database.
func (c *checkpointer) checkpoint(ctx context.Context) (frames, copied int, err error) {
	var busy int
	if err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied); err != nil {
		return 0, 0, fmt.Errorf("checkpoint: %w", err)
	}
	return frames, copied, nil
}

// close stops the goroutine, then closes its connection.
func (c *checkpointer) close() error {
	c.stop()
	<-c.done
	return c.db.Close()
}
