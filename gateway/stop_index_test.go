package gateway

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// registerTurns registers n turns in the registry, each its own folder in
// its own chat, plus a second folder's turn in chat 0; it returns the
// handles in that order.
func registerTurns(r *stoppable, n int) []stopHandle {
	ctx := context.Background()
	hs := make([]stopHandle, 0, n+1)
	for i := range n {
		b := store.Batch{Folder: groups.Folder(fmt.Sprintf("g%d", i)), ChatJID: adapters.JID(fmt.Sprintf("web:room-%d", i)), Topic: "t"}
		hs = append(hs, r.begin(ctx, fmt.Sprintf("t-%d", i), b))
	}
	return append(hs, r.begin(ctx, "t-other", store.Batch{Folder: "other", ChatJID: "web:room-0", Topic: "t"}))
}

// The registry finds a chat's running turn by folder, chat and topic, and
// all of a chat's, among many; a turn that ended is found no more, and a
// stop reaches only the turn it names.
func TestRunningTurnsByChat(t *testing.T) {
	r := &stoppable{}
	hs := registerTurns(r, 1000)
	if rt := r.running("g500", "web:room-500", "t"); rt == nil || rt.id != "t-500" {
		t.Fatalf("running(g500, room-500) = %+v; want t-500", rt)
	}
	for _, miss := range []struct {
		folder groups.Folder
		chat   adapters.JID
		topic  string
	}{{"g500", "web:room-501", "t"}, {"g500", "web:room-500", ""}, {"g501", "web:room-500", "t"}} {
		if rt := r.running(miss.folder, miss.chat, miss.topic); rt != nil {
			t.Errorf("running(%s, %s, %q) = %s; want none", miss.folder, miss.chat, miss.topic, rt.id)
		}
	}
	ids := func(rts []*stoppableTurn) []string {
		var out []string
		for _, rt := range rts {
			out = append(out, rt.id)
		}
		slices.Sort(out)
		return out
	}
	if got := ids(r.inChat("web:room-0", "t")); !slices.Equal(got, []string{"t-0", "t-other"}) {
		t.Fatalf("inChat(room-0) = %q; want both folders' turns", got)
	}
	if !r.stop("t-other", "web:user/ann") {
		t.Fatal("stop(t-other) = false while it runs")
	}
	if hs[0].stopped() || !hs[len(hs)-1].stopped() {
		t.Fatalf("stop(t-other): t-0 stopped %v, t-other stopped %v; want only t-other", hs[0].stopped(), hs[len(hs)-1].stopped())
	}
	if end := hs[len(hs)-1].end(); end.by != "web:user/ann" {
		t.Errorf("t-other ended by %q; want its stopper", end.by)
	}
	if got := ids(r.inChat("web:room-0", "t")); !slices.Equal(got, []string{"t-0"}) {
		t.Errorf("inChat(room-0) after t-other ended = %q; want t-0 alone", got)
	}
	hs[0].end()
	if rt := r.running("g0", "web:room-0", "t"); rt != nil || len(r.inChat("web:room-0", "t")) != 0 {
		t.Errorf("room-0 still lists a turn after both ended: %v", rt)
	}
	if _, ok := r.byID("t-0"); ok {
		t.Error("byID(t-0) after it ended")
	}
	// The folder's next turn in the chat is found, and the end of one
	// registered before it (a stale handle) leaves it registered.
	next := r.begin(context.Background(), "t-500b", store.Batch{Folder: "g500", ChatJID: "web:room-500", Topic: "t"})
	hs[500].end()
	if rt := r.running("g500", "web:room-500", "t"); rt == nil || rt.id != "t-500b" {
		t.Errorf("running(g500) after the earlier turn's end = %v; want t-500b", rt)
	}
	next.end()
}

// countingMidTurnStore reads every group's mid_turn as mode and counts
// the reads.
type countingMidTurnStore struct {
	mode  string
	reads int
}

func (s *countingMidTurnStore) GroupMidTurn(context.Context, groups.Folder) (string, error) {
	s.reads++
	return s.mode, nil
}

func (s *countingMidTurnStore) SteerMessage(context.Context, *store.Message, store.WorkItem, string) (bool, int64, error) {
	return false, 0, nil
}

