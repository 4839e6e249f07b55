package gateway

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/ops"
	"switchboard/store"
)

// floodStore fake: a store clock and the holds lifted.
type floodFake struct {
	*fixedClock
	resumed []string
}

func (f *floodFake) ResumeChat(_ context.Context, folder groups.Folder, chat adapters.JID, topic string, _ time.Time) (bool, error) {
	f.resumed = append(f.resumed, string(folder)+"/"+chat.String())
	return true, nil
}

func newTestFloodGuard(limits Limits, h *heldChats, st *floodFake, kicks *[]string) floodGuard {
	f := newFloodGuard(limits.withDefaults(), st.now)
	f.st, f.holder, f.zone, f.log = st, h.holder(), time.UTC, slog.New(slog.DiscardHandler)
	f.kick = func(folder groups.Folder) { *kicks = append(*kicks, string(folder)) }
	return f
}

// A chat over its limit is held until the window allows the next turn and
// told once per window; retries and non-message turns are not counted.
func TestFloodGuardHoldsAChat(t *testing.T) {
	var h heldChats
	st := &floodFake{fixedClock: &fixedClock{t: time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)}}
	var kicks []string
	f := newTestFloodGuard(Limits{TurnsPerChat: Rate{Count: 2, Window: time.Minute}}, &h, st, &kicks)
	check := func(b store.Batch) verdict {
		t.Helper()
		v, err := f.check(context.Background(), turnCandidate{batch: b})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	b := messageBatch("main", "test:room/1", "test:user/ann")
	if check(b) != verdictRun || check(b) != verdictRun {
		t.Fatal("the first two turns were held")
	}
	retry := messageBatch("main", "test:room/1", "test:user/ann")
	retry.Items[0].Attempts = 1
	task := store.Batch{Folder: "main", ChatJID: "test:room/1", Items: []store.WorkItem{{Trigger: store.TriggerTask}}}
	if check(retry) != verdictRun || check(task) != verdictRun {
		t.Error("a retry or a task run was held")
	}
	if check(b) != verdictHeld || check(b) != verdictHeld {
		t.Fatal("the third and fourth turns ran")
	}
	if until := h.deferTo["main/test:room/1/"]; !until.Equal(st.now().Add(time.Minute)) {
		t.Errorf("held until %v", until)
	}
	if len(h.sent) != 1 {
		t.Errorf("told %d times in one window", len(h.sent))
	}
	st.add(time.Minute)
	if check(b) != verdictRun {
		t.Error("held after the window")
	}
}

// A new message from a sender with room lifts a hold that only other
// senders' limits set; a chat's own limit is not lifted.
func TestFloodGuardArrivedLiftsSendersHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits Limits
		lifted bool
	}{
		{"senders' limit", Limits{TurnsPerSender: Rate{Count: 1, Window: time.Minute}}, true},
		{"chat's limit", Limits{TurnsPerChat: Rate{Count: 1, Window: time.Minute}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h heldChats
			st := &floodFake{fixedClock: &fixedClock{t: time.Unix(1e9, 0)}}
			var kicks []string
			f := newTestFloodGuard(tc.limits, &h, st, &kicks)
			b := messageBatch("main", "test:room/1", "test:user/ann")
			f.check(context.Background(), turnCandidate{batch: b})
			if v, _ := f.check(context.Background(), turnCandidate{batch: b}); v != verdictHeld {
				t.Fatal("not held")
			}
			work := []store.WorkItem{{Folder: "main", ChatJID: "test:room/1", Mode: "trigger", Trigger: store.TriggerMessage}}
			f.arrived(context.Background(), store.Message{Sender: "test:user/bob"}, work)
			if lifted := len(st.resumed) == 1 && len(kicks) == 1; lifted != tc.lifted {
				t.Errorf("lifted %v (resumed %v, kicks %v)", lifted, st.resumed, kicks)
			}
		})
	}
}

// deferHook is the store's DeferChat with what a test runs just before
// or just after it.
type deferHook struct {
	*store.Store
	before, after func()
}

func (d *deferHook) DeferChat(ctx context.Context, folder groups.Folder, chat adapters.JID, topic string, until time.Time) error {
	if d.before != nil {
		d.before()
	}
	err := d.Store.DeferChat(ctx, folder, chat, topic, until)
	if d.after != nil {
		d.after()
	}
	return err
}

// One person's flood never holds another person's message back: a
// message from a sender with room that comes while the flood guard is
// holding the chat for someone else's turn (after that turn's batch was
// claimed, before or after the hold is written) is answered at once, not
// after the hold's window, as one that comes after the hold is.
func TestFloodHoldLiftedByMessageDuringIt(t *testing.T) {
	for _, when := range []string{"after the claim", "before the hold is stored", "after the hold is stored"} {
		t.Run(when, func(t *testing.T) {
			ctx := context.Background()
			st := openTestStore(t, "main")
			hook := &deferHook{Store: st}
			var k kicks
			f := newFloodGuard(Limits{TurnsPerSender: Rate{Count: 1, Window: time.Hour}}.withDefaults(), time.Now)
			f.st, f.zone, f.log, f.kick = st, time.UTC, discard, k.kick
			f.holder = chatHolder{st: hook, log: discard, kickAfter: func(groups.Folder, time.Duration) {},
				send: func(context.Context, ops.SendRequest) (store.OutboxItem, error) { return store.OutboxItem{}, nil }}
			enqueue := func(id, sender string) store.Message {
				t.Helper()
				m := store.Message{ChatJID: testChat, ID: adapters.MessageID(id), Sender: adapters.JID(sender), Text: id, Time: time.Now()}
				work := []store.WorkItem{{Folder: "main", ChatJID: testChat, Mode: "trigger", Trigger: store.TriggerMessage}}
				if _, err := st.EnqueueMessage(ctx, &m, work); err != nil {
					t.Fatal(err)
				}
				return m
			}
			bobs := func() {
				m := enqueue("bob-1", "test:user/bob")
				f.arrived(ctx, m, []store.WorkItem{{Folder: "main", ChatJID: testChat, Mode: "trigger", Trigger: store.TriggerMessage}})
			}
			// Ann's first turn used up her limit.
			if v, _ := f.check(ctx, turnCandidate{batch: messageBatch("main", testChat, "test:user/ann")}); v != verdictRun {
				t.Fatal("ann's first turn was held")
			}
			enqueue("ann-2", "test:user/ann")
			b, ok, err := st.NextBatch(ctx, "main", maxBatch)
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			switch when {
			case "after the claim":
				bobs()
			case "before the hold is stored":
				hook.before = bobs
			default:
				hook.after = bobs
			}
			if v, err := f.check(ctx, turnCandidate{batch: b}); v != verdictHeld || err != nil {
				t.Fatalf("ann's second turn: %v, %v; want it held", v, err)
			}
			next, ok, err := st.NextBatch(ctx, "main", maxBatch)
			if err != nil {
				t.Fatal(err)
			}
			if !ok || !slices.ContainsFunc(next.Messages, func(m store.Message) bool { return m.Sender == "test:user/bob" }) {
				t.Errorf("bob's message waits behind ann's flood (next batch %v: %+v)", ok, next.Messages)
			}
			if len(k.list()) == 0 {
				t.Error("the folder was not woken for bob's message")
			}
		})
	}
}
