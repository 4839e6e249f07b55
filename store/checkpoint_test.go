package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
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
		if err := s.AddGroup(ctx, fmt.Sprintf("g%d", i)); err != nil {
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