func (s *countingMidTurnStore) ResetStarted(context.Context, store.Batch) error { return nil }

// In interrupt mode a message interrupts the turn running in its chat,
// but not the turn that already has it in its batch: under load the
// message's own turn can start between its commit and the interrupt, and
// stopping that turn would run the agent twice on the same question.
func TestMessageDoesNotInterruptItsOwnTurn(t *testing.T) {
	ctx := context.Background()
	r := &stoppable{}
	mt := &midTurns{st: &countingMidTurnStore{mode: string(MidTurnInterrupt)}, running: r, stops: &stopper{running: r, log: discard},
		def: MidTurnQueue, log: discard}
	work := []store.WorkItem{{Folder: "main", ChatJID: "web:room", Seq: 7, Mode: "trigger"}}
	own := r.begin(ctx, "t-own", store.Batch{Folder: "main", ChatJID: "web:room", Items: work})
	mid := mt.message(work)
	mid.interrupt(ctx, store.Message{ChatJID: "web:room", Seq: 7, Sender: "web:user/ann"})
	if own.stopped() {
		t.Fatal("message 7 interrupted the turn answering it")
	}
	later := []store.WorkItem{{Folder: "main", ChatJID: "web:room", Seq: 8, Mode: "trigger"}}
	mid = mt.message(later)
	mid.interrupt(ctx, store.Message{ChatJID: "web:room", Seq: 8, Sender: "web:user/ann"})
	if !own.stopped() {
		t.Fatal("message 8, which came during the turn, did not interrupt it")
	}
	if end := own.end(); !end.requeue || end.by != "web:user/ann" {
		t.Errorf("turn ended %+v; want stopped by ann to run its batch again", end)
	}
}

// A message interrupts the turn that ran when it came, never one that
// started after it: under load its own turn can start and end between its
// commit and the interrupt, and the turn running by then (of a message
// after it) would be stopped and run again for nothing.
func TestMessageDoesNotInterruptALaterTurn(t *testing.T) {
	ctx := context.Background()
	r := &stoppable{}
	mt := &midTurns{st: &countingMidTurnStore{mode: string(MidTurnInterrupt)}, running: r, stops: &stopper{running: r, log: discard},
		def: MidTurnQueue, log: discard}
	work := []store.WorkItem{{Folder: "main", ChatJID: "web:room", Seq: 7, Mode: "trigger"}}
	mid := mt.message(work)
	// 7's own turn ran and ended; the turn of 9, after it, runs now.
	later := r.begin(ctx, "t-9", store.Batch{Folder: "main", ChatJID: "web:room",
		Items: []store.WorkItem{{Folder: "main", ChatJID: "web:room", Seq: 9, Mode: "trigger"}}})
	mid.interrupt(ctx, store.Message{ChatJID: "web:room", Seq: 7, Sender: "web:user/ann"})
	if later.stopped() {
		t.Error("message 7 interrupted the turn of message 9, which started after it")
	}
	later.end()
}

// A message from a channel turn's reply thread (Slack) joins that turn
// (joinInterrupted) and interrupts it; should that turn end before the
// message is stored, the message does not interrupt the channel's next
// turn, which answers someone else in another thread: that turn would
// run again and answer this message there.
func TestThreadMessageInterruptsOnlyTheTurnItJoined(t *testing.T) {
	ctx := context.Background()
	r := &stoppable{}
	mt := &midTurns{st: &countingMidTurnStore{mode: string(MidTurnInterrupt)}, running: r, stops: &stopper{running: r, log: discard},
		def: MidTurnQueue, log: discard}
	channelTurn := func(id string, seq int64, msg adapters.MessageID) stopHandle {
		return r.begin(ctx, id, store.Batch{Folder: "main", ChatJID: "slack:C1",
			Items:    []store.WorkItem{{Folder: "main", ChatJID: "slack:C1", Seq: seq, Mode: "trigger"}},
			Messages: []store.Message{{ChatJID: "slack:C1", ID: msg, Seq: seq}}})
	}
	first := channelTurn("t-first", 3, "1700.1")
	work := []store.WorkItem{{Folder: "main", ChatJID: "slack:C1", Topic: "1700.1", Mode: "trigger"}}
	mid := mt.message(work)
	mid.joinInterrupted(ctx, "slack:U2", work)
	if work[0].Topic != "" {
		t.Fatalf("the thread's message was not addressed to the turn it meets: topic %q", work[0].Topic)
	}
	first.end() // before the message is stored
	next := channelTurn("t-next", 5, "1700.5")
	mid.interrupt(ctx, store.Message{ChatJID: "slack:C1", Topic: "1700.1", Seq: 7, Sender: "slack:U2"})
	if next.stopped() {
		t.Error("a message from the first turn's thread interrupted the next turn, in another thread")
	}
	next.end()

	// The turn it joined, still running, it interrupts.
	first = channelTurn("t-first2", 8, "1700.8")
	work = []store.WorkItem{{Folder: "main", ChatJID: "slack:C1", Topic: "1700.8", Mode: "trigger"}}
	mid = mt.message(work)
	mid.joinInterrupted(ctx, "slack:U2", work)
	mid.interrupt(ctx, store.Message{ChatJID: "slack:C1", Topic: "1700.8", Seq: 10, Sender: "slack:U2"})
	if !first.stopped() {
		t.Error("a message from the turn's thread did not interrupt it")
	}
	first.end()
}

