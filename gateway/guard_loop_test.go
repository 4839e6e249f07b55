package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/web"
	"switchboard/internal/testagent"
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
			SenderName: "x", Text: "again " + id, Verb: adapters.VerbMessage, FromHost: true}); err != nil {
			t.Fatal(err)
		}
	}
	running := func() bool { _, at := h.g.active.running("main"); return at != nil }

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

// webLoopAgent is an agent that, in each turn of web room room-N, posts
// into the new room room-N+1 over the web chat's HTTP API from this
// machine (the address is in addrFile): each turn starts the next in a
// new room. It appends "room-N <status>" to log.
func webLoopAgent(log, addrFile string) error {
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	addr, err := os.ReadFile(addrFile)
	if err != nil {
		return err
	}
	room := strings.TrimPrefix(os.Getenv("SWITCHBOARD_CHAT_JID"), "web:")
	n, err := strconv.Atoi(strings.TrimPrefix(room, "room-"))
	if err != nil {
		return fmt.Errorf("chat %s: %w", room, err)
	}
	resp, err := http.Post(fmt.Sprintf("http://%s/api/rooms/room-%d/messages", addr, n+1), "application/json",
		strings.NewReader(`{"sender": "ann", "text": "go on"}`))
	if err != nil {
		return err
	}
	resp.Body.Close()
	f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintln(f, room, resp.StatusCode)
	fmt.Println("posted")
	return nil
}

// An agent that posts, in each turn, into a new web room routed to its own
// group (room-1 → room-2 → …) is stopped: echoes may open LoopGuard.NewRooms
// (3 here; 20 by default) new rooms of a group per window, so the agent's fourth new room
// (room-5, posted in room-4's turn) is refused with 429, room-4 gets the
// one pause notice, and nothing more runs: four turns in all.
func TestLoopGuardPausesAgentHoppingWebRooms(t *testing.T) {
	dir := t.TempDir()
	log, addrFile := filepath.Join(dir, "log"), filepath.Join(dir, "addr")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var wa *web.Adapter
	h := newHarness(t, harnessConfig{agent: []string{exe, "web-loop-agent", log, addrFile},
		routes: []routing.Route{{Match: map[string]string{"platform": "web"}, Target: "main"}},
		modify: func(o *Options) {
			wa = web.New(web.Options{Listen: "127.0.0.1:0", History: History{Store: o.Store}})
			o.Adapters = append(o.Adapters, wa)
			o.LoopGuard = LoopGuard{Window: time.Hour, Pause: time.Hour, NewRooms: 3}
		}})
	<-wa.Ready()
	if err := os.WriteFile(addrFile, []byte(wa.Addr()), 0o600); err != nil {
		t.Fatal(err)
	}
	// A person on this machine starts it in room-1.
	resp, err := http.Post("http://"+wa.Addr()+"/api/rooms/room-1/messages", "application/json", strings.NewReader(`{"sender": "ann", "text": "start"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	botSaid := func(room string) []string {
		ms, err := h.st.MessagesAfter(context.Background(), adapters.JID("web:"+room), 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			if m.FromBot {
				out = append(out, m.Text)
			}
		}
		return out
	}
	testwait.For(t, 20*time.Second, "the pause notice in room-4 and room-4's turn over", func() bool {
		said := botSaid("room-4")
		b, _ := os.ReadFile(log)
		return len(said) > 0 && strings.HasPrefix(said[0], "Paused until") && strings.Count(string(b), "\n") == 4
	})
	b, _ := os.ReadFile(log)
	if got, want := strings.Fields(string(b)), []string{"room-1", "202", "room-2", "202", "room-3", "202", "room-4", "429"}; !slices.Equal(got, want) {
		t.Errorf("the agent's turns and posts: %v; want %v (three new rooms, the fourth refused)", got, want)
	}
	testwait.For(t, 10*time.Second, "nothing pending or running", func() bool {
		_, at := h.g.active.running("main")
		return len(h.pending()) == 0 && at == nil
	})
	if ms, _ := h.st.MessagesAfter(context.Background(), "web:room-5", 0, 10); len(ms) != 0 {
		t.Errorf("room-5 was stored: %+v", ms)
	}
	if n := len(h.turns("main")); n != 4 {
		t.Errorf("%d turns; want 4", n)
	}
}

// Messages from this machine that open new web rooms while the group they
// route to runs a turn are refused past LoopGuard.NewRooms (429, saying
// why and what to do, not stored); a post into an existing room, and new
// rooms opened from another address, are not.
func TestLoopGuardRefusesNewRoomsFromHost(t *testing.T) {
	dir := t.TempDir()
	var wa *web.Adapter
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, `cat >/dev/null; while [ ! -f "$1/go" ]; do sleep 0.01; done; echo ok`, dir),
		routes: []routing.Route{{Match: map[string]string{"platform": "web"}, Target: "main"}},
		modify: func(o *Options) {
			wa = web.New(web.Options{Listen: "127.0.0.1:0", History: History{Store: o.Store}})
			o.Adapters = append(o.Adapters, wa)
			o.LoopGuard = LoopGuard{NewRooms: 2, Window: time.Hour}
		}})
	<-wa.Ready()
	defer os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)
	post := func(room string) (int, string, string) {
		resp, err := http.Post("http://"+wa.Addr()+"/api/rooms/"+room+"/messages", "application/json", strings.NewReader(`{"sender": "ann", "text": "hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header.Get("Retry-After")
	}
	// Idle: a person on this machine opens a room.
	if status, body, _ := post("lobby"); status != http.StatusAccepted {
		t.Fatalf("post to lobby while idle: %d %s", status, body)
	}
	testwait.For(t, 10*time.Second, "main's turn running", func() bool { _, at := h.g.active.running("main"); return at != nil })
	// During main's turn: two new rooms, then refused.
	for _, room := range []string{"n1", "n2"} {
		if status, body, _ := post(room); status != http.StatusAccepted {
			t.Fatalf("post to new room %s: %d %s; want 202", room, status, body)
		}
	}
	status, body, retry := post("n3")
	if status != http.StatusTooManyRequests || !strings.Contains(body, "new room n3 refused") ||
		!strings.Contains(body, "post into an existing room") || retry == "" {
		t.Errorf("third new room: %d %s (Retry-After %q); want 429 saying why and what to do", status, body, retry)
	}
	if ms, _ := h.st.MessagesAfter(context.Background(), "web:n3", 0, 10); len(ms) != 0 {
		t.Errorf("the refused message was stored: %+v", ms)
	}
	if status, body, _ := post("lobby"); status != http.StatusAccepted {
		t.Errorf("post to an existing room during the turn: %d %s; want 202", status, body)
	}
	testwait.For(t, 10*time.Second, "the pause notice in lobby (the room of the turn)", func() bool {
		ms, err := h.st.MessagesAfter(context.Background(), "web:lobby", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.FromBot && strings.HasPrefix(m.Text, "Paused until") && strings.Contains(m.Text, "opened 2 new web rooms") {
				return true
			}
		}
		return false
	})
	// From another address (not this machine): not refused.
	for i := range 3 {
		if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: adapters.JID(fmt.Sprintf("web:far-%d", i)), ID: adapters.MessageID(fmt.Sprint("f", i)),
			Sender: "web:user/bob", Text: "hello", Verb: adapters.VerbMention}); err != nil {
			t.Errorf("new room from another address: %v", err)
		}
	}
}

