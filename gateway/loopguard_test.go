package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
	"switchboard/routing"
)

// gatedAgent is an agent whose turns each wait until the test lets them
// finish: it counts its runs in dir/runs and ends once dir/go exists.
func gatedAgent(t *testing.T) (argv []string, runs func() int, release func()) {
	dir := t.TempDir()
	script := fmt.Sprintf(`echo x >> %[1]s/runs; while [ ! -f %[1]s/go ]; do sleep 0.01; done; rm -f %[1]s/go; echo ok`, dir)
	runs = func() int {
		b, _ := os.ReadFile(filepath.Join(dir, "runs"))
		return strings.Count(string(b), "x")
	}
	release = func() {
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"sh", "-c", script}, runs, release
}

// A web room whose turns keep being started by messages that arrived while
// its folder's turn ran (the agent posting into its own room) is paused
// with one notice after LoopGuard.Turns such turns; its last message is
// kept and answered once the pause is over. A room whose messages arrive
// while the folder is idle (a person) never pauses.
func TestLoopGuardPausesSelfTriggeringWebRoom(t *testing.T) {
	const room = "web:lobby"
	argv, runs, release := gatedAgent(t)
	web := newFakeAdapter("web")
	h := newHarness(t, harnessConfig{agent: argv,
		routes: []routing.Route{{Match: map[string]string{"platform": "web"}, Target: "main"}, {Match: map[string]string{"platform": "test"}, Target: "main"}},
		modify: func(o *Options) {
			o.Adapters = append(o.Adapters, web)
			o.LoopGuard = LoopGuard{Turns: 3, Window: time.Hour, Pause: 5 * time.Second}
		}})
	<-web.ready
	post := func(id string) {
		if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: room, ID: adapters.MessageID(id), Sender: "web:user/bot-ish",
			SenderName: "x", Text: "again " + id, Verb: adapters.VerbMessage}); err != nil {
			t.Fatal(err)
		}
	}
	running := func() bool { _, at := h.g.runningTurn("main"); return at != nil }

	// A person: each message arrives while main is idle; no pause.
	for i := range 4 {
		post(fmt.Sprint("p", i))
		testwait.For(t, 10*time.Second, "the turn running", running)
		release()
		testwait.For(t, 10*time.Second, "the reply", func() bool { return len(web.sentTo(room)) == i+1 })
	}
	// The echo: each turn posts the message that starts the next. e0
	// (posted while idle) starts turn 1; e1, posted during it, turn 2; e2,
	// posted during turn 2, would start the third turn in a row: paused.
	before := runs()
	post("e0")
	for i := 1; i <= 2; i++ {
		testwait.For(t, 10*time.Second, "the turn running", func() bool { return runs() == before+i && running() })
		post(fmt.Sprint("e", i)) // arrives while the turn runs
		release()
	}
	testwait.For(t, 10*time.Second, "the pause notice", func() bool {
		for _, m := range web.sentTo(room) {
			if strings.HasPrefix(m.Text, "Paused until") {
				return true
			}
		}
		return false
	})
	if n := runs() - before; n != 2 {
		t.Errorf("the agent ran %d times before the pause; want 2", n)
	}
	if p := h.pending(); len(p) != 1 || p[0] != "main" {
		t.Errorf("pending during the pause: %v; want e2 kept for main", p)
	}
	// After the pause, e2 is answered: the message was kept.
	testwait.For(t, 20*time.Second, "e2 answered after the pause", func() bool { return runs() == before+3 && running() })
	release()
	testwait.For(t, 10*time.Second, "nothing left pending", func() bool { return len(h.pending()) == 0 })
	notices := 0
	for _, m := range web.sentTo(room) {
		if strings.HasPrefix(m.Text, "Paused until") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("%d pause notices; want 1", notices)
	}
}
