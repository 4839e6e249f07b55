package remote

import (
	"cmp"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"switchboard/agent"
)

// A turn's events (agent.Event, for a live reply) travel from the worker
// to the gateway on core NATS, on eventsSubject(worker, turn): only that
// worker may publish there (workerPermissions), and the gateway listens
// on it only for the turn it gave that worker. One connection publishes
// them in order and one subscription receives them in order; each carries
// its sequence number, and the outcome says how many there were, so Run
// hands them all on (up to RunnerOptions.Grace late) before it returns.
// While the gateway is slow to take them they wait in its subscription's
// buffer (nats.go's pending limits: 500,000 messages, 64 MiB), far above
// what maxTurnEvents and maxTurnEventBytes let a worker send.

// Limits of one turn's events on the worker: past them it publishes only
// the result event (the final text, which replaces what was shown).
const (
	maxTurnEvents     = 20_000
	maxTurnEventBytes = 16 << 20
)

func eventsSubject(worker, turn string) string { return eventsPrefix + worker + "." + turn }

// wireEvent is an agent.Event as published.
type wireEvent struct {
	Seq       int             `json:"seq"`
	Kind      agent.EventKind `json:"kind"`
	Text      string          `json:"text,omitempty"`
	Tool      string          `json:"tool,omitempty"`
	ToolID    string          `json:"tool_id,omitempty"`
	Summary   string          `json:"summary,omitempty"`
	SessionID string          `json:"session_id,omitempty"`
	Usage     *agent.Usage    `json:"usage,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// eventPublisher is a worker's agent.Input.OnEvent for one turn.
type eventPublisher struct {
	nc      *nats.Conn
	subject string
	// maxEvents and maxBytes bound the events published but the result
	// (0: maxTurnEvents, maxTurnEventBytes).
	maxEvents, maxBytes int
	seq                 int // of the last event published
	bytes               int
	dropped             int  // events over the limits, not published
	failed              bool // a publish failed: the connection is gone; the result tells the rest
}

func (p *eventPublisher) publish(e agent.Event) {
	if p.failed || (e.Kind != agent.EventResult && (p.seq >= cmp.Or(p.maxEvents, maxTurnEvents) || p.bytes >= cmp.Or(p.maxBytes, maxTurnEventBytes))) {
		p.dropped++
		return
	}
	w := wireEvent{Seq: p.seq + 1, Kind: e.Kind, Text: e.Text, Tool: e.Tool, ToolID: e.ToolID, Summary: e.Summary,
		SessionID: e.SessionID, IsError: e.IsError}
	if !e.Usage.IsZero() || e.Usage.Refused != "" {
		w.Usage = &e.Usage
	}
	data, err := json.Marshal(w)
	if err == nil {
		err = p.nc.Publish(p.subject, data)
	}
	if err != nil {
		p.failed = true
		p.dropped++
		return
	}
	p.seq++
	p.bytes += len(data)
}

// eventRelay is the gateway's end: it hands a turn's events to onEvent in
// order, once each, and never after close.
type eventRelay struct {
	sub     *nats.Subscription
	onEvent func(agent.Event)
	mu      sync.Mutex
	next    int  // the Seq expected next
	closed  bool // Run returned: no more calls
	arrived chan struct{}
}

// relayEvents subscribes to the events worker publishes for turn.
func relayEvents(nc *nats.Conn, worker, turn string, onEvent func(agent.Event)) (*eventRelay, error) {
	r := &eventRelay{onEvent: onEvent, next: 1, arrived: make(chan struct{}, 1)}
	sub, err := nc.Subscribe(eventsSubject(worker, turn), r.receive)
	if err != nil {
		return nil, err
	}
	r.sub = sub
	return r, nil
}

func (r *eventRelay) receive(m *nats.Msg) {
	var w wireEvent
	if json.Unmarshal(m.Data, &w) != nil {
		return
	}
	switch w.Kind {
	case agent.EventText, agent.EventReplace, agent.EventToolStart, agent.EventToolEnd, agent.EventResult:
	default:
		return
	}
	e := agent.Event{Kind: w.Kind, Text: w.Text, Tool: w.Tool, ToolID: w.ToolID, Summary: w.Summary, SessionID: w.SessionID, IsError: w.IsError}
	if w.Usage != nil {
		e.Usage = w.Usage.Checked() // read from NATS: not believed before it is checked
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || w.Seq < r.next {
		return // late, or a repeat
	}
	r.next = w.Seq + 1 // a gap (a message lost) is skipped: the result tells the end
	r.onEvent(e)
	select {
	case r.arrived <- struct{}{}:
	default:
	}
}

// wait waits until the events up to Seq n arrived, at most until d. A nil
// relay has nothing to wait for.
func (r *eventRelay) wait(n int, d time.Duration) {
	if r == nil {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		r.mu.Lock()
		done := r.next > n
		r.mu.Unlock()
		if done {
			return
		}
		select {
		case <-r.arrived:
		case <-timer.C:
			return
		}
	}
}

// close stops the relay: onEvent is not called once it returns.
func (r *eventRelay) close() {
	if r == nil {
		return
	}
	_ = r.sub.Unsubscribe()
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
}