// The guard's decisions for one folder's web rooms, on a fake clock: a
// room's echo turns in a row pause it (another room's row is its own); a
// room with a person's message runs and starts its row over; starts older
// than the window no longer count; a new room past NewRooms is refused
// and pauses the folder's echo-only rooms, not a person's.
func TestLoopsPerFolder(t *testing.T) {
	clock := newFakeClock()
	l := &loops{cfg: LoopGuard{Turns: 3, Window: time.Minute, Pause: 10 * time.Minute, NewRooms: 2}.withDefaults(), now: clock.Now}
	room := func(n int) loopKey { return loopKey{"main", adapters.JID(fmt.Sprintf("web:room-%d", n)), ""} }
	step := func(k loopKey, wantHold, wantCaught bool) {
		t.Helper()
		_, caught, hold := l.started(k, 0)
		if hold != wantHold || caught != wantCaught {
			t.Fatalf("start of %v: hold %v caught %v; want %v %v", k, hold, caught, wantHold, wantCaught)
		}
	}
	l.arrived(room(1), false, 0) // a person
	step(room(1), false, false)
	step(room(1), false, false) // echoes
	step(room(2), false, false) // another room's row
	step(room(1), true, true)   // room-1's third in a row: paused
	step(room(2), false, false)
	l.arrived(room(2), false, 0)
	step(room(2), false, false) // a person: room-2's row starts over
	step(room(2), false, false)
	clock.Advance(2 * time.Minute) // the row leaves the window
	step(room(2), false, false)
	step(room(2), false, false)
	step(room(2), true, true)

	for range 2 {
		if w, _, _ := l.openRoom("main"); w != 0 {
			t.Fatalf("new room refused after %v", w)
		}
	}
	w, _, caught := l.openRoom("main")
	if w <= 0 || w > time.Minute || !caught {
		t.Fatalf("third new room within the window: wait %v caught %v; want refused, and the folder paused", w, caught)
	}
	if _, _, caught := l.openRoom("main"); caught {
		t.Error("a second refusal caught the folder again (a second notice)")
	}
	if w, _, _ := l.openRoom("other"); w != 0 {
		t.Errorf("another folder's new room refused: %v", w)
	}
	step(room(3), true, false) // echo-only: waits out the folder's pause, untold
	l.arrived(room(4), false, 0)
	step(room(4), false, false) // a person's room runs
	clock.Advance(10 * time.Minute)
	step(room(3), false, false)
}
