package gateway

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/adapters"
	"switchboard/store"
)

// finished records FinishBatch calls.
type finished struct {
	turns []store.Turn
	out   [][]store.OutboxItem
}

func (f *finished) FinishBatch(_ context.Context, _ store.Batch, t store.Turn, out []store.OutboxItem, _ time.Time) error {
	f.turns = append(f.turns, t)
	f.out = append(f.out, out)
	return nil
}

// Work deeper than MaxChain is recorded as a failed turn, not run, and
// the chat told (rate-limited); a batch with a person's message starts
// the chain over.
func TestChainGuard(t *testing.T) {
	var st finished
	woken := 0
	clock := &fixedClock{t: time.Unix(1e9, 0)}
	c := chainGuard{maxChain: 2, st: &st, wakeOutbox: func() { woken++ }, log: slog.New(slog.DiscardHandler),
		notices: &noticeLimiter{last: map[adapters.JID]time.Time{}, every: time.Minute, now: clock.now},
		turns:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "t"}, []string{"trigger", "outcome"})}
	deep := func(depths ...int) turnCandidate {
		b := store.Batch{Folder: "f", ChatJID: "test:room/1"}
		for _, d := range depths {
			b.Items = append(b.Items, store.WorkItem{Trigger: store.TriggerDelegate, Origin: "g", Chain: d})
		}
		return turnCandidate{batch: b, turn: store.Turn{ID: "t-1"}}
	}
	for _, tc := range []struct {
		name   string
		c      turnCandidate
		want   verdict
		stored int
	}{
		{"at the limit", deep(2), verdictRun, 0},
		{"a person's message among deep work", deep(3, 0), verdictRun, 0},
		{"deeper", deep(3), verdictHeld, 1},
		{"deeper again: not told twice", deep(5), verdictHeld, 2},
	} {
		v, err := c.check(context.Background(), tc.c)
		if err != nil || v != tc.want || len(st.turns) != tc.stored {
			t.Errorf("%s: verdict %v err %v, %d recorded", tc.name, v, err, len(st.turns))
		}
	}
	if st.turns[0].Status != store.TurnFailed || !strings.Contains(st.turns[0].Error, "limits.max_chain") {
		t.Errorf("recorded %+v", st.turns[0])
	}
	if len(st.out[0]) != 1 || len(st.out[1]) != 0 || woken != 1 {
		t.Errorf("notices %v, woken %d", st.out, woken)
	}
}
