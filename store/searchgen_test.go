package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
)

// The find_messages benchmark's corpus: n messages over n/100 chats (a
// chat's share follows a Zipf law: a few busy chats, many quiet ones), the
// words of each message drawn from a Zipf law over a 20,000-word
// vocabulary, like natural text (searchWord). Chats are grouped as a
// gateway with 10,000 groups would own them: group g owns the chats whose
// number is g modulo searchGroups (searchGroupChats).
const searchGroups = 10_000

// searchChat names chat i.
func searchChat(i int) adapters.JID {
	return adapters.JID(fmt.Sprintf("telegram:group/%d", i))
}

// searchGroupChats is the chats group g owns in a corpus of n messages.
func searchGroupChats(n, g int) []adapters.JID {
	var out []adapters.JID
	for c := g; c < max(n/100, 1); c += searchGroups {
		out = append(out, searchChat(c))
	}
	return out
}

// searchWord draws words: rank 1 and 2 are "the" and "and" (in about one
// message in two and one in three), benchWords take ranks 3..32, the rest
// are w<rank>.
func searchWord(zipf *rand.Zipf) string {
	k := int(zipf.Uint64())
	switch {
	case k == 0:
		return "the"
	case k == 1:
		return "and"
	case k >= 3 && k < 3+len(benchWords):
		return benchWords[k-3]
	}
	return "w" + strconv.Itoa(k)
}

// searchDB opens a corpus of n messages: the database at
// $SWITCHBOARD_SEARCH_DB when set (generated there first if missing, kept
// for the next run: 10 million messages take minutes), otherwise one
// generated in a temporary directory.
func searchDB(b *testing.B, n int) *Store {
	path := os.Getenv("SWITCHBOARD_SEARCH_DB")
	if path == "" {
		path = filepath.Join(b.TempDir(), "search.db")
	}
	if _, err := os.Stat(path); err != nil {
		b.Logf("generating %d messages in %s", n, path)
		start := time.Now()
		if err := generateSearchDB(path, n); err != nil {
			b.Fatal(err)
		}
		b.Logf("generated in %s", time.Since(start).Round(time.Second))
	}
	s := openAt(b, path)
	var have int
	if err := s.r.QueryRow(`SELECT count(*) FROM messages`).Scan(&have); err != nil || have != n {
		b.Fatalf("%s holds %d messages (%v); want %d: remove it to generate it again", path, have, err, n)
	}
	return s
}

// generateSearchDB writes the corpus (see searchGroups) into a new
// database at path: the messages in transactions of 50,000 without the
// FTS trigger, then the FTS index rebuilt and merged in one go, which is
// far faster than indexing row by row.
func generateSearchDB(path string, n int) error {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.w.ExecContext(ctx, `DROP TRIGGER messages_fts_insert`); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(11, 12))
	words := rand.NewZipf(r, 1.07, 2, 20_000)
	chats := max(n/100, 1)
	chatZipf := rand.NewZipf(r, 1.1, 10, uint64(chats-1))
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	var sb strings.Builder
	for start := 0; start < n; start += 50_000 {
		err := writeTx(ctx, s.w, func(tx *sql.Tx) error {
			ins, err := tx.PrepareContext(ctx, `INSERT INTO messages (chat_jid, msg_id, sender, text, time_ms, created_ms) VALUES (?, ?, ?, ?, ?, ?)`)
			if err != nil {
				return err
			}
			defer ins.Close()
			for i := start; i < min(start+50_000, n); i++ {
				sb.Reset()
				for w := range 4 + r.IntN(20) {
					if w > 0 {
						sb.WriteByte(' ')
					}
					sb.WriteString(searchWord(words))
				}
				// Every chat has a message, then the Zipf law picks.
				c := i
				if i >= chats {
					c = int(chatZipf.Uint64())
				}
				t := base + int64(i)*1000
				if _, err := ins.ExecContext(ctx, string(searchChat(c)), strconv.Itoa(i), fmt.Sprintf("telegram:user/%d", r.IntN(5000)), sb.String(), t, t); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, q := range []string{
		`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`,
		`INSERT INTO messages_fts (messages_fts) VALUES ('optimize')`,
		`CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
		    INSERT INTO messages_fts (rowid, text) VALUES (new.seq, new.text);
		END`,
		`INSERT INTO chats (jid, platform, first_seen_ms, last_seq) SELECT chat_jid, 'telegram', 0, max(seq) FROM messages GROUP BY chat_jid`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%.40s: %w", q, err)
		}
	}
	return nil
}

// BenchmarkFindMessages runs find_messages' searches (Store.Search, limit
// 20) over a corpus of 1 million messages (SWITCHBOARD_SEARCH_N: another
// size; SWITCHBOARD_SEARCH_DB: where to keep it) across all chats, as the
// root group searches, and within the chats of one group (of 10,000), for
// words from the commonest ("the": one message in two) to rare ones, and
// reports the p50 and p99 latency of each.
func BenchmarkFindMessages(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("SWITCHBOARD_SEARCH_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	s := searchDB(b, n)
	group := searchGroupChats(n, 7)
	for _, scope := range []struct {
		name  string
		chats []adapters.JID
	}{{"all_chats", nil}, {fmt.Sprintf("group_of_%d_chats", len(group)), group}} {
		for _, q := range []struct{ name, query string }{
			{"commonest", "the"},
			{"common", "deploy"},
			{"two_common", "deploy release"},
			{"phrase", `"the and"`},
			{"or", "incident OR rollback"},
			{"prefix", "w12*"},
			{"rare", "w19000"},
		} {
			b.Run(scope.name+"/"+q.name, func(b *testing.B) {
				benchSearch(b, s, q.query, SearchOptions{ChatJIDs: scope.chats})
			})
		}
	}
}

// benchSearch runs the search query with o as b's loop and reports the p50
// and p99 latency and the hits of the last call.
func benchSearch(b *testing.B, s *Store, query string, o SearchOptions) {
	ctx := context.Background()
	var lat []time.Duration
	var hits int
	for b.Loop() {
		start := time.Now()
		h, err := s.Search(ctx, query, o)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		hits = len(h)
	}
	slices.Sort(lat)
	ms := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
	b.ReportMetric(float64(hits), "hits")
}
