package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"switchboard/adapters"

	"github.com/mattn/go-sqlite3"
)

// Search limits: a limit <= 0 means DefaultSearchLimit; more than
// MaxSearchLimit is cut to it.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 200
)

// SearchOptions narrow a search.
type SearchOptions struct {
	// ChatJIDs limits the search to these chats. nil means all chats; an
	// empty non-nil slice means none (a caller that may see no chat gets no
	// hits, never everything).
	ChatJIDs []adapters.JID
	Sender   adapters.JID // exact sender JID; "" for any
	Since    time.Time    // messages at or after it; zero for any time
	Limit    int
}

// Hit is one search result.
type Hit struct {
	Message
	// Snippet is the matching part of the text with the matched terms in
	// [brackets] and "…" where text was cut.
	Snippet string
	// Rank is FTS5's bm25 score: lower (more negative) is a better match.
	Rank float64
}

// Search runs an FTS5 query (MATCH syntax: words, "phrases", prefix*, AND, OR,
// NOT, NEAR) over message text. A query that matches at most searchScan
// messages in all returns the best hits first (bm25; newer first among
// equals). One that matches more (a common word) returns the newest hits
// first, with Rank 0: bm25 counts every match of each term to weigh it, so
// its cost grows with the matches, and a common word's best matches are
// no better than its newest. Within chats that hold at most searchRecent
// messages in all (a group's few chats), those are the chats' newest hits,
// every hit found: the chats' messages are walked newest first, each
// checked against the query by its rowid, so the cost follows the chats'
// messages, not the query's matches everywhere. Within busier chats, or
// with a prefix* (expanded again for every row checked), they are the
// newest among the newest searchScan matches and (unless the query has a
// prefix*) the chats' newest searchRecent messages: an older hit can be
// missed. Either way a word or phrase costs about the same at a thousand
// messages and at ten million, and so does a prefix* of two or three
// characters (FTS5 keeps prefix indexes of those lengths, migration 0020);
// a longer prefix merges the lists of the few words it starts, a
// one-character one those of every word it starts.
//
// A query FTS5 cannot parse returns an error wrapping ErrBadQuery that quotes
// the query and SQLite's complaint.
//
// A query is bounded (MaxQueryBytes, MaxQueryTerms) and so is its run time
// (SearchTimeout): SQLite is interrupted when either the deadline or ctx
// (the caller went away) ends it.
func (s *Store) Search(ctx context.Context, query string, o SearchOptions) ([]Hit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("search %q: %w: empty query", query, ErrBadQuery)
	}
	if len(query) > MaxQueryBytes {
		return nil, fmt.Errorf("search %s: %w: the query is %d bytes; at most %d", short(query), ErrBadQuery, len(query), MaxQueryBytes)
	}
	if n := len(strings.Fields(query)); n > MaxQueryTerms {
		return nil, fmt.Errorf("search %s: %w: the query has %d terms; at most %d", short(query), ErrBadQuery, n, MaxQueryTerms)
	}
	ctx, cancel := context.WithTimeout(ctx, SearchTimeout)
	defer cancel()
	if o.ChatJIDs != nil && len(o.ChatJIDs) == 0 {
		return []Hit{}, nil
	}
	top, err := s.searchTop(ctx, query, o)
	if err != nil {
		return nil, searchError(query, err)
	}
	hits, err := s.searchHits(ctx, query, top)
	if err != nil {
		return nil, searchError(query, err)
	}
	return hits, nil
}

// How far a search looks (see Search).
const (
	searchScan   = 20_000 // a query with more matches is common: newest first
	searchRecent = 2000   // the newest messages of the chats searched for a common query; chats with no more are walked whole
)

// ranked is a candidate hit: a message's seq and its bm25 score.
type ranked struct {
	seq  int64
	rank float64
}

// searchTop returns the best candidates, best first, at most o.Limit.
func (s *Store) searchTop(ctx context.Context, query string, o SearchOptions) ([]ranked, error) {
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	base, args := searchFilter(query, o)
	filter := base
	if o.ChatJIDs != nil {
		filter += ` AND m.chat_jid IN (SELECT value FROM json_each(?2))`
	}
	// Within a group's chats, a common query walks their messages when they
	// are few (searchFew). The walk, and the look at how many they are, run
	// beside the count that tells whether the query is common, and are
	// stopped when it is not.
	var few *fewWalk
	if o.ChatJIDs != nil && !strings.Contains(query, "*") {
		few = s.startFew(ctx, base, args, limit)
		defer few.stop()
	}
	// How many match, up to searchScan+1, and the oldest of those: the
	// bound of searchChats' walk.
	var n int
	var bound int64
	if err := s.r.QueryRowContext(ctx, `SELECT count(*), coalesce(min(rowid), 0) FROM (SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1
		ORDER BY rowid DESC LIMIT `+strconv.Itoa(searchScan+1)+`)`, query).Scan(&n, &bound); err != nil {
		return nil, err
	}
	if few != nil && n <= searchScan {
		few.stop() // not common: bm25 below
		few = nil
	}
	var cands []ranked
	var err error
	switch {
	case n <= searchScan:
		// Few matches: bm25 over all of them (its term counts too).
		cands, err = s.searchRanked(ctx, cands, `SELECT m.seq, bm25(messages_fts) FROM messages_fts JOIN messages m ON m.seq = messages_fts.rowid
			WHERE messages_fts MATCH ?1`+filter, args)
	case o.ChatJIDs == nil:
		// FTS5 walks the matches newest first and stops at the limit.
		cands, err = s.searchRanked(ctx, cands, `SELECT m.seq, 0 FROM messages_fts JOIN messages m ON m.seq = messages_fts.rowid
			WHERE messages_fts MATCH ?1`+filter+` ORDER BY messages_fts.rowid DESC LIMIT `+strconv.Itoa(limit), args)
	case few != nil:
		var walked bool
		if cands, walked, err = few.result(); err == nil && !walked {
			cands, err = s.searchChats(ctx, query, filter, args, bound, limit)
		}
	default:
		cands, err = s.searchChats(ctx, query, filter, args, bound, limit)
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cands, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(b.seq, a.seq))
	})
	cands = slices.CompactFunc(cands, func(a, b ranked) bool { return a.seq == b.seq })
	return cands[:min(len(cands), limit)], nil
}

