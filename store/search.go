package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// NOT, NEAR) over message text and returns the best hits first (bm25; newer
// first among equals). A query FTS5 cannot parse returns an error wrapping
// ErrBadQuery that quotes the query and SQLite's complaint.
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
	q, args, err := searchSQL(query, o)
	if err != nil {
		return nil, fmt.Errorf("search %q: %w", query, err)
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	hits, err := collect(rows, err, func(sc scanner) (Hit, error) {
		var h Hit
		err := scanMessage(sc, &h.Message, &h.Snippet, &h.Rank)
		return h, err
	})
	if err != nil {
		return nil, searchError(query, err)
	}
	return hits, nil
}

// searchSQL builds the query. The chat list travels as one JSON parameter so
// that any number of chats fits.
func searchSQL(query string, o SearchOptions) (string, []any, error) {
	// Rank and limit first, then compute snippets for the survivors only:
	// snippet() over every match before the sort would cost one highlight
	// per matching row.
	var b strings.Builder
	b.WriteString(`WITH top AS (
		SELECT m.seq AS seq, bm25(messages_fts) AS rank
		FROM messages_fts JOIN messages m ON m.seq = messages_fts.rowid
		WHERE messages_fts MATCH ?1`)
	args := []any{query}
	if o.ChatJIDs != nil {
		jids, err := json.Marshal(o.ChatJIDs)
		if err != nil {
			return "", nil, err
		}
		args = append(args, string(jids))
		fmt.Fprintf(&b, ` AND m.chat_jid IN (SELECT value FROM json_each(?%d))`, len(args))
	}
	if o.Sender != "" {
		args = append(args, o.Sender)
		fmt.Fprintf(&b, ` AND m.sender = ?%d`, len(args))
	}
	if since := toMS(o.Since); since > 0 {
		args = append(args, since)
		fmt.Fprintf(&b, ` AND m.time_ms >= ?%d`, len(args))
	}
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	args = append(args, min(limit, MaxSearchLimit))
	fmt.Fprintf(&b, ` ORDER BY rank, m.seq DESC LIMIT ?%d)
		SELECT m.seq, m.chat_jid, m.msg_id, m.sender, m.sender_name, m.text, m.topic,
			m.reply_to, m.verb, m.from_bot, m.time_ms, m.attachments, m.other_bot, m.deleted, m.edited_ms,
			snippet(messages_fts, 0, '[', ']', '…', 16), top.rank
		FROM top
		JOIN messages m ON m.seq = top.seq
		JOIN messages_fts ON messages_fts.rowid = top.seq AND messages_fts MATCH ?1
		ORDER BY top.rank, top.seq DESC`, len(args))
	return b.String(), args, nil
}

// searchError classifies a failure: the SQL around the MATCH is fixed, so a
// plain SQL error (SQLITE_ERROR) comes from the user's query.
func searchError(query string, err error) error {
	var se sqlite3.Error
	switch {
	case errors.As(err, &se) && se.Code == sqlite3.ErrError:
		return fmt.Errorf("search %s: %w: %s", short(query), ErrBadQuery, se.Error())
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
