package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchboard/store"
)

// finishStore records a turn's outcome.
type finishStore interface {
	FinishBatch(ctx context.Context, b store.Batch, t store.Turn, out []store.OutboxItem, retryAt time.Time) error
}

// chainGuard stops a chain of turns that agents start for each other
// (delegate_group, escalate_group, inject_message) deeper than
// Limits.MaxChain. A work item carries its depth (work.chain).
type chainGuard struct {
	maxChain   int
	st         finishStore
	notices    *noticeLimiter
	turns      *prometheus.CounterVec // switchboard_turns_total
	wakeOutbox func()
	log        *slog.Logger
}

// check settles a batch deeper than maxChain without running it: a failed
// turn whose error says why (switchboard status and the turn history show
// it), a log line, and a notice to the chat.
func (c chainGuard) check(ctx context.Context, tc turnCandidate) (verdict, error) {
	b, turn := tc.batch, tc.turn
	depth, limit := chainDepth(b), c.maxChain
	if depth <= limit {
		return verdictRun, nil
	}
	first := b.Items[0]
	turn.Status = store.TurnFailed
	turn.ExitCode = -1
	turn.Error = fmt.Sprintf("delegation chain deeper than %d: this %s from %s is hop %d; not run (limits.max_chain)",
		limit, first.Trigger, orNone(string(first.Origin)), depth)
	c.log.Warn("delegation chain stopped", "folder", b.Folder, "jid", b.ChatJID, "origin", first.Origin,
		"trigger", first.Trigger, "depth", depth, "max_chain", limit)
	c.turns.WithLabelValues(string(first.Trigger), "stopped").Inc()
	var out []store.OutboxItem
	if c.notices.allow(b.ChatJID) {
		out = append(out, store.OutboxItem{Key: turn.ID + "/notice", Kind: store.OutboxNotice, Folder: b.Folder, ChatJID: b.ChatJID,
			Topic: b.Topic, Text: fmt.Sprintf("Stopped: agents kept starting turns for each other here (%s → %s, %d hops; the limit is %d). "+
				"The last request was not run.", orNone(string(first.Origin)), b.Folder, depth, limit)})
	}
	if err := c.st.FinishBatch(context.WithoutCancel(ctx), b, turn, out, time.Time{}); err != nil {
		// Not run either way; the item stays and is stopped again.
		return verdictHeld, fmt.Errorf("record stopped chain of turn %s: %w", turn.ID, err)
	}
	if len(out) > 0 {
		c.wakeOutbox()
	}
	return verdictHeld, nil
}

// chainDepth is the depth of b's turn: the shallowest of its items. A
// message batch that carries a person's message (depth 0) besides an
// agent's injected one starts over: someone is there, and nothing of it
// is stopped.
func chainDepth(b store.Batch) int {
	d := b.Items[0].Chain
	for _, it := range b.Items[1:] {
		d = min(d, it.Chain)
	}
	return d
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
