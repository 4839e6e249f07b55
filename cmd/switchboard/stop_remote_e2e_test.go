package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
	"switchboard/store"
)

// TestE2EStopBeforeWorkerTookTurn: a /stop that comes after the gateway
// published a turn to its worker but before the worker took it (its one
// slot runs another folder's turn) ends the turn `stopped`: no retry, no
// failure notice, no reply, and the live reply (the placeholder that
// carried the Stop button) ends saying "Stopped.", stored as the bot's. The job is taken out
// of the worker's queue: when the slot frees, the worker never starts it.
func TestE2EStopBeforeWorkerTookTurn(t *testing.T) {
	t.Parallel()
	script := fmt.Sprintf(`if grep -q HOLDME "$out/prompt-$n"; then touch "$E2E_OUT/held"; while [ ! -e "$E2E_OUT/release" ]; do sleep 0.05; done; fi
exec %q demo-agent < "$out/prompt-$n"`, switchboardBinary(t))
	dir := newE2E(t, e2eConfig{agent: script, groups: []string{"g0", "g1"}, timeout: "60s", agentExtra: "  runner: nats\n",
		routes: "  - {match: {platform: web, room: r0}, target: g0}\n  - {match: {platform: web, room: r1}, target: g1}\n",
		extra:  "nats: {embedded: true, listen: \"127.0.0.1:0\"}\nmcp: {listen: \"127.0.0.1:0\"}\n"})
	g := startGW(t, dir)
	w := startWorker(t, dir, "w1", embeddedNATSURL(t, g), 1)

	g.mustPost("r0", "ann", "HOLDME")
	testwait.For(t, 30*time.Second, "g0's turn holding the worker's one slot", func() bool {
		_, err := os.Stat(filepath.Join(dir, "out", "held"))
		return err == nil
	})
	draft := webRoomDrafts(t, g, "r1")
	g.mustPost("r1", "bob", "a question for g1")
	var turn string
	testwait.For(t, 30*time.Second, "g1's turn published to the busy worker", func() bool {
		for _, r := range g.records("remote turn published", "", "") {
			if strings.HasSuffix(fmt.Sprint(r["dir"]), string(filepath.Separator)+"g1") {
				turn = fmt.Sprint(r["turn"])
				return true
			}
		}
		return false
	})
	if n := len(w.records("turn starting", "turn", turn)); n != 0 {
		t.Fatalf("the worker started turn %s with its slot busy", turn)
	}
	// The live reply shows the Stop button (on a placeholder: the turn
	// said nothing) while the job waits in the worker's queue.
	testwait.For(t, 30*time.Second, "r1's live reply with its Stop button", func() bool {
		d := draft()
		return len(d.buttons) == 1 && d.buttons[0] == "stop:"+turn
	})
	g.mustPost("r1", "bob", "/stop")
	testwait.For(t, 30*time.Second, "g1's turn recorded stopped", func() bool { return len(g.records("turn stopped", "turn", turn)) == 1 })

	testwait.For(t, 10*time.Second, "r1's live reply saying it stopped", func() bool {
		d := draft()
		return d.text == "Stopped." && len(d.buttons) == 0
	})
	// The live reply is stored as the bot's once the platform has it
	// (liveTurn.storeStopped): the event stream can show it first.
	if bot := g.waitBot("r1", 1); len(bot) != 1 || bot[0].Text != "Stopped." {
		t.Errorf("r1 got %+v from the bot; want nothing but the live reply's end, stored (no reply, no failure notice)", bot)
	}
	if len(g.records("remote turn removed from its worker's queue", "turn", turn)) != 1 {
		t.Errorf("the stopped turn %s was not removed from the worker's queue", turn)
	}
	// The slot frees; r1's next message runs on the worker, after the
	// stopped job had it still been queued: only the new turn runs.
	if err := os.WriteFile(filepath.Join(dir, "out", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if bot := g.waitBot("r0", 1); !strings.Contains(bot[0].Text, "HOLDME") {
		t.Errorf("r0's answer %q; want the demo agent's quoting HOLDME", bot[0].Text)
	}
	g.mustPost("r1", "bob", "after the stop")
	if bot := g.waitBot("r1", 2); len(bot) != 2 || !strings.Contains(bot[1].Text, "after the stop") {
		t.Errorf("r1's bot messages %+v; want the stop's and one answer, to the message after the stop", bot)
	}
	if n := turnCount(dir, "g1"); n != 1 || strings.Contains(turnFile(t, dir, "g1", "prompt", 1), "a question for g1") {
		t.Errorf("g1's agent ran %d times (first prompt %q); want once, for the message after the stop (the stopped turn never ran)",
			n, turnFile(t, dir, "g1", "prompt", 1))
	}
	if len(w.records("turn starting", "turn", turn)) != 0 {
		t.Errorf("the worker started the stopped turn %s", turn)
	}

	st := openStore(t, dir)
	var turns []store.Turn
	testwait.For(t, 20*time.Second, "g1's two turns recorded", func() bool {
		turns, _ = st.Turns(context.Background(), "g1", 10)
		return len(turns) == 2
	})
	// Turns lists the newest first.
	if len(turns) != 2 || turns[1].ID != turn || turns[1].Status != store.TurnStopped || turns[1].Attempt != 1 || turns[1].SessionID != "" {
		t.Fatalf("g1's turns %+v; want %s stopped (attempt 1, no session: its agent never ran), then the next message's", turns, turn)
	}
	if fs, err := st.PendingFolders(context.Background()); err != nil || len(fs) != 0 {
		t.Errorf("pending work in %v (%v); want none: a stopped turn is not retried", fs, err)
	}
	if rec := g.records("turn failed", "turn", turn); len(rec) != 0 {
		t.Errorf("turn %s also recorded failed: %v", turn, rec)
	}
}
