package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/groups"
	"switchboard/scheduler"
)

// Status counts what the store holds: trigger work per folder (observed
// context is not queued work), running batches, the outbox by state, the
// next active tasks in order and the failed turns, newest first.
func TestStatusReadsWhatHappened(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for _, f := range []groups.Folder{"main", "ops"} {
		if _, err := s.EnsureGroup(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:a", "2"), trigger("main", "web:a", ""))
	enqueue(t, s, msg("web:b", "1"), trigger("ops", "web:b", ""))
	enqueue(t, s, msg("web:c", "1"), observe("ops", "web:c", ""))

	// web:b's batch starts, then fails for good.
	b, ok, err := s.NextBatch(ctx, "ops", 10)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.MarkStarted(ctx, b, "t-1"); err != nil {
		t.Fatal(err)
	}
	st, err := s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Running) != 1 || st.Running[0].Folder != "ops" || st.Running[0].ChatJID != "web:b" {
		t.Errorf("running %+v; want ops web:b", st.Running)
	}
	turn := Turn{ID: "t-fail", Folder: "ops", ChatJID: "web:b", Trigger: "message", Attempt: 3, Status: "failed", Error: "exit status 3"}
	if err := s.FinishBatch(ctx, b, turn, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}

	a1 := addOutbox(t, s, "o1", "web:a", "main", "")
	addOutbox(t, s, "o2", "web:a", "main", "")
	if err := s.OutboxFailed(ctx, a1.ID, "chat not found"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Second)
	for i, spec := range []string{"@daily", "@hourly"} {
		next := now.Add(time.Duration(2-i) * time.Hour)
		if _, err := s.AddTask(ctx, scheduler.Task{Folder: "main", ChatJID: "web:a", Prompt: "p", Spec: spec, Kind: scheduler.KindCron,
			Timezone: []string{"UTC", "Europe/Berlin"}[i], Context: "group", Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: next}); err != nil {
			t.Fatal(err)
		}
	}

	st, err = s.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(st.Waiting) != "map[main:2]" {
		t.Errorf("queue %v; want main:2 (ops' failed batch dropped, observed context not counted)", st.Waiting)
	}
	if len(st.Running) != 0 {
		t.Errorf("running after the turn finished: %+v", st.Running)
	}
	if st.OutboxPending != 1 || st.OutboxFailed != 1 {
		t.Errorf("outbox %d pending %d failed; want 1 and 1", st.OutboxPending, st.OutboxFailed)
	}
	if len(st.NextTasks) != 2 || st.NextTasks[0].Spec != "@hourly" || !st.NextTasks[0].Next.Equal(now.Add(time.Hour)) ||
		st.NextTasks[0].Timezone != "Europe/Berlin" {
		t.Errorf("next tasks %+v; want @hourly (in 1h, Europe/Berlin) first", st.NextTasks)
	}
	if len(st.FailedTurns) != 1 || st.FailedTurns[0].ID != "t-fail" || st.FailedTurns[0].Error != "exit status 3" {
		t.Errorf("failed turns %+v", st.FailedTurns)
	}
	if st.DBBytes <= 0 {
		t.Errorf("db size %d", st.DBBytes)
	}
}

// A backup refuses a target that exists (leaving it as it was) or cannot
// be created, leaves nothing behind, and never changes the database.
func TestBackupRefusesBadTargets(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	enqueue(t, s, msg("web:a", "1"), trigger("main", "web:a", ""))
	dir := t.TempDir()
	existing := filepath.Join(dir, "exists.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	seq, _ := s.LastSeq(ctx)
	for _, tc := range []struct{ name, path, want string }{
		{"exists", existing, "already exists"},
		{"empty file exists", filepath.Join(dir, "empty.db"), "already exists"},
		{"no directory", filepath.Join(dir, "missing", "b.db"), "does the directory exist"},
		{"parent is a file", filepath.Join(notDir, "b.db"), "does the directory exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "empty file exists" {
				if err := os.WriteFile(tc.path, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := s.Backup(ctx, tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Backup(%s) = %v; want an error saying %q", tc.path, err, tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the existing target was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("a refused backup created a directory")
	}
	if got, _ := s.LastSeq(ctx); got != seq {
		t.Errorf("last seq %d after refused backups; was %d", got, seq)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("the database is not writable after refused backups: %v", err)
	}
}

// A backup taken while writers commit holds every message committed before
// it began, opens as a store at the same schema version, and is private.
func TestBackupDuringWrites(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var committed atomic.Int64 // messages whose EnqueueMessage returned
	stop, under := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.EnqueueMessage(ctx, msg(fmt.Sprintf("web:w%d", w), fmt.Sprint(i)), nil); err != nil {
					t.Error(err)
					return
				}
				if committed.Add(1) == 200 {
					once.Do(func() { close(under) })
				}
			}
		})
	}
	select {
	case <-under:
	case <-time.After(20 * time.Second):
		t.Fatal("the writers did not commit 200 messages")
	}
	before := committed.Load()
	path := filepath.Join(t.TempDir(), "copy.db")
	err := s.Backup(ctx, path)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v; want mode 0600", fi, err)
	}
	c := openAt(t, path)
	var n int64
	if err := c.Read().QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < before {
		t.Errorf("the backup holds %d messages; %d were committed before it began", n, before)
	}
	v1, _ := s.SchemaVersion(ctx)
	v2, _ := c.SchemaVersion(ctx)
	if v1 != v2 || v1 != Migrations() {
		t.Errorf("schema versions: database %d, backup %d, binary %d", v1, v2, Migrations())
	}
}
