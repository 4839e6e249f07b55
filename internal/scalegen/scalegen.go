// Package scalegen makes a large Switchboard installation to measure: a
// config file listing N groups and M routed web chats, the groups' folders,
// and a database (created by store.Open, so migrated like any other)
// holding K stored messages over those chats, bulk-loaded (bulk.go) into
// what the gateway would have stored; Check checks that it is.
// `make bench` and the scale benchmarks of cmd/switchboard build their
// data with it; `go run ./internal/scalegen/scalegen` makes one by hand
// (docs/scaling.md, "One machine").
package scalegen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"switchboard/groups"
	"switchboard/store"
)

// Spec is the installation to make.
type Spec struct {
	Dir      string // created when missing; holds switchboard.yaml and data/
	Groups   int    // top-level group folders g000001…, besides root and main
	Chats    int    // web chats web:c0000001…, one route each, spread over the groups
	Messages int    // stored messages, spread over the chats

	// SeedStore writes the groups and routes into the database too, as a
	// gateway that already started once would have them; otherwise the
	// first `switchboard run` seeds them from the config.
	SeedStore bool
	// RoutesInConfig lists the routes in switchboard.yaml (as an operator
	// who seeded them from there keeps them); otherwise routes: [].
	RoutesInConfig bool

	WebListen     string   // adapters.web.listen; default 127.0.0.1:8420
	AdminListen   string   // admin.listen; default 127.0.0.1:8421
	AgentCommand  []string // agent.command; default the demo agent
	MaxConcurrent int      // agent.max_concurrent; default 4
	Log           string   // the log: section as YAML flow; default {level: warn}
	// Extra is appended to switchboard.yaml verbatim (top-level keys).
	Extra string
}

// Dataset is what Generate made.
type Dataset struct {
	Config  string // the config file
	DataDir string
	Took    time.Duration
	// Phases is how long each step took, in order ("config and folders",
	// "store", then the bulk load's: "insert", "indexes", "full-text", ...).
	Phases []Phase
}

// Phase is one step of Generate, its wall time and the CPU time (user
// and system) the process spent meanwhile: on a shared machine the CPU
// time varies less than the wall time.
type Phase struct {
	Name string
	Took time.Duration
	CPU  time.Duration
}

// phases times the steps of a generation.
type phases struct {
	list    []Phase
	last    time.Time
	lastCPU time.Duration
}

func newPhases(start time.Time) *phases { return &phases{last: start, lastCPU: cpuTime()} }

func (p *phases) done(name string) {
	now, cpu := time.Now(), cpuTime()
	p.list = append(p.list, Phase{name, now.Sub(p.last), cpu - p.lastCPU})
	p.last, p.lastCPU = now, cpu
}

// cpuTime is the user and system time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Folder is the i-th generated group (0-based).
func Folder(i int) groups.Folder { return groups.Folder(fmt.Sprintf("g%06d", i+1)) }

// Chat is the i-th generated chat's JID (0-based).
func Chat(i int) string { return fmt.Sprintf("web:c%07d", i+1) }

// ChatFolder is the group the i-th chat is routed to.
func ChatFolder(i, nGroups int) groups.Folder { return Folder(i % nGroups) }

// Generate makes the installation described by s.
func Generate(ctx context.Context, s Spec) (Dataset, error) {
	start := time.Now()
	ph := newPhases(start)
	if s.Groups < 1 || s.Chats < 0 || s.Messages < 0 {
		return Dataset{}, errors.New("scalegen: want at least one group and no negative counts")
	}
	if s.Messages > 0 && s.Chats == 0 {
		return Dataset{}, errors.New("scalegen: messages need chats to live in; set chats")
	}
	dir, err := filepath.Abs(s.Dir)
	if err != nil {
		return Dataset{}, fmt.Errorf("scalegen: dir: %w", err)
	}
	ds := Dataset{Config: filepath.Join(dir, "switchboard.yaml"), DataDir: filepath.Join(dir, "data")}
	if err := os.MkdirAll(ds.DataDir, 0o700); err != nil {
		return Dataset{}, fmt.Errorf("scalegen: create data dir: %w", err)
	}
	if err := writeConfig(ds, s); err != nil {
		return Dataset{}, err
	}
	if err := setupFolders(ds.DataDir, s.Groups); err != nil {
		return Dataset{}, err
	}
	ph.done("config and folders")
	db := filepath.Join(ds.DataDir, "switchboard.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		return Dataset{}, fmt.Errorf("scalegen: %w", err)
	}
	if s.SeedStore {
		if err := seedStore(ctx, st, s); err != nil {
			st.Close()
			return Dataset{}, err
		}
	}
	if err := st.Close(); err != nil {
		return Dataset{}, fmt.Errorf("scalegen: %w", err)
	}
	ph.done("store")
	if s.Messages > 0 {
		if err := bulkLoad(ctx, db, s, ph); err != nil {
			return Dataset{}, fmt.Errorf("scalegen: bulk-load %d messages: %w", s.Messages, err)
		}
	}
	ds.Took, ds.Phases = time.Since(start), ph.list
	return ds, nil
}

