package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/routing"
)

// hammer collects what concurrent workers did to one database.
type hammer struct {
	gw, cli *Store // two handles on one file: the gateway and the CLI
	writing atomic.Int32
	reads   atomic.Int64

	mu   sync.Mutex
	errs []error
	seqs []int64
}

func (h *hammer) fail(err error) {
	h.mu.Lock()
	h.errs = append(h.errs, err)
	h.mu.Unlock()
}

func (h *hammer) record(ms ...*Message) {
	h.mu.Lock()
	for _, m := range ms {
		h.seqs = append(h.seqs, m.Seq)
	}
	h.mu.Unlock()
}

func (h *hammer) insertSingles(ctx context.Context, w, n int) {
	defer h.writing.Add(-1)
	for i := range n {
		m := &Message{ChatJID: adapters.JID(fmt.Sprintf("web:room%d", i%4)), ID: adapters.MessageID(fmt.Sprintf("w%d-%d", w, i)), Text: "hello concurrent world"}
		if _, err := h.gw.InsertMessage(ctx, m); err != nil {
			h.fail(err)
			return
		}
		h.record(m)
	}
}

// insertBatches alternates between the two handles.
func (h *hammer) insertBatches(ctx context.Context, b, batches, size int) {
	defer h.writing.Add(-1)
	for i := range batches {
		var ms []*Message
		for j := range size {
			ms = append(ms, &Message{ChatJID: "telegram:group/1", ID: adapters.MessageID(fmt.Sprintf("b%d-%d-%d", b, i, j)), Text: "batch text"})
		}
		st := []*Store{h.gw, h.cli}[i%2]
		if _, err := st.InsertMessages(ctx, ms); err != nil {
			h.fail(err)
			return
		}
		h.record(ms...)
	}
}

// changeConfig is the CLI editing groups, routes and grants meanwhile.
func (h *hammer) changeConfig(ctx context.Context, n int) {
	defer h.writing.Add(-1)
	for i := range n {
		folder := groups.Folder(fmt.Sprintf("g%d", i%5))
		if _, err := h.cli.EnsureGroup(ctx, folder); err != nil {
			h.fail(err)
			return
		}
		if _, err := h.cli.AddRoute(ctx, routing.Route{Seq: i, Target: folder}); err != nil {
			h.fail(err)
			return
		}
		if err := h.cli.SetGrantOverrides(ctx, folder, []string{fmt.Sprintf("rule%d", i)}); err != nil {
			h.fail(err)
			return
		}
	}
}

// read runs one kind of read until the writers are done.
func (h *hammer) read(ctx context.Context, kind int) {
	for h.writing.Load() > 0 {
		var err error
		switch kind {
		case 0:
			_, err = h.gw.MessagesAfter(ctx, "web:room1", 0, 50)
		case 1:
			_, err = h.gw.Search(ctx, "concurrent OR batch", SearchOptions{Limit: 10})
		case 2:
			_, err = h.gw.Revision(ctx)
		default:
			_, err = h.gw.ListRoutes(ctx)
		}
		if err != nil {
			h.fail(err)
			return
		}
		h.reads.Add(1)
	}
}

// TestConcurrentWritersAndReaders hammers one database from many goroutines
// and from a second handle (the CLI while the gateway runs): single inserts,
// batches and config changes, while readers page, search and poll. Nothing
// may fail with "database is locked", and every message must be stored once.
func TestConcurrentWritersAndReaders(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchboard.db")
	h := &hammer{gw: openAt(t, path), cli: openAt(t, path)}
	const (
		writers, perWriter           = 8, 150
		batchers, batches, batchSize = 2, 10, 25
		wantStored                   = writers*perWriter + batchers*batches*batchSize
	)
	var wg sync.WaitGroup
	h.writing.Store(writers + batchers + 1)
	for w := range writers {
		wg.Go(func() { h.insertSingles(ctx, w, perWriter) })
	}
	for b := range batchers {
		wg.Go(func() { h.insertBatches(ctx, b, batches, batchSize) })
	}
	wg.Go(func() { h.changeConfig(ctx, 40) })
	for r := range 4 {
		wg.Go(func() { h.read(ctx, r) })
	}
	wg.Wait()

	for _, err := range h.errs {
		t.Error(err)
	}
	if len(h.seqs) != wantStored {
		t.Fatalf("recorded %d seqs, want %d", len(h.seqs), wantStored)
	}
	sort.Slice(h.seqs, func(i, j int) bool { return h.seqs[i] < h.seqs[j] })
	for i := 1; i < len(h.seqs); i++ {
		if h.seqs[i] == h.seqs[i-1] {
			t.Fatalf("seq %d given to two messages", h.seqs[i])
		}
	}
	var n int
	if err := h.gw.Read().QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil || n != wantStored {
		t.Errorf("stored %d messages, %v; want %d", n, err, wantStored)
	}
	if rs, _ := h.gw.ListRoutes(ctx); len(rs) != 40 {
		t.Errorf("%d routes stored, want 40", len(rs))
	}
	if h.reads.Load() == 0 {
		t.Error("readers never completed a read while writers ran")
	}
	t.Logf("%d reads completed during the writes", h.reads.Load())
}
