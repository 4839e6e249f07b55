package store

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
	"switchboard/scheduler"
)

func TestGroups(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if gs, err := s.Groups(ctx); err != nil || len(gs) != 0 || gs == nil {
		t.Fatalf("Groups of a new store = %#v, %v; want empty", gs, err)
	}
	for _, f := range []groups.Folder{"main", "acme/eng", "acme", "root"} {
		if err := s.AddGroup(ctx, f); err != nil {
			t.Fatalf("AddGroup %s: %v", f, err)
		}
	}
	if err := s.AddGroup(ctx, "main"); !errors.Is(err, ErrExists) {
		t.Errorf("second AddGroup = %v, want ErrExists", err)
	}
	created, err := s.EnsureGroup(ctx, "main")
	if err != nil || created {
		t.Errorf("EnsureGroup existing = %v, %v; want false", created, err)
	}
	created, err = s.EnsureGroup(ctx, "side")
	if err != nil || !created {
		t.Errorf("EnsureGroup new = %v, %v; want true", created, err)
	}
	gs, _ := s.Groups(ctx)
	if want := []groups.Folder{"acme", "acme/eng", "main", "root", "side"}; !reflect.DeepEqual(gs, want) {
		t.Errorf("Groups = %v, want %v", gs, want)
	}
	if ok, _ := s.GroupExists(ctx, "acme/eng"); !ok {
		t.Error("GroupExists(acme/eng) = false")
	}

	if err := s.SetGrantOverrides(ctx, "main", []string{"send", "!like"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetGrantOverrides(ctx, "acme", []string{"like"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddRoute(ctx, routing.Route{Match: map[string]string{"platform": "web"}, Target: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.GroupExists(ctx, "main"); ok {
		t.Error("main still exists after RemoveGroup")
	}
	if rules, _ := s.GrantOverrides(ctx, "main"); len(rules) != 0 {
		t.Errorf("RemoveGroup left grant overrides %v", rules)
	}
	if rules, _ := s.GrantOverrides(ctx, "acme"); !reflect.DeepEqual(rules, []string{"like"}) {
		t.Errorf("RemoveGroup touched another folder's overrides: %v", rules)
	}
	if rs, _ := s.ListRoutes(ctx); len(rs) != 1 {
		t.Errorf("RemoveGroup deleted routes to it: %+v", rs)
	}
	if _, err := s.RemoveGroup(ctx, "main"); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveGroup missing = %v, want ErrNotFound", err)
	}
}

func TestGrantOverrides(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if rules, err := s.GrantOverrides(ctx, "main"); err != nil || len(rules) != 0 {
		t.Fatalf("GrantOverrides of unknown folder = %v, %v", rules, err)
	}
	steps := []struct {
		folder groups.Folder
		rules  []string
	}{
		{"main", []string{"send", "!send(jid=slack:*)", "like"}},
		{"acme/eng", []string{"schedule_*"}},
		{"main", []string{"!like", "reply"}}, // replaces, shorter
		{"acme/eng", nil},                    // clears
		{"root", []string{"z", "a", "m"}},    // keeps the given order
	}
	for _, st := range steps {
		if err := s.SetGrantOverrides(ctx, st.folder, st.rules); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GrantOverrides(ctx, st.folder)
		if len(got) != len(st.rules) || (len(got) > 0 && !reflect.DeepEqual(got, st.rules)) {
			t.Errorf("after set %s %v: %v", st.folder, st.rules, got)
		}
	}
	all, err := s.AllGrantOverrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[groups.Folder][]string{"main": {"!like", "reply"}, "root": {"z", "a", "m"}}
	if !reflect.DeepEqual(all, want) {
		t.Errorf("AllGrantOverrides = %v, want %v", all, want)
	}
}

func TestRevision(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var routeID int64
	steps := []struct {
		name string
		do   func() error
		bump bool
	}{
		{"insert message", func() error { _, err := s.InsertMessage(ctx, &Message{ChatJID: "web:a", ID: "1"}); return err }, false},
		{"insert batch", func() error {
			_, err := s.InsertMessages(ctx, []*Message{{ChatJID: "web:a", ID: "2"}, {ChatJID: "web:b", ID: "2"}})
			return err
		}, false},
		{"upsert chat", func() error { return s.UpsertChat(ctx, Chat{JID: "web:a", Name: "A"}) }, false},
		{"add group", func() error { return s.AddGroup(ctx, "main") }, true},
		{"ensure existing group", func() error { _, err := s.EnsureGroup(ctx, "main"); return err }, false},
		{"ensure new group", func() error { _, err := s.EnsureGroup(ctx, "side"); return err }, true},
		{"add route", func() error {
			r, err := s.AddRoute(ctx, routing.Route{Target: "main"})
			routeID = r.ID
			return err
		}, true},
		{"delete route", func() error { _, err := s.DeleteRoute(ctx, routeID); return err }, true},
		{"replace routes", func() error { _, err := s.ReplaceRoutes(ctx, []routing.Route{{Target: "main"}}); return err }, true},
		{"first seed", func() error { _, err := s.SeedRoutes(ctx, []routing.Route{{Target: "main"}}); return err }, true},
		{"seed again", func() error { _, err := s.SeedRoutes(ctx, []routing.Route{{Target: "x"}}); return err }, false},
		{"set grants", func() error { return s.SetGrantOverrides(ctx, "main", []string{"send"}) }, true},
		{"set same grants", func() error { return s.SetGrantOverrides(ctx, "main", []string{"send"}) }, false},
		{"clear grants", func() error { return s.SetGrantOverrides(ctx, "main", nil) }, true},
		{"remove group", func() error { _, err := s.RemoveGroup(ctx, "side"); return err }, true},
		{"failed remove", func() error { _, _ = s.RemoveGroup(ctx, "side"); return nil }, false},
		{"search", func() error { _, err := s.Search(ctx, "x", SearchOptions{}); return err }, false},
	}
	prev, err := s.Revision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		rev, err := s.Revision(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if bumped := rev != prev; bumped != st.bump {
			t.Errorf("%s: revision %d -> %d, want bump=%v", st.name, prev, rev, st.bump)
		}
		if rev < prev {
			t.Errorf("%s: revision went back from %d to %d", st.name, prev, rev)
		}
		prev = rev
	}
}

// TestRevisionSeenByAnotherProcess: the CLI and the gateway open the same
// file; a change made through one handle moves the revision the other polls.
func TestRevisionSeenByAnotherProcess(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/switchboard.db"
	gateway := openAt(t, path)
	cli := openAt(t, path)
	before, _ := gateway.Revision(ctx)
	if _, err := cli.AddRoute(ctx, routing.Route{Match: map[string]string{"platform": "web"}, Target: "main"}); err != nil {
		t.Fatal(err)
	}
	after, _ := gateway.Revision(ctx)
	if after == before {
		t.Fatalf("revision did not move for the other handle (%d)", after)
	}
	rs, _ := gateway.ListRoutes(ctx)
	if len(rs) != 1 {
		t.Errorf("gateway sees %d routes, want 1", len(rs))
	}
}

// TestEnsureGroups: the config's groups are created in one call, the ones
// that exist are left alone, and only the new ones are reported.
func TestEnsureGroups(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.EnsureGroup(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	created, err := s.EnsureGroups(ctx, []groups.Folder{"root", "main", "acme", "acme/eng"})
	if err != nil || !slices.Equal(created, []groups.Folder{"root", "acme", "acme/eng"}) {
		t.Errorf("EnsureGroups = %v, %v; want root, acme, acme/eng created", created, err)
	}
	if all, err := s.Groups(ctx); err != nil || len(all) != 4 {
		t.Errorf("Groups = %v, %v; want 4", all, err)
	}
	if created, err := s.EnsureGroups(ctx, []groups.Folder{"root", "main"}); err != nil || len(created) != 0 {
		t.Errorf("EnsureGroups again = %v, %v; want none created", created, err)
	}
}

// Removing a group drops the work queued for it that no turn has taken:
// its agent never runs again (CONTRACT §11 group rm). The messages stay
// stored, a queued task run is recorded skipped with the reason, a batch a
// running turn holds is left to it, and other folders' work is untouched.
func TestRemoveGroupDropsItsQueuedWork(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	for _, f := range []groups.Folder{"main", "side"} {
		if err := s.AddGroup(ctx, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EnqueueMessage(ctx, msg("web:side", "running"), trigger("side", "web:side", "")); err != nil {
		t.Fatal(err)
	}
	running, ok, err := s.NextBatch(ctx, "side", 10)
	if err != nil || !ok {
		t.Fatalf("NextBatch = %v %v", ok, err)
	}
	if err := s.MarkStarted(ctx, running, "t1"); err != nil {
		t.Fatal(err)
	}
	for i, m := range []*Message{msg("web:side", "queued"), msg("web:side", "context"), msg("web:main", "other")} {
		work := [][]WorkItem{trigger("side", "web:side", "t"), observe("side", "web:side", ""), trigger("main", "web:main", "")}[i]
		if _, err := s.EnqueueMessage(ctx, m, work); err != nil {
			t.Fatal(err)
		}
	}
	next := time.Date(2027, 1, 1, 9, 0, 0, 0, time.UTC)
	task, err := s.AddTask(ctx, scheduler.Task{Folder: "side", ChatJID: "web:side", Prompt: "p", Spec: "@daily", Kind: scheduler.KindCron,
		Timezone: "UTC", Context: "group", Missed: scheduler.MissedSkip, Status: scheduler.StatusActive, Next: next})
	if err != nil {
		t.Fatal(err)
	}
	runIDs, errs, err := s.ClaimAndQueue(ctx, []scheduler.Claim{{Advance: scheduler.Advance{TaskID: task.ID, From: next, Next: next.Add(24 * time.Hour), HasNext: true}, Slot: next}})
	if err != nil || errs[0] != nil {
		t.Fatalf("ClaimAndQueue = %v %v", errs, err)
	}

	dropped, err := s.RemoveGroup(ctx, "side")
	if err != nil || dropped != 3 {
		t.Fatalf("RemoveGroup = %d, %v; want the 3 items no turn had taken (a message, its context, a task turn)", dropped, err)
	}
	if b, ok, err := s.NextBatch(ctx, "side", 10); err != nil || !ok || len(b.Items) != 1 || b.Items[0].ID != running.Items[0].ID {
		t.Errorf("NextBatch of the removed group = %+v %v %v; want only the running turn's batch", b, ok, err)
	}
	runs, _ := s.TaskRuns(ctx, task.ID, 10)
	if len(runs) != 1 || runs[0].ID != runIDs[0] || runs[0].Status != RunSkipped || !strings.Contains(runs[0].Error, "removed") {
		t.Errorf("task runs %+v; want run %d skipped, saying the group was removed", runs, runIDs[0])
	}
	for _, id := range []string{"running", "queued", "context"} {
		if _, err := s.MessageByID(ctx, "web:side", adapters.MessageID(id)); err != nil {
			t.Errorf("message %s: %v; messages stay stored", id, err)
		}
	}
	// The running turn's batch is still its own to finish.
	if err := s.FinishBatch(ctx, running, Turn{ID: "t1", Folder: "side", ChatJID: "web:side", Status: "succeeded"}, nil, time.Time{}); err != nil {
		t.Errorf("finishing the running turn: %v", err)
	}
	if b, ok, err := s.NextBatch(ctx, "side", 10); err != nil || ok {
		t.Errorf("NextBatch of the removed group = %+v %v %v; want nothing to run", b, ok, err)
	}
	if folders, _ := s.PendingFolders(ctx); !slices.Equal(folders, []groups.Folder{"main"}) {
		t.Errorf("pending folders %v; want only main", folders)
	}
}