// writeConfig writes switchboard.yaml; the lists are written one item a
// line, as an operator's generated config would be.
func writeConfig(ds Dataset, s Spec) error {
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir: %s\n", strconv.Quote(ds.DataDir))
	fmt.Fprintf(&b, "log: %s\n", or(s.Log, "{level: warn}"))
	fmt.Fprintf(&b, "admin: {listen: %q}\n", or(s.AdminListen, "127.0.0.1:8421"))
	fmt.Fprintf(&b, "adapters: {web: {enabled: true, listen: %q}}\n", or(s.WebListen, "127.0.0.1:8420"))
	cmd := s.AgentCommand
	if len(cmd) == 0 {
		cmd = []string{"switchboard", "demo-agent"}
	}
	fmt.Fprintf(&b, "agent:\n  command: [")
	for i, c := range cmd {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(c))
	}
	mc := s.MaxConcurrent
	if mc <= 0 {
		mc = 4
	}
	fmt.Fprintf(&b, "]\n  max_concurrent: %d\n  sandbox: none\n", mc)
	b.WriteString("limits: {turns_per_sender: {count: 0}, turns_per_chat: {count: 0}}\n")
	b.WriteString("groups:\n  - folder: root\n  - folder: main\n")
	for i := range s.Groups {
		fmt.Fprintf(&b, "  - folder: %s\n", Folder(i))
	}
	if !s.RoutesInConfig {
		b.WriteString("routes: []\n")
	} else {
		b.WriteString("routes:\n")
		for i := range s.Chats {
			fmt.Fprintf(&b, "  - {match: {chat_jid: %q}, target: %s}\n", Chat(i), ChatFolder(i, s.Groups))
		}
	}
	b.WriteString(s.Extra)
	if err := os.WriteFile(ds.Config, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("scalegen: write config: %w", err)
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// setupFolders creates every group's folder (its .mcp.json is rewritten by
// the gateway at start, with the gateway's own path).
func setupFolders(dataDir string, n int) error {
	l := groups.Layout{DataDir: dataDir}
	exe, _ := os.Executable()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := l.Setup(Folder(i), exe); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, f := range []groups.Folder{"root", "main"} {
		if err := l.Setup(f, exe); err != nil {
			return fmt.Errorf("scalegen: %w", err)
		}
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return fmt.Errorf("scalegen: set up folders: %w", first)
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// seedStore writes the groups and routes, and marks the routes seeded so
// that a gateway started on it leaves them alone.
func seedStore(ctx context.Context, st *store.Store, s Spec) error {
	now := time.Now().UnixMilli()
	err := st.Write(ctx, func(tx *sql.Tx) error {
		for _, f := range []groups.Folder{"root", "main"} {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO groups (folder, created_ms) VALUES (?, ?)`, f, now); err != nil {
				return err
			}
		}
		if err := batchInsert(ctx, tx, `INSERT INTO groups (folder, created_ms) VALUES `, "(?, ?)", s.Groups,
			func(i int, args []any) []any { return append(args, Folder(i), now) }); err != nil {
			return err
		}
		if err := batchInsert(ctx, tx, `INSERT INTO routes (seq, match, target, mode, created_ms) VALUES `, "(0, ?, ?, 'trigger', ?)", s.Chats,
			func(i int, args []any) []any {
				return append(args, `{"chat_jid":"`+Chat(i)+`"}`, ChatFolder(i, s.Groups), now)
			}); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO meta (key, value) VALUES ('routes_seeded', '1')`)
		return err
	})
	if err != nil {
		return fmt.Errorf("scalegen: seed groups and routes: %w", err)
	}
	return nil
}

// rowsPerInsert rows go in one INSERT statement.
const rowsPerInsert = 200

// batchInsert inserts n rows with multi-row INSERTs of rowsPerInsert rows.
func batchInsert(ctx context.Context, tx *sql.Tx, head, tuple string, n int, row func(i int, args []any) []any) error {
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	var args []any
	for lo := 0; lo < n; lo += rowsPerInsert {
		hi := min(lo+rowsPerInsert, n)
		st, ok := stmts[hi-lo]
		if !ok {
			var err error
			st, err = tx.PrepareContext(ctx, head+strings.TrimSuffix(strings.Repeat(tuple+",", hi-lo), ","))
			if err != nil {
				return err
			}
			stmts[hi-lo] = st
		}
		args = args[:0]
		for i := lo; i < hi; i++ {
			args = row(i, args)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
	}
	return nil
}

// texter makes message texts: 4 to 24 words drawn with a Zipf law from a
// vocabulary whose first words are common English ones ("the" first,
// "and" fifth), so that searches for common words match millions of
// messages and rare ones a few.
type texter struct {
	zipf  *rand.Zipf
	n     *rand.Rand
	words []string
	b     strings.Builder
}

var commonWords = strings.Fields(`the be to of and a in that have it for not on with he as you do at this but his by
from they we say her she or an will my one all would there their what so up out if about who get which go me when make
can like time no just him know take people into year your good some could them see other than then now look only come
its over think also back after use two how our work first well way even new want because any these give day most us
deploy server error build release ticket review merge branch test issue meeting budget invoice customer report
incident rollback`)

// Query is a find_messages query the benchmarks run on a generated
// installation, by name.
type Query struct{ Name, Query string }

// Queries are the queries of store's BenchmarkFindMessages, in the words
// the generator writes: its commonest word (in about one message in two),
// a common one, two together, a phrase of two of the commonest, an OR of
// two less common, a prefix that starts a few hundred words (a common one
// among them), and its rarest word.
func Queries() []Query {
	return []Query{
		{"commonest", "the"},
		{"common", "deploy"},
		{"two_common", "deploy release"},
		{"phrase", `"the and"`},
		{"or", "incident OR rollback"},
		{"prefix", "ba*"},
		{"rare", Word(19_999)},
	}
}

// Word is the generated texts' word of the given rank (0, "the", is the
// commonest; the last of the 20,000 words is the rarest), for searches
// that must find what the generator wrote.
func Word(rank int) string { return vocabulary(vocabularySeed)[rank] }

// vocabularySeed is the seed of the generated texts' vocabulary.
const vocabularySeed = 1

// vocabulary is the 20,000 words: commonWords, then made-up words.
func vocabulary(seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 2))
	words := slices.Clone(commonWords)
	for i := len(words); i < 20000; i++ {
		words = append(words, syllables(r))
	}
	return words
}

// newTexter draws from words with its own random streams, by seed.
func newTexter(words []string, seed uint64) *texter {
	return &texter{
		zipf:  rand.NewZipf(rand.New(rand.NewPCG(seed, 1)), 1.07, 2, uint64(len(words)-1)),
		n:     rand.New(rand.NewPCG(seed, 3)),
		words: words,
	}
}

func syllables(r *rand.Rand) string {
	const cons, vow = "bcdfghklmnprstvz", "aeiou"
	var b strings.Builder
	for range 2 + r.IntN(3) {
		b.WriteByte(cons[r.IntN(len(cons))])
		b.WriteByte(vow[r.IntN(len(vow))])
	}
	return b.String()
}

func (t *texter) next() string {
	t.b.Reset()
	for i := range 4 + t.n.IntN(21) {
		if i > 0 {
			t.b.WriteByte(' ')
		}
		t.b.WriteString(t.words[t.zipf.Uint64()])
	}
	return t.b.String()
}
