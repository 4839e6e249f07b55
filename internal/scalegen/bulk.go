package scalegen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	_ "github.com/mattn/go-sqlite3" // the driver store registers too; named here because bulk opens its own connection
)

// The messages are bulk-loaded on a connection of the generator's own,
// while no store has the database open (Generate closes it first), into
// a database that holds no messages yet (the generated message ids would
// collide with an earlier run's):
//
//   - journal off, no syncs, an exclusive lock and a large page cache for
//     the load's length (the sorts of CREATE INDEX spill to temporary
//     files, as by default: in memory they would hold the whole index
//     being made); the database goes back to WAL before the
//     connection closes, so the gateway opens it as it left it. A load
//     that fails half-way leaves a database to throw away (there is no
//     journal to roll back with): generate into a new directory again.
//   - the rows go in in seq order with the messages' secondary indexes and
//     the full-text insert trigger dropped. The indexes are then built
//     again by sorting (CREATE INDEX) and the full-text index by one
//     'rebuild' of the whole table with a large in-memory hash, instead
//     of a random b-tree insert and a small index segment per row. Their
//     SQL is read from sqlite_schema before they are dropped and run
//     again verbatim, so the schema stays exactly the migrations'.
//   - message texts are made in Go on the other cores while SQLite
//     writes, in chunks whose random streams depend only on the chunk's
//     number (the output does not depend on GOMAXPROCS).
//
// The full-text trigger's siblings (delete, update) never fire on an
// INSERT and stay; so does any trigger a later migration adds, which
// then slows the load but keeps it correct.

// Bulk-load tuning. The page cache holds the UNIQUE (chat_jid, msg_id)
// index, which cannot be dropped and takes rows in random order (chats
// take turns): 315 MiB at 10 million messages. The full-text hash is
// written out as a new index segment whenever it passes ftsHash (with
// FTS5's default of 1 MB the rebuild took twice the CPU at a million
// messages, merging the small segments again; 384 MB took no less than
// 128 MB at three million, and more memory).
const (
	bulkCacheKB  = 512 << 10 // PRAGMA cache_size while inserting, in KiB
	ftsCacheKB   = 64 << 10  // ... while building the indexes
	ftsHash      = 128 << 20 // the 'hashsize' for the rebuild, in bytes
	chunkRows    = 5000      // rows made by one generator task
	bulkTxChunks = 100       // chunks to a transaction
	rowsPerStmt  = 500       // rows in one multi-row INSERT
	ftsInsertTrg = "messages_fts_insert"
)

// bulkLoad stores s.Messages messages in the database at path, which
// holds none yet, round-robin over the chats, with times going back a
// year from now, and each chat's newest seq into chats.
func bulkLoad(ctx context.Context, path string, s Spec, ph *phases) (err error) {
	db, err := sql.Open("sqlite3", "file:"+strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))+"?_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	exec := func(q string, args ...any) error {
		if _, err := c.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(strings.Fields(q), " "), err)
		}
		return nil
	}
	var held int64
	if err := c.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM messages) + coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)`).Scan(&held); err != nil {
		return fmt.Errorf("read messages: %w", err)
	}
	if held > 0 {
		return errors.New("the database holds messages already: generate into a new directory")
	}
	for _, q := range []string{
		"PRAGMA locking_mode = EXCLUSIVE",
		"PRAGMA journal_mode = OFF",
		"PRAGMA synchronous = OFF",
		fmt.Sprintf("PRAGMA cache_size = -%d", bulkCacheKB),
		fmt.Sprintf("PRAGMA threads = %d", runtime.GOMAXPROCS(0)),
	} {
		if err := exec(q); err != nil {
			return err
		}
	}
	derived, err := dropDerived(ctx, c)
	if err != nil {
		return err
	}
	ph.done("bulk mode")
	if err := insertRows(ctx, c, s); err != nil {
		return err
	}
	ph.done("insert")
	// Smaller cache: the indexes are built by sorting, and the memory
	// goes to the full-text hash instead.
	if err := exec(fmt.Sprintf("PRAGMA cache_size = -%d", ftsCacheKB)); err != nil {
		return err
	}
	if err := exec("PRAGMA shrink_memory"); err != nil {
		return err
	}
	for _, q := range derived.indexes {
		if err := exec(q); err != nil {
			return err
		}
	}
	ph.done("indexes")
	if err := rebuildFTS(ctx, c); err != nil {
		return err
	}
	if err := exec(derived.ftsTrigger); err != nil {
		return err
	}
	ph.done("full-text")
	err = exec(`INSERT INTO chats (jid, platform, first_seen_ms, last_seq)
		SELECT chat_jid, 'web', min(time_ms), max(seq) FROM messages GROUP BY chat_jid
		ON CONFLICT (jid) DO UPDATE SET last_seq = max(chats.last_seq, excluded.last_seq)`)
	if err != nil {
		return fmt.Errorf("record chats: %w", err)
	}
	var mode string
	if err := c.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode); err != nil || !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("back to WAL: journal mode %q: %w", mode, errors.Join(err, errors.New("not wal")))
	}
	if err := c.Close(); err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	ph.done("chats, WAL, close")
	return nil
}

// derivedSQL is what dropDerived dropped, to run again after the load.
type derivedSQL struct {
	indexes    []string // CREATE INDEX of the messages' secondary indexes
	ftsTrigger string   // CREATE TRIGGER messages_fts_insert
}

// dropDerived drops the messages' secondary indexes and the full-text
// insert trigger and returns their SQL as the migrations wrote it.
func dropDerived(ctx context.Context, c *sql.Conn) (derivedSQL, error) {
	var d derivedSQL
	rows, err := c.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_schema
		WHERE tbl_name = 'messages' AND sql IS NOT NULL AND (type = 'index' OR (type = 'trigger' AND name = ?))
		ORDER BY rowid`, ftsInsertTrg)
	if err != nil {
		return d, fmt.Errorf("read the messages' schema: %w", err)
	}
	var drops []string
	for rows.Next() {
		var typ, name, q string
		if err := rows.Scan(&typ, &name, &q); err != nil {
			rows.Close()
			return d, err
		}
		drops = append(drops, "DROP "+strings.ToUpper(typ)+" "+strconv.Quote(name))
		if typ == "index" {
			d.indexes = append(d.indexes, q)
		} else {
			d.ftsTrigger = q
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return d, err
	}
	if d.ftsTrigger == "" {
		return d, fmt.Errorf("the schema has no %s trigger: the generator no longer matches the migrations", ftsInsertTrg)
	}
	for _, q := range drops {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return d, fmt.Errorf("%s: %w", q, err)
		}
	}
	return d, nil
}

