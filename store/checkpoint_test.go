package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"switchboard/groups"
)

// The writer leaves checkpoints to the checkpointer below walMaxFrames,
// also on a connection database/sql opens again.
func TestWriterDoesNotCheckpointOnCommit(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	for range 2 {
		var frames, limit int64
		if err := s.w.QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&frames); err != nil {
			t.Fatal(err)
		}
		if err := s.w.QueryRowContext(ctx, "PRAGMA journal_size_limit").Scan(&limit); err != nil {
			t.Fatal(err)
		}
		if frames != walMaxFrames || limit != walSizeLimit {
			t.Errorf("writer: wal_autocheckpoint %d, journal_size_limit %d; want %d and 64 MiB", frames, limit, walMaxFrames)
		}
		// Make database/sql open a new writer connection.
		s.w.SetMaxIdleConns(0)
		s.w.SetMaxIdleConns(1)
	}
	for i := range 50 {
		if err := s.AddGroup(ctx, groups.Folder(fmt.Sprintf("g%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	frames, copied, err := s.ckpt.checkpoint(ctx)
	if err != nil || frames < 50 || copied != frames {
		t.Errorf("checkpoint after 50 commits: %d frames, %d copied, %v; want all of 50 or more copied", frames, copied, err)
	}
}

// The checkpointer neither waits for nor blocks a reader holding a snapshot
// or a write transaction in progress: it copies what it can and returns.
func TestCheckpointNeverWaits(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.AddGroup(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	rtx, err := s.Read().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rtx.Rollback()
	var n int
	if err := rtx.QueryRowContext(ctx, "SELECT count(*) FROM groups").Scan(&n); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	if err := s.AddGroup(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	writeDone := make(chan error, 1)
	go func() {
		writeDone <- s.Write(ctx, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO groups (folder, created_ms) VALUES ('during', 0)`); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	frames, copied, err := s.ckpt.checkpoint(ctx)
	if err != nil || copied >= frames {
		t.Errorf("checkpoint behind a reader: %d frames, %d copied, %v; want the frames after its snapshot left", frames, copied, err)
	}
	close(release)
	if err := <-writeDone; err != nil {
		t.Fatal(err)
	}
	if err := rtx.QueryRowContext(ctx, "SELECT count(*) FROM groups").Scan(&n); err != nil || n != 1 {
		t.Errorf("the reader's snapshot changed: %d groups, %v", n, err)
	}
	rtx.Rollback()
	if frames, copied, err := s.ckpt.checkpoint(ctx); err != nil || copied != frames {
		t.Errorf("checkpoint once the reader is done: %d frames, %d copied, %v; want all copied", frames, copied, err)
	}
}

// Close stops the checkpointer, and closing the last connection folds the
// WAL into the database and removes it.
func TestCloseRemovesWAL(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Fatalf("no WAL while open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WAL after Close: %v, want it removed", err)
	}
	s = openAt(t, path)
	if ok, err := s.GroupExists(ctx, "main"); err != nil || !ok {
		t.Errorf("group lost across Close: %v %v", ok, err)
	}
}

// The CLI opens and closes the database while the gateway has it open and
// its checkpointer runs: no open may fail with "database is locked".
func TestOpenWhileAnotherStoreCheckpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: waits for two checkpoint ticks (2.5 s)")
	}
	path := filepath.Join(t.TempDir(), "switchboard.db")
	gw := openAt(t, path)
	ctx := context.Background()
	deadline := time.Now().Add(2500 * time.Millisecond) // spans two checkpoint ticks
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				if err := gw.AddGroup(ctx, groups.Folder(fmt.Sprintf("g%d-%d", w, i))); err != nil {
					errs <- err
					return
				}
				s, err := Open(ctx, path)
				if err != nil {
					errs <- err
					return
				}
				if _, err := s.Groups(ctx); err != nil {
					errs <- err
				}
				if err := s.Close(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
