package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
)

// searchFixture stores a small corpus and returns the messages by id.
func searchFixture(t *testing.T) (*Store, map[string]*Message) {
	t.Helper()
	s := newStore(t)
	ms := []*Message{
		{ChatJID: "slack:T1/channel/C1", ID: "dense", Sender: "slack:T1/user/ann", Time: time.UnixMilli(1000),
			Text: "deploy deploy deploy: the deploy pipeline"},
		{ChatJID: "slack:T1/channel/C1", ID: "sparse", Sender: "slack:T1/user/bob", Time: time.UnixMilli(2000),
			Text: "we will probably deploy later today, after lunch, once the whole team is back from the offsite meeting"},
		{ChatJID: "telegram:group/9", ID: "tg", Sender: "telegram:user/5", Time: time.UnixMilli(3000),
			Text: "Café déploiement: deploy the café build"},
		{ChatJID: "web:lobby", ID: "web", Sender: "web:user/ann", Time: time.UnixMilli(4000),
			Text: "nothing relevant here, just lunch plans"},
	}
	n, err := s.InsertMessages(context.Background(), ms)
	if err != nil || n != len(ms) {
		t.Fatalf("InsertMessages = %d, %v", n, err)
	}
	byID := map[string]*Message{}
	for _, m := range ms {
		byID[string(m.ID)] = m
	}
	return s, byID
}

func hitIDs(hs []Hit) []string {
	out := []string{}
	for _, h := range hs {
		out = append(out, string(h.ID))
	}
	return out
}

