package store

import (
	"context"
	"slices"
	"testing"

	"switchboard/groups"
)

// steeredOf lists, by message ID, whether each item of b is marked steered.
func steeredOf(t *testing.T, s *Store, b Batch) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	for _, it := range b.Items {
		ms, err := s.messagesBySeq(context.Background(), []any{it.Seq})
		if err != nil || len(ms) != 1 {
			t.Fatalf("message of item %+v: %v %v", it, ms, err)
		}
		got[string(ms[0].ID)] = it.Steered
	}
	return got
}

// A message steered into a running turn is stored started under it and
// marked steered, as StartedBatch (a restarted gateway awaiting the turn)
// and NextBatch read it; a turn started on it later (its prompt shows it)
// clears the mark, so that its outcome need not list it.
func TestSteerMessageMarksItsRow(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	enqueue(t, s, msg("web:a", "asked"), trigger("main", "web:a", ""))
	b, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.MarkStarted(ctx, b, "t-1"); err != nil {
		t.Fatal(err)
	}
	inserted, _, err := s.SteerMessage(ctx, msg("web:a", "steered"), trigger("main", "web:a", "")[0], "t-1")
	if err != nil || !inserted {
		t.Fatalf("SteerMessage: inserted %v err %v", inserted, err)
	}
	want := map[string]bool{"asked": false, "steered": true}
	started, ok, err := s.StartedBatch(ctx, "t-1")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := steeredOf(t, s, started); len(got) != 2 || got["asked"] || !got["steered"] {
		t.Errorf("StartedBatch's items steered: %v; want %v", got, want)
	}
	next, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := steeredOf(t, s, next); len(got) != 2 || got["asked"] || !got["steered"] {
		t.Errorf("NextBatch's items steered: %v; want %v", got, want)
	}

	// Put back, the batch runs in a new turn, which shows both messages.
	if err := s.ResetStarted(ctx, started); err != nil {
		t.Fatal(err)
	}
	again, ok, err := s.NextBatch(ctx, "main", 10)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.MarkStarted(ctx, again, "t-2"); err != nil {
		t.Fatal(err)
	}
	rerun, ok, err := s.StartedBatch(ctx, "t-2")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := steeredOf(t, s, rerun); len(got) != 2 || got["asked"] || got["steered"] {
		t.Errorf("items of the turn started on them again, steered: %v; want none", got)
	}
}

// GroupsWithMidTurn lists, by folder, only the groups whose own mid_turn is
// the mode asked for (agentspec gives those the steering agent flags).
func TestGroupsWithMidTurn(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	for f, mode := range map[string]string{"b": "steer", "a": "steer", "c": "queue", "d": ""} {
		if err := s.AddGroup(ctx, groups.Folder(f)); err != nil {
			t.Fatal(err)
		}
		if err := s.SetGroupMidTurn(ctx, groups.Folder(f), mode); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GroupsWithMidTurn(ctx, "steer")
	if err != nil {
		t.Fatal(err)
	}
	if want := []groups.Folder{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("GroupsWithMidTurn(steer) = %v, want %v", got, want)
	}
}