// BenchmarkMidTurnLookup measures what intake does for a message routed
// to a chat whose folder's turn runs, among n running turns: look the turn
// up for steer and interrupt (mode queue: neither acts). It reports the
// store reads of the folder's mode per message.
func BenchmarkMidTurnLookup(b *testing.B) {
	for _, n := range []int{10, 1000, 10_000} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			ctx := context.Background()
			st := &countingMidTurnStore{mode: string(MidTurnQueue)}
			r := &stoppable{}
			registerTurns(r, n)
			mt := &midTurns{st: st, running: r, def: MidTurnQueue, canSteer: true}
			m := store.Message{ChatJID: "web:room-7", Sender: "web:user/ann"}
			work := []store.WorkItem{{Folder: "g7", ChatJID: "web:room-7", Topic: "t", Mode: "trigger"}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				mid := mt.message(work)
				if handled, _ := mid.steer(ctx, &m, func(store.Message) {}); handled {
					b.Fatal("steered in queue mode")
				}
				mid.interrupt(ctx, m)
			}
			b.ReportMetric(float64(st.reads)/float64(b.N), "mode-reads/op")
		})
	}
}

// With stop_by approvers and two groups' turns running in one chat, a
// /stop from the approver of one group stops that group's turn only, and
// the answer says the other was not theirs to stop (not that nothing of
// theirs was stopped); from someone who approves neither, nothing stops.
func TestStopSomeNotYours(t *testing.T) {
	r := &stoppable{}
	hs := registerTurns(r, 1) // t-0 (g0) and t-other (other) in web:room-0
	var answers []string
	s := &stopper{running: r, by: StopByApprovers, log: discard,
		isApprover: func(_ context.Context, folder groups.Folder, who adapters.JID) bool {
			return folder == "g0" && who == "web:user/boss"
		},
		send: func(_ context.Context, req ops.SendRequest) (store.OutboxItem, error) {
			answers = append(answers, req.Text)
			return store.OutboxItem{}, nil
		}}
	s.command(context.Background(), store.Message{ChatJID: "web:room-0", Topic: "t", ID: "m1", Sender: "web:user/ann"})
	if hs[0].stopped() || hs[1].stopped() || !slices.Equal(answers, []string{stopNotYours}) {
		t.Fatalf("ann's /stop: stopped %v %v, answers %q; want nothing stopped and %q", hs[0].stopped(), hs[1].stopped(), answers, stopNotYours)
	}
	s.command(context.Background(), store.Message{ChatJID: "web:room-0", Topic: "t", ID: "m2", Sender: "web:user/boss"})
	if !hs[0].stopped() || hs[1].stopped() {
		t.Fatalf("the boss's /stop: g0 stopped %v, other stopped %v; want g0's turn only", hs[0].stopped(), hs[1].stopped())
	}
	if want := []string{stopNotYours, stopSomeNotYours}; !slices.Equal(answers, want) {
		t.Errorf("answers %q; want %q", answers, want)
	}
}

// steeringStore takes every steered message.
type steeringStore struct{ countingMidTurnStore }