func TestSearchRankingAndSnippet(t *testing.T) {
	s, _ := searchFixture(t)
	hits, err := s.Search(context.Background(), "deploy", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); len(got) != 3 || got[0] != "dense" || got[2] != "sparse" {
		t.Fatalf("hits = %v, want dense first and the long sparse message last", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Rank < hits[i-1].Rank {
			t.Errorf("hit %d rank %v better than hit %d rank %v", i, hits[i].Rank, i-1, hits[i-1].Rank)
		}
	}
	if !strings.Contains(hits[0].Snippet, "[deploy]") {
		t.Errorf("snippet %q lacks [deploy]", hits[0].Snippet)
	}
	if hits[0].Text != "deploy deploy deploy: the deploy pipeline" || hits[0].Seq == 0 || hits[0].Sender == "" {
		t.Errorf("hit message not filled: %+v", hits[0].Message)
	}
	long := hits[2].Snippet
	if !strings.Contains(long, "[deploy]") || !strings.Contains(long, "…") {
		t.Errorf("snippet of a long message = %q, want [deploy] and an ellipsis", long)
	}
}

func TestSearchSyntax(t *testing.T) {
	s, _ := searchFixture(t)
	tests := []struct {
		query string
		want  []string
	}{
		{"cafe", []string{"tg"}}, // diacritics folded
		{"DEPLOY pipeline", []string{"dense"}},
		{`"deploy later"`, []string{"sparse"}},
		{"lunch NOT deploy", []string{"web"}},
		{"pipe*", []string{"dense"}},
		{"nomatchanywhere", []string{}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			hits, err := s.Search(context.Background(), tc.query, SearchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := hitIDs(hits); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("hits = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSearchFilters(t *testing.T) {
	s, _ := searchFixture(t)
	tests := []struct {
		name     string
		query    string
		o        SearchOptions
		want     []string
		anyOrder bool // bm25 across different documents decides the order
	}{
		{"nil chats: all", "deploy OR lunch", SearchOptions{}, []string{"dense", "tg", "web", "sparse"}, true},
		{"empty chats: none", "deploy", SearchOptions{ChatJIDs: []adapters.JID{}}, []string{}, false},
		{"one chat", "deploy", SearchOptions{ChatJIDs: []adapters.JID{"telegram:group/9"}}, []string{"tg"}, false},
		{"two chats", "deploy OR lunch", SearchOptions{ChatJIDs: []adapters.JID{"web:lobby", "telegram:group/9"}}, []string{"tg", "web"}, true},
		{"unknown chat", "deploy", SearchOptions{ChatJIDs: []adapters.JID{"web:nope"}}, []string{}, false},
		{"sender", "deploy OR lunch", SearchOptions{Sender: "web:user/ann"}, []string{"web"}, false},
		{"sender is exact", "deploy", SearchOptions{Sender: "slack:T1/user/an"}, []string{}, false},
		{"since", "deploy", SearchOptions{Since: time.UnixMilli(2000)}, []string{"tg", "sparse"}, false},
		{"since excludes all", "deploy", SearchOptions{Since: time.UnixMilli(5000)}, []string{}, false},
		{"limit", "deploy", SearchOptions{Limit: 1}, []string{"dense"}, false},
		{"all filters", "deploy", SearchOptions{ChatJIDs: []adapters.JID{"slack:T1/channel/C1"}, Sender: "slack:T1/user/bob", Since: time.UnixMilli(1500)}, []string{"sparse"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.Search(context.Background(), tc.query, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			got := hitIDs(hits)
			if tc.anyOrder {
				if !sameSet(got, tc.want) {
					t.Errorf("hits = %v, want %v in any order", got, tc.want)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("hits = %v, want %v", got, tc.want)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestSearchLimitIsCapped(t *testing.T) {
	s := newStore(t)
	var ms []*Message
	for i := range MaxSearchLimit + 50 {
		ms = append(ms, &Message{ChatJID: "web:a", ID: adapters.MessageID(fmt.Sprint(i)), Text: "common word"})
	}
	if _, err := s.InsertMessages(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ limit, want int }{{0, DefaultSearchLimit}, {10_000, MaxSearchLimit}, {7, 7}} {
		hits, err := s.Search(context.Background(), "common", SearchOptions{Limit: tc.limit})
		if err != nil || len(hits) != tc.want {
			t.Errorf("limit %d: %d hits, %v; want %d", tc.limit, len(hits), err, tc.want)
		}
	}
}

func TestSearchBadQuery(t *testing.T) {
	s, _ := searchFixture(t)
	tests := []struct {
		query string
		cause string // part of sqlite's complaint
	}{
		{"deploy AND", "syntax error"},
		{`"unterminated`, "unterminated string"},
		{"(deploy", "syntax error"},
		{"nosuchcol:deploy", "no such column"},
		// Plain text with punctuation: the error says how to search
		// for it as written.
		{"hello-world", `no such column: world (the query is FTS5 syntax; to search for the words as written, quote them: "hello-world")`},
		{"it's", `quote them: "it's"`},
		{`say "hi" to ann!`, `quote them: "say ""hi"" to ann!"`},
		{"", "empty query"},
		{"   ", "empty query"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			_, err := s.Search(context.Background(), tc.query, SearchOptions{})
			if !errors.Is(err, ErrBadQuery) {
				t.Fatalf("Search = %v, want ErrBadQuery", err)
			}
			for _, w := range []string{`search "` + strings.ReplaceAll(tc.query, `"`, `\"`) + `"`, tc.cause} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// The quoting the error suggests is a query FTS5 takes.
func TestSearchSuggestedQuotingParses(t *testing.T) {
	s, _ := searchFixture(t)
	for _, q := range []string{`"hello-world"`, `"it's"`, `"say ""hi"" to ann!"`} {
		if _, err := s.Search(context.Background(), q, SearchOptions{}); err != nil {
			t.Errorf("Search(%s) = %v", q, err)
		}
	}
}

func TestSearchSeesUpdatesAndDeletes(t *testing.T) {
	ctx := context.Background()
	s, byID := searchFixture(t)
	err := s.Write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.Exec(`UPDATE messages SET text = 'rewritten words' WHERE seq = ?`, byID["dense"].Seq); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM messages WHERE seq = ?`, byID["tg"].Seq)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.Search(ctx, "deploy", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := hitIDs(hits); !reflect.DeepEqual(got, []string{"sparse"}) {
		t.Errorf("after update and delete: hits = %v, want [sparse]", got)
	}
	if hits, _ := s.Search(ctx, "rewritten", SearchOptions{}); len(hits) != 1 {
		t.Errorf("updated text not indexed: %v", hitIDs(hits))
	}
}
