package gateway

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// loopFake is the loop guard's store: a clock and the rooms that have
// messages.
type loopFake struct {
	*fixedClock
	rooms map[adapters.JID]bool
}

func (l *loopFake) MessagesAfter(_ context.Context, chat adapters.JID, _ int64, _ int) ([]store.Message, error) {
	if l.rooms[chat] {
		return []store.Message{{ChatJID: chat}}, nil
	}
	return nil, nil
}

func newTestLoopGuard(cfg LoopGuard, h *heldChats, active *activeTurns, clock *fixedClock) loopGuard {
	l := newLoopGuard(cfg, clock.now)
	l.st, l.active, l.holder, l.send = &loopFake{fixedClock: clock, rooms: map[adapters.JID]bool{"web:room/old": true}}, active, h.holder(), h.holder().send
	l.zone, l.log = time.UTC, slog.New(slog.DiscardHandler)
	return l
}

// A web room pauses at the Turns-th turn in a row of which all but the
// first were started by echoes (posts from this machine while its folder
// runs a turn); a person's message starts the row over.
func TestLoopGuardPausesAnEchoingRoom(t *testing.T) {
	var h heldChats
	clock := &fixedClock{t: time.Unix(1e9, 0)}
	active := &activeTurns{}
	l := newTestLoopGuard(LoopGuard{Turns: 3}, &h, active, clock)
	b := messageBatch("main", "web:room/a", "web:user/x")
	work := []store.WorkItem{{Folder: "main", ChatJID: "web:room/a", Mode: "trigger", Trigger: store.TriggerMessage}}
	m := store.Message{ChatJID: "web:room/a"}
	turn := func() verdict {
		t.Helper()
		v, err := l.check(context.Background(), turnCandidate{batch: b})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	l.arrived(m, work, false) // a person
	if turn() != verdictRun {
		t.Fatal("a person's turn was held")
	}
	active.started("t1", b) // the agent runs and posts
	l.arrived(m, work, true)
	if turn() != verdictRun {
		t.Fatal("paused early")
	}
	if turn() != verdictHeld {
		t.Fatal("the third turn in a row ran")
	}
	if len(h.sent) != 1 || len(h.deferTo) != 1 {
		t.Errorf("notices %d, holds %d", len(h.sent), len(h.deferTo))
	}
	other := messageBatch("main", "test:room/1", "test:user/ann") // not a web room
	if v, _ := l.check(context.Background(), turnCandidate{batch: other}); v != verdictRun {
		t.Error("a non-web room was held")
	}
}

// Echoes may open NewRooms new rooms per window; the next is refused with
// a RetryAfterError, an existing room is not, nor a post while the folder
// runs nothing.
func TestLoopGuardRefusesNewRooms(t *testing.T) {
	var h heldChats
	clock := &fixedClock{t: time.Unix(1e9, 0)}
	active := &activeTurns{}
	l := newTestLoopGuard(LoopGuard{NewRooms: 2}, &h, active, clock)
	post := func(room string) error {
		in := adapters.Inbound{Chat: adapters.JID("web:room/" + room), FromHost: true}
		return l.refuse(context.Background(), in, []store.WorkItem{{Folder: "main", Mode: "trigger"}})
	}
	if err := post("n0"); err != nil {
		t.Fatalf("refused while the folder runs nothing: %v", err)
	}
	active.started("t1", messageBatch("main", "web:room/a", "web:user/x"))
	if post("n1") != nil || post("n2") != nil || post("old") != nil {
		t.Fatal("refused within the limit or an existing room")
	}
	var ra *adapters.RetryAfterError
	if err := post("n3"); !errors.As(err, &ra) || ra.Wait <= 0 {
		t.Fatalf("third new room: %v", err)
	}
	if len(h.sent) != 1 || h.sent[0].Chat != "web:room/a" {
		t.Errorf("the running turn's room was not told: %+v", h.sent)
	}
}

// A person's message that comes after an echo-only turn of its room was
// claimed, before that turn starts, is not used up by that turn: its own
// turn, next, runs as a person's (its room's row starts over), not as one
// more echo in a row, which paused the room and held the person's message
// for the pause.
func TestLoopGuardPersonAfterAnEchoTurnsClaim(t *testing.T) {
	var h heldChats
	clock := &fixedClock{t: time.Unix(1e9, 0)}
	active := &activeTurns{}
	l := newTestLoopGuard(LoopGuard{Turns: 2}, &h, active, clock)
	const room = "web:room/a"
	work := []store.WorkItem{{Folder: "main", ChatJID: room, Mode: "trigger", Trigger: store.TriggerMessage}}
	batch := func(seq int64) store.Batch {
		b := messageBatch("main", room, "web:user/x")
		b.Items[0].Seq, b.Messages[0].Seq = seq, seq
		return b
	}
	check := func(b store.Batch) verdict {
		t.Helper()
		v, err := l.check(context.Background(), turnCandidate{batch: b})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	active.started("t1", batch(1)) // the agent runs and posts message 5
	l.arrived(store.Message{ChatJID: room, Seq: 5}, work, true)
	active.finished("t1")
	echo := batch(5) // claimed; then a person writes message 9
	l.arrived(store.Message{ChatJID: room, Seq: 9}, work, false)
	if check(echo) != verdictRun {
		t.Fatal("the echo's turn was held")
	}
	if check(batch(9)) != verdictRun {
		t.Error("the person's message was held as an echo turn in a row")
	}
	if len(h.sent) != 0 {
		t.Errorf("notices %+v; want none", h.sent)
	}
}
