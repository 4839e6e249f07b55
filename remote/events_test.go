package remote

import (
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"switchboard/agent"
	"switchboard/internal/testagent"
)

// eventLog collects a turn's events.
type eventLog struct {
	mu     sync.Mutex
	events []agent.Event
}

func (l *eventLog) add(e agent.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []agent.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// claudeFixture is the absolute path of a recorded Claude Code stream.
func claudeFixture(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "agent", "testdata", "claude-stream", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A remote turn's events reach the gateway's OnEvent, all of them, in
// order, before Run returns: the same events a local run of the same
// agent gives.
func TestRemoteTurnEvents(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	fixture := claudeFixture(t, "tool.jsonl")
	r := newRunner(t, nc, "cat "+fixture, 0)
	spec := agent.Spec{Timeout: 20 * time.Second, Output: agent.OutputClaudeStream}
	var remote eventLog
	in := turnInput(t, "t-ev1")
	in.OnEvent = remote.add
	res, err := r.Run(t.Context(), spec, in)
	if err != nil {
		t.Fatal(err)
	}
	got := remote.all()

	var local eventLog
	spec.Command = []string{"/bin/sh", "-c", "cat " + fixture}
	lres, err := agent.Run(t.Context(), spec, agent.Input{OnEvent: local.add})
	if err != nil {
		t.Fatal(err)
	}
	want := local.all()
	if len(want) < 5 || !slices.Equal(got, want) {
		t.Errorf("remote events:\n%+v\nlocal events of the same agent:\n%+v", got, want)
	}
	if res.Reply != lres.Reply || res.Usage != lres.Usage || got[len(got)-1].Usage != lres.Usage {
		t.Errorf("remote reply %q usage %+v; local %q %+v", res.Reply, res.Usage, lres.Reply, lres.Usage)
	}
	// Without OnEvent the worker publishes none.
	spy := spyConn(t, nc)
	sub, err := spy.SubscribeSync(eventsPrefix + ">")
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(t.Context(), spec, turnInput(t, "t-ev2")); err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := sub.Pending(); n != 0 {
		t.Errorf("%d events published for a turn nobody follows", n)
	}
}

// Events arrive at the gateway while the agent on the worker runs: the
// agent prints the start of its stream and waits until the gateway has
// seen an event before it prints the rest. Were events only relayed with
// the result, the turn would time out.
func TestRemoteTurnEventsLive(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	gate := testagent.NewGate(t, 15*time.Second)
	fixture := claudeFixture(t, "long.jsonl")
	r := newRunner(t, nc, fmt.Sprintf(`head -n 8 %s; read -r go < %s; tail -n +9 %s`, fixture, gate.Path, fixture), 0)
	var log eventLog
	in := turnInput(t, "t-live")
	in.OnEvent = func(e agent.Event) {
		log.add(e)
		gate.Seen()
	}
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 30 * time.Second, Output: agent.OutputClaudeStream}, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := gate.Wait(); err != nil {
		t.Fatal(err)
	}
	events := log.all()
	if last := events[len(events)-1]; last.Kind != agent.EventResult || last.Text != res.Reply || len(events) < 10 {
		t.Errorf("%d events, the last %+v; want the deltas, then the result %q", len(events), last, res.Reply)
	}
}

// A worker publishes at most its limits of events for a turn, and then
// only the result; the gateway hands on what came, in order, once each,
// and nothing after the relay is closed.
func TestRemoteEventLimits(t *testing.T) {
	nc := natsConn(t)
	wc := workerConn(t, nc, "w1")
	var log eventLog
	relay, err := relayEvents(nc, "w1", "t-lim", log.add)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	pub := &eventPublisher{nc: wc, subject: eventsSubject("w1", "t-lim"), maxEvents: 3}
	for i := range 5 {
		pub.publish(agent.Event{Kind: agent.EventText, Text: fmt.Sprint(i)})
	}
	// A repeat of an earlier event is not handed on twice.
	if err := wc.Publish(eventsSubject("w1", "t-lim"), []byte(`{"seq":2,"kind":"text","text":"again"}`)); err != nil {
		t.Fatal(err)
	}
	pub.publish(agent.Event{Kind: agent.EventResult, Text: "01234", Usage: agent.Usage{CostUSD: 0.5}})
	if pub.seq != 4 || pub.dropped != 2 {
		t.Errorf("published %d, dropped %d; want 4 (3 texts and the result) and 2", pub.seq, pub.dropped)
	}
	relay.wait(pub.seq, 10*time.Second)
	if err := wc.Flush(); err != nil {
		t.Fatal(err)
	}
	relay.close()
	// An event that reached the relay after it closed (its subscription
	// may still hand one over) is not passed on.
	relay.receive(&nats.Msg{Subject: eventsSubject("w1", "t-lim"), Data: []byte(`{"seq":5,"kind":"text","text":"late"}`)})
	var got []string
	for _, e := range log.all() {
		got = append(got, string(e.Kind)+":"+e.Text)
	}
	if want := []string{"text:0", "text:1", "text:2", "result:01234"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	if es := log.all(); len(es) == 4 && es[3].Usage.CostUSD != 0.5 {
		t.Errorf("result usage %+v, want its cost 0.5", es[3].Usage)
	}
}
