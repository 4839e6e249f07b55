package gateway

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
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