// rebuildFTS makes the full-text index again from every message, with a
// large hash while it runs; the setting is removed afterwards, so the
// index's configuration is the migrations' (FTS5 reads it again at the
// next connection).
func rebuildFTS(ctx context.Context, c *sql.Conn) error {
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO messages_fts (messages_fts, rank) VALUES ('hashsize', %d)`, ftsHash),
		`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`,
		`DELETE FROM messages_fts_config WHERE k = 'hashsize'`,
	} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("full-text index: %s: %w", q, err)
		}
	}
	return nil
}

// chunk is chunkRows rows' INSERT arguments, made by a generator task.
type chunk struct {
	n    int // rows
	args []any
}

// insertRows inserts s.Messages rows in seq order: generator goroutines
// make chunks while this one writes them, bulkTxChunks to a transaction.
func insertRows(ctx context.Context, c *sql.Conn, s Spec) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := newGen(s)
	nChunks := (s.Messages + chunkRows - 1) / chunkRows
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	// Each chunk has its own channel, queued in order: the writer takes
	// them in order however the workers finish. The queue's length bounds
	// the chunks in memory.
	order := make(chan chan chunk, 4*workers)
	tasks := make(chan int)
	slots := make([]chan chunk, nChunks)
	go func() {
		defer close(order)
		defer close(tasks)
		for k := range nChunks {
			slots[k] = make(chan chunk, 1)
			select {
			case order <- slots[k]:
			case <-ctx.Done():
				return
			}
			select {
			case tasks <- k:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range workers {
		go func() {
			for k := range tasks {
				slots[k] <- g.chunk(k)
			}
		}()
	}
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	stmt := func(rows int) (*sql.Stmt, error) {
		if st, ok := stmts[rows]; ok {
			return st, nil
		}
		st, err := c.PrepareContext(ctx, `INSERT INTO messages (chat_jid, msg_id, sender, sender_name, text, time_ms, created_ms, verb) VALUES `+
			strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, 'message'),", rows), ","))
		if err != nil {
			return nil, err
		}
		stmts[rows] = st
		return st, nil
	}
	k := 0
	for slot := range order {
		ch := <-slot
		if k%bulkTxChunks == 0 {
			if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
				return err
			}
		}
		for lo := 0; lo < ch.n; lo += rowsPerStmt {
			hi := min(lo+rowsPerStmt, ch.n)
			st, err := stmt(hi - lo)
			if err != nil {
				return err
			}
			if _, err := st.ExecContext(ctx, ch.args[lo*cols:hi*cols]...); err != nil {
				return fmt.Errorf("insert messages %d to %d: %w", k*chunkRows+lo, k*chunkRows+hi, err)
			}
		}
		k++
		if k%bulkTxChunks == 0 || k == nChunks {
			if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
				return err
			}
		}
	}
	if k != nChunks {
		return fmt.Errorf("insert messages: %w", ctx.Err())
	}
	return nil
}

const cols = 7 // the INSERT's columns

// gen makes the rows: message i is in chat i mod Chats, from one of 97
// senders, at now - a year + i steps.
type gen struct {
	s       Spec
	now     int64
	span    int64
	step    int64
	words   []string
	chats   []string
	senders []string
	names   []string
}

func newGen(s Spec) *gen {
	g := &gen{s: s, now: time.Now().UnixMilli(), span: int64(365 * 24 * time.Hour / time.Millisecond), words: vocabulary(vocabularySeed)}
	g.step = max(g.span/int64(max(s.Messages, 1)), 1)
	g.chats = make([]string, s.Chats)
	for i := range g.chats {
		g.chats[i] = Chat(i)
	}
	for u := range 97 {
		g.senders = append(g.senders, "web:user/u"+strconv.Itoa(u))
		g.names = append(g.names, "user "+strconv.Itoa(u))
	}
	return g
}

// chunk makes chunk k's rows.
func (g *gen) chunk(k int) chunk {
	lo := k * chunkRows
	hi := min(lo+chunkRows, g.s.Messages)
	t := newTexter(g.words, uint64(k))
	args := make([]any, 0, (hi-lo)*cols)
	for i := lo; i < hi; i++ {
		u := i % 97
		tm := g.now - g.span + int64(i)*g.step
		args = append(args, g.chats[i%g.s.Chats], "m"+strconv.Itoa(i), g.senders[u], g.names[u], t.next(), tm, tm)
	}
	return chunk{n: hi - lo, args: args}
}