func (s *steeringStore) SteerMessage(_ context.Context, m *store.Message, _ store.WorkItem, _ string) (bool, int64, error) {
	return true, m.Seq, nil
}

// A message that comes after its chat's turn was stopped (/stop, the Stop
// button) is not written into that turn's agent, which is being killed:
// the stopped turn would take it with its batch, settled, and it would
// never be answered ("/stop", then "do this instead"). It waits for the
// next turn.
func TestSteerSkipsAStoppedTurn(t *testing.T) {
	ctx := context.Background()
	r := &stoppable{}
	mt := &midTurns{st: &steeringStore{countingMidTurnStore{mode: string(MidTurnSteer)}}, running: r, stops: &stopper{running: r, log: discard},
		def: MidTurnQueue, canSteer: true, kick: func(groups.Folder) {}, stored: func(adapters.JID, int64) {}, now: time.Now, log: discard}
	work := []store.WorkItem{{Folder: "main", ChatJID: "web:room", Seq: 3, Mode: "trigger"}}
	run := r.begin(ctx, "t-1", store.Batch{Folder: "main", ChatJID: "web:room", Items: work})
	steer := agent.NewSteering()
	var written []int64
	steer.Forward(func(id int64, _ string) bool { written = append(written, id); return true })
	run.steerWith(steer)

	m := store.Message{ChatJID: "web:room", Seq: 5, Sender: "web:user/ann", Text: "and this"}
	mid := mt.message([]store.WorkItem{{Folder: "main", ChatJID: "web:room", Mode: "trigger"}})
	if handled, err := mid.steer(ctx, &m, func(store.Message) {}); !handled || err != nil || !slices.Equal(written, []int64{5}) {
		t.Fatalf("steer into the running turn: %v %v, written %v", handled, err, written)
	}
	r.stop("t-1", "web:user/ann")
	m = store.Message{ChatJID: "web:room", Seq: 7, Sender: "web:user/ann", Text: "do this instead"}
	mid = mt.message([]store.WorkItem{{Folder: "main", ChatJID: "web:room", Mode: "trigger"}})
	if handled, err := mid.steer(ctx, &m, func(store.Message) {}); handled || err != nil {
		t.Errorf("steer after the stop: handled %v, %v; want the message queued for the next turn", handled, err)
	}
	if !slices.Equal(written, []int64{5}) {
		t.Errorf("written into the stopped turn: %v", written)
	}
	if end := run.end(); len(end.steered) != 1 {
		t.Errorf("the stopped turn took %+v; want only the message steered before the stop", end.steered)
	}
}

// /stop stops the turn that ran when it came, not one that started after
// it: "/stop", then a new question at once; should the stopped turn end
// and the new question's turn start before the stop is acted on, the new
// question's turn runs on, and the person is told nothing ran.
func TestStopCommandSparesALaterTurn(t *testing.T) {
	ctx := context.Background()
	r := &stoppable{}
	var answers []string
	s := &stopper{running: r, log: discard, send: func(_ context.Context, req ops.SendRequest) (store.OutboxItem, error) {
		answers = append(answers, req.Text)
		return store.OutboxItem{}, nil
	}}
	later := r.begin(ctx, "t-9", store.Batch{Folder: "main", ChatJID: "web:room",
		Items: []store.WorkItem{{Folder: "main", ChatJID: "web:room", Seq: 9, Mode: "trigger"}}})
	s.command(ctx, store.Message{ChatJID: "web:room", ID: "m7", Seq: 7, Sender: "web:user/ann", Text: "/stop"})
	if later.stopped() {
		t.Error("/stop (message 7) stopped the turn of message 9, which started after it")
	}
	if !slices.Equal(answers, []string{stopNothingRunning}) {
		t.Errorf("answers %q; want %q", answers, stopNothingRunning)
	}
	later.end()
	running := r.begin(ctx, "t-3", store.Batch{Folder: "main", ChatJID: "web:room",
		Items: []store.WorkItem{{Folder: "main", ChatJID: "web:room", Seq: 3, Mode: "trigger"}}})
	s.command(ctx, store.Message{ChatJID: "web:room", ID: "m10", Seq: 10, Sender: "web:user/ann", Text: "/stop"})
	if !running.stopped() {
		t.Error("/stop did not stop the turn running when it came")
	}
	running.end()
}