// searchChats finds a common query's newest hits in the chats of ?2: the
// matches from bound (the oldest of the newest searchScan+1) on, walked
// newest first; every hit in the chats newer than the bound is among them,
// so when they hold limit hits those are the newest. Otherwise, unless the
// query has a prefix (expanded again for every row), the chats' older
// messages, newest first, by the index on (chat_jid, seq), at most
// searchRecent, each checked against the query by its rowid (CROSS JOIN
// keeps that order: driven by the matches, SQLite would read them all).
func (s *Store) searchChats(ctx context.Context, query, filter string, args []any, bound int64, limit int) ([]ranked, error) {
	b := strconv.FormatInt(bound, 10)
	cands, err := s.searchRanked(ctx, nil, `SELECT m.seq, 0 FROM messages_fts JOIN messages m ON m.seq = messages_fts.rowid
		WHERE messages_fts MATCH ?1 AND messages_fts.rowid >= `+b+filter+`
		ORDER BY messages_fts.rowid DESC LIMIT `+strconv.Itoa(limit), args)
	if err != nil || len(cands) >= limit || strings.Contains(query, "*") {
		return cands, err
	}
	return s.searchRanked(ctx, cands, `SELECT m.seq, 0 FROM (SELECT seq FROM messages WHERE chat_jid IN (SELECT value FROM json_each(?2))
			AND seq < `+b+` ORDER BY seq DESC LIMIT `+strconv.Itoa(searchRecent)+`) r
		CROSS JOIN messages m ON m.seq = r.seq
		CROSS JOIN messages_fts ON messages_fts.rowid = r.seq AND messages_fts MATCH ?1
		WHERE 1`+filter+` ORDER BY r.seq DESC LIMIT `+strconv.Itoa(limit-len(cands)), args)
}

// chatSeqs returns the seqs of the messages in the chats of chats (JSON),
// newest first, when there are at most searchRecent of them; nil when
// there are more. The index on (chat_jid, seq) counts at most
// searchRecent+1 before they are read.
func (s *Store) chatSeqs(ctx context.Context, chats any) ([]int64, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM messages WHERE chat_jid IN (SELECT value FROM json_each(?))
		LIMIT `+strconv.Itoa(searchRecent+1)+`)`, chats).Scan(&n); err != nil || n > searchRecent {
		return nil, err
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq FROM messages WHERE chat_jid IN (SELECT value FROM json_each(?))
		ORDER BY seq DESC LIMIT `+strconv.Itoa(searchRecent), chats)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	seqs := make([]int64, 0, n)
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		seqs = append(seqs, seq)
	}
	return seqs, rows.Err()
}

// searchFew finds a common query's newest hits among few messages (seqs,
// newest first): each checked against the query by its rowid, in batches
// that grow until limit hits are found or the messages run out. Driven by
// the chats' messages, the cost is bounded by how many they are, not by
// how many messages match the query everywhere: a check costs 12-40 us at
// 10 million messages (a phrase of two common words the most), which is
// why only chats of at most searchRecent messages are walked whole.
func (s *Store) searchFew(ctx context.Context, seqs []int64, filter string, args []any, limit int) ([]ranked, error) {
	var cands []ranked
	args = slices.Clone(args)
	for batch := 4 * limit; len(seqs) > 0 && len(cands) < limit; batch *= 2 {
		n := min(batch, len(seqs))
		js, _ := json.Marshal(seqs[:n])
		args[1] = string(js)
		var err error
		if cands, err = s.searchRanked(ctx, cands, `SELECT m.seq, 0 FROM json_each(?2) j
			CROSS JOIN messages m ON m.seq = j.value
			CROSS JOIN messages_fts ON messages_fts.rowid = m.seq AND messages_fts MATCH ?1
			WHERE 1`+filter, args); err != nil {
			return nil, err
		}
		seqs = seqs[n:]
	}
	return cands, nil
}

