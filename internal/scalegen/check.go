package scalegen

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// Check opens the database of the installation in dataDir as the gateway
// does (store.Open) and reports the first way it differs from one the
// gateway would have written: a migration applied by that open (the
// generator left the schema behind), a schema other than a freshly
// migrated database's, a journal mode other than WAL, a failed
// integrity_check or FTS5 integrity-check (the index against the
// messages' text), a full-text configuration other than the migrations',
// seqs with gaps, a chat whose last_seq is not its newest message's
// seq, or a message without the verb every stored message has. The
// journal mode is read from the file's header before the open (store.Open
// switches a database to WAL itself). It reads every page: minutes at ten
// million messages.
func Check(ctx context.Context, dataDir string) error {
	want, err := freshSchema(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(dataDir, "switchboard.db")
	if err := checkWALHeader(path); err != nil {
		return err
	}
	opened := time.Now().UnixMilli()
	st, err := store.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	defer st.Close()
	r := st.Read()
	var migrated int
	if err := r.QueryRowContext(ctx, `SELECT count(*) FROM schema_version WHERE applied_ms >= ?`, opened).Scan(&migrated); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if migrated > 0 {
		return fmt.Errorf("check: opening it applied %d migrations", migrated)
	}
	got, err := schema(ctx, r)
	if err != nil {
		return err
	}
	if d := diffLines(want.objects, got.objects); d != "" {
		return fmt.Errorf("check: the schema is not the migrations':\n%s", d)
	}
	if d := diffLines(want.ftsConfig, got.ftsConfig); d != "" {
		return fmt.Errorf("check: the full-text configuration is not the migrations':\n%s", d)
	}
	var integrity string
	if err := r.QueryRowContext(ctx, `PRAGMA integrity_check(1)`).Scan(&integrity); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if integrity != "ok" {
		return fmt.Errorf("check: integrity_check: %s", integrity)
	}
	// rank 1: compare the index with the text in messages too.
	err = st.Write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("check: full-text integrity-check: %w", err)
	}
	var n, maxSeq, minSeq, autoinc int64
	err = r.QueryRowContext(ctx, `SELECT count(*), coalesce(max(seq), 0), coalesce(min(seq), 1),
		coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0) FROM messages`).Scan(&n, &maxSeq, &minSeq, &autoinc)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if minSeq != 1 || maxSeq != n || autoinc != maxSeq {
		return fmt.Errorf("check: %d messages with seqs %d to %d (AUTOINCREMENT at %d): want 1 to %d", n, minSeq, maxSeq, autoinc, n)
	}
	var chats, bad int
	err = r.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE last_seq IS NOT (SELECT max(seq) FROM messages WHERE chat_jid = c.jid))
		FROM chats c`).Scan(&chats, &bad)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	var msgChats int
	if err := r.QueryRowContext(ctx, `SELECT count(DISTINCT chat_jid) FROM messages`).Scan(&msgChats); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if bad > 0 || chats != msgChats {
		return fmt.Errorf("check: %d chats, %d with messages; %d whose last_seq is not their newest message's seq", chats, msgChats, bad)
	}
	var noVerb int
	if err := r.QueryRowContext(ctx, `SELECT count(*) FROM messages WHERE verb = ''`).Scan(&noVerb); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if noVerb > 0 {
		return fmt.Errorf("check: %d messages without a verb (the gateway stores %q or %q)", noVerb, adapters.VerbMessage, adapters.VerbMention)
	}
	return nil
}

// checkWALHeader checks that the database file at path is in WAL mode as
// it lies on disk: its header's file format versions (bytes 18 and 19)
// are 2 in WAL mode, 1 in a rollback-journal mode.
func checkWALHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	defer f.Close()
	var h [20]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return fmt.Errorf("check: read the header of %s: %w", path, err)
	}
	if h[18] != 2 || h[19] != 2 {
		return fmt.Errorf("check: %s is not in WAL mode (header file format versions %d, %d; want 2, 2): the generator left it in a rollback-journal mode", path, h[18], h[19])
	}
	return nil
}

// schemaSnapshot is a database's schema as sorted lines: its objects
// (type, name, table, SQL; not the root pages) and the full-text index's
// configuration rows.
type schemaSnapshot struct {
	objects, ftsConfig []string
}

func schema(ctx context.Context, db *sql.DB) (schemaSnapshot, error) {
	var s schemaSnapshot
	for _, q := range []struct {
		query string
		into  *[]string
	}{
		{`SELECT type || ' ' || name || ' ON ' || tbl_name || ': ' || coalesce(sql, '') FROM sqlite_schema`, &s.objects},
		{`SELECT k || ' = ' || v FROM messages_fts_config`, &s.ftsConfig},
	} {
		rows, err := db.QueryContext(ctx, q.query)
		if err != nil {
			return s, fmt.Errorf("read schema: %w", err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return s, err
			}
			*q.into = append(*q.into, line)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s, err
		}
		slices.Sort(*q.into)
	}
	return s, nil
}

// freshSchema is the schema of a database that store.Open just created.
func freshSchema(ctx context.Context) (schemaSnapshot, error) {
	dir, err := os.MkdirTemp("", "scalegen-schema-")
	if err != nil {
		return schemaSnapshot{}, err
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(ctx, filepath.Join(dir, "switchboard.db"))
	if err != nil {
		return schemaSnapshot{}, err
	}
	defer st.Close()
	return schema(ctx, st.Read())
}

// diffLines lists the lines only one of two sorted lists has.
func diffLines(want, got []string) string {
	var b strings.Builder
	for _, l := range want {
		if _, ok := slices.BinarySearch(got, l); !ok {
			fmt.Fprintf(&b, "  missing: %s\n", l)
		}
	}
	for _, l := range got {
		if _, ok := slices.BinarySearch(want, l); !ok {
			fmt.Fprintf(&b, "  extra:   %s\n", l)
		}
	}
	return b.String()
}
