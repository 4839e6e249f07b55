package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
)

// Migration 0020 makes the full-text index again with prefix indexes:
// after the upgrade a prefix query finds the messages stored before it,
// and the triggers keep the new index in step (a message stored after,
// an edit).
func TestFTSPrefixMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	old, err := open(ctx, path, migrationSet{list: embedded.list[:19]})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	store := func(s *Store, id, text string) {
		t.Helper()
		m := Message{ChatJID: "web:lobby", ID: adapters.MessageID(id), Sender: "web:user/ann", Text: text, Time: now, Verb: adapters.VerbMessage}
		if _, err := s.EnqueueMessage(ctx, &m, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		store(old, fmt.Sprint("old", i), fmt.Sprintf("message %d about nothing", i))
	}
	store(old, "o1", "we deployed the release")
	store(old, "o2", "a depth chart")
	old.Close()

	s := openAt(t, path)
	var schema string
	if err := s.r.QueryRow(`SELECT sql FROM sqlite_schema WHERE name = 'messages_fts'`).Scan(&schema); err != nil || !strings.Contains(schema, "prefix = '2 3'") {
		t.Fatalf("messages_fts after the upgrade: %q, %v; want prefix indexes", schema, err)
	}
	store(s, "n1", "deploying again tomorrow")
	if _, err := s.EditMessage(ctx, &Message{ChatJID: "web:lobby", ID: "o2", Sender: "web:user/ann", Text: "a dependency chart"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"dep*", []string{"n1", "o2", "o1"}},
		{"depl*", []string{"n1", "o1"}},
		{"dept*", nil}, // the edit's old text is gone from the index
		{"re*", []string{"o1"}},
		{"message", []string{"old49", "old48", "old47"}},
	} {
		hits, err := s.Search(ctx, c.query, SearchOptions{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, string(h.ID))
		}
		if c.query != "message" {
			slices.Sort(got)
			slices.Sort(c.want)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("search %q: %v, want %v", c.query, got, c.want)
		}
	}
}