// fewWalk is chatSeqs and searchFew running in their own goroutine.
type fewWalk struct {
	cancel context.CancelFunc
	done   chan struct{}
	walked bool // the chats were few, and cands are their hits
	cands  []ranked
	err    error
}

// startFew starts a fewWalk of the chats of args[1] on another reader
// connection.
func (s *Store) startFew(ctx context.Context, filter string, args []any, limit int) *fewWalk {
	ctx, cancel := context.WithCancel(ctx)
	w := &fewWalk{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		seqs, err := s.chatSeqs(ctx, args[1])
		if err != nil || seqs == nil {
			w.err = err
			return
		}
		w.walked = true
		w.cands, w.err = s.searchFew(ctx, seqs, filter, args, limit)
	}()
	return w
}

// result waits for the walk: the chats' hits, and whether the chats were
// few enough to walk.
func (w *fewWalk) result() ([]ranked, bool, error) {
	<-w.done
	return w.cands, w.walked, w.err
}

// stop interrupts the walk if it still runs and waits for it to end.
func (w *fewWalk) stop() {
	w.cancel()
	<-w.done
}

// searchFilter is the sender and since conditions on m, and the arguments:
// ?1 the query, ?2 the chats (JSON), then the filters' own.
func searchFilter(query string, o SearchOptions) (string, []any) {
	jids, _ := json.Marshal(o.ChatJIDs) // a slice of strings always marshals
	args := []any{query, string(jids)}
	var b strings.Builder
	if o.Sender != "" {
		args = append(args, o.Sender)
		fmt.Fprintf(&b, ` AND m.sender = ?%d`, len(args))
	}
	if since := toMS(o.Since); since > 0 {
		args = append(args, since)
		fmt.Fprintf(&b, ` AND m.time_ms >= ?%d`, len(args))
	}
	return b.String(), args
}

// searchRanked appends q's (seq, rank) rows to cands.
func (s *Store) searchRanked(ctx context.Context, cands []ranked, q string, args []any) ([]ranked, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var r ranked
		if err := rows.Scan(&r.seq, &r.rank); err != nil {
			return nil, err
		}
		cands = append(cands, r)
	}
	return cands, rows.Err()
}

// searchHits reads the messages of top with their snippets, in top's order
// (driven by top: CROSS JOIN keeps SQLite from reading every match).
func (s *Store) searchHits(ctx context.Context, query string, top []ranked) ([]Hit, error) {
	seqs := make([]int64, len(top))
	for i, r := range top {
		seqs[i] = r.seq
	}
	js, _ := json.Marshal(seqs)
	rows, err := s.r.QueryContext(ctx, `SELECT `+prefixed("m.", msgColumns)+`, snippet(messages_fts, 0, '[', ']', '…', 16)
		FROM json_each(?2) j
		CROSS JOIN messages m ON m.seq = j.value
		CROSS JOIN messages_fts ON messages_fts.rowid = m.seq AND messages_fts MATCH ?1`, query, string(js))
	got, err := collect(rows, err, func(sc scanner) (Hit, error) {
		var h Hit
		err := scanMessage(sc, &h.Message, &h.Snippet)
		return h, err
	})
	if err != nil {
		return nil, err
	}
	bySeq := make(map[int64]Hit, len(got))
	for _, h := range got {
		bySeq[h.Seq] = h
	}
	hits := make([]Hit, 0, len(top))
	for _, r := range top {
		if h, ok := bySeq[r.seq]; ok { // gone if deleted meanwhile
			h.Rank = r.rank
			hits = append(hits, h)
		}
	}
	return hits, nil
}

// prefixed qualifies each of the comma-separated columns with p.
func prefixed(p, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// searchError classifies a failure: the SQL around the MATCH is fixed, so a
// plain SQL error (SQLITE_ERROR) comes from the user's query.
func searchError(query string, err error) error {
	var se sqlite3.Error
	switch {
	case errors.As(err, &se) && se.Code == sqlite3.ErrError:
		// FTS5 reads "hello-world" as a column filter and "it's" as an
		// unterminated string: say how to search for the text as written.
		quoted := `"` + strings.ReplaceAll(query, `"`, `""`) + `"`
		if len(quoted) > 80 {
			quoted = "in double quotes"
		}
		return fmt.Errorf("search %s: %w: %s (the query is FTS5 syntax; to search for the words as written, quote them: %s)",
			short(query), ErrBadQuery, se.Error(), quoted)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &se) && se.Code == sqlite3.ErrInterrupt:
		return fmt.Errorf("search %s: stopped after %s; narrow the query (fewer OR terms, a chat_jid or since): %w", short(query), SearchTimeout, err)
	}
	return fmt.Errorf("search %s: %w", short(query), err)
}

// Bounds of a search (see Search).
const (
	MaxQueryBytes = 1024
	MaxQueryTerms = 64
)

// SearchTimeout bounds one search's run time. A variable for tests.
var SearchTimeout = 5 * time.Second

// short quotes a query for an error or a log line, cut to 80 bytes.
func short(q string) string {
	if len(q) > 80 {
		return strconv.Quote(strings.ToValidUTF8(q[:80], "")) + "…"
	}
	return strconv.Quote(q)
}
