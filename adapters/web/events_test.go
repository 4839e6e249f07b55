package web

import (
	"bufio"
	"encoding/json"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// sse is an open event stream as a client sees it.
type sse struct {
	resp   *http.Response
	events chan sseEvent // closed at the end of the stream
}

type sseEvent struct {
	id      string
	data    string
	comment string
}

// openEvents opens GET path with optional header pairs and parses events in
// a goroutine that ends when the stream does (or the test closes it).
func (s *server) openEvents(t *testing.T, path string, header ...string) *sse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Transport: s.client.Transport} // no timeout: streams are long
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("open %s: status %d", path, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	st := &sse{resp: resp, events: make(chan sseEvent, 100)}
	go func() {
		defer close(st.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev != (sseEvent{}) {
					st.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ev.comment = line
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	t.Cleanup(func() { resp.Body.Close() })
	return st
}

// next returns the next message event, skipping comments and retry hints.
func (st *sse) next(t *testing.T) messageView {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-st.events:
			if !ok {
				t.Fatal("event stream ended")
			}
			if ev.data == "" {
				continue
			}
			var m messageView
			if err := json.Unmarshal([]byte(ev.data), &m); err != nil {
				t.Fatalf("event data %q: %v", ev.data, err)
			}
			if ev.id != strconv.FormatInt(m.Seq, 10) {
				t.Errorf("event id %q, data seq %d", ev.id, m.Seq)
			}
			return m
		case <-timeout:
			t.Fatal("no event within 5s")
		}
	}
}

func TestEventsBacklogThenLive(t *testing.T) {
	s := start(t, nil)
	s.g.seed("lobby", "ann", "one")
	s.g.seed("lobby", "ann", "two")
	s.g.seed("kitchen", "bob", "not here")

	st := s.openEvents(t, "/api/rooms/lobby/events?after=0")
	for _, want := range []string{"one", "two"} {
		if m := st.next(t); m.Text != want {
			t.Fatalf("backlog: got %q, want %q", m.Text, want)
		}
	}
	s.post(t, "lobby", `{"sender": "bob", "text": "three"}`)
	if m := st.next(t); m.Text != "three" || m.Seq != 4 || m.Sender != "bob" {
		t.Fatalf("live: %+v, want bob's three at seq 4", m)
	}
	s.post(t, "kitchen", `{"sender": "bob", "text": "elsewhere"}`) // seq 5, other room
	botSeq := s.g.reply(t, s.a, "web:lobby", "hi bob")
	if m := st.next(t); m.Seq != botSeq || !m.FromBot || m.Sender != "sb" {
		t.Fatalf("bot reply: %+v, want seq %d from the bot", m, botSeq)
	}
	st.resp.Body.Close()

	// A reconnecting EventSource sends Last-Event-ID and its original URL:
	// the stream resumes after the last event, without duplicates.
	re := s.openEvents(t, "/api/rooms/lobby/events?after=0", "Last-Event-ID", strconv.FormatInt(botSeq, 10))
	s.post(t, "lobby", `{"sender": "ann", "text": "after reconnect"}`)
	if m := re.next(t); m.Text != "after reconnect" {
		t.Fatalf("after reconnect got %+v (a duplicate?), want the new message", m)
	}
}

func TestEventsWithoutCursorOnlyNew(t *testing.T) {
	s := start(t, nil)
	for range 3 {
		s.g.seed("lobby", "ann", "old "+strconv.Itoa(len(s.g.stored())))
	}
	st := s.openEvents(t, "/api/rooms/lobby/events")
	s.post(t, "lobby", `{"sender": "ann", "text": "new"}`)
	if m := st.next(t); m.Text != "new" {
		t.Fatalf("got %+v, want only the new message", m)
	}
	if status, _ := s.do(t, http.MethodGet, "/api/rooms/lobby/events", "", "", "Last-Event-ID", "x"); status != http.StatusBadRequest {
		t.Errorf("bad Last-Event-ID: status %d, want 400", status)
	}
}

func TestEventsKeepAlive(t *testing.T) {
	s := start(t, func(a *Adapter) { a.keepAlive = 10 * time.Millisecond })
	st := s.openEvents(t, "/api/rooms/lobby/events")
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev := <-st.events:
			if ev.comment != "" {
				return
			}
		case <-timeout:
			t.Fatal("no keep-alive comment within 5s")
		}
	}
}

func TestEventsLimit(t *testing.T) {
	s := start(t, func(a *Adapter) { a.streams = make(chan struct{}, 2) })
	s.openEvents(t, "/api/rooms/lobby/events")
	s.openEvents(t, "/api/rooms/other/events")
	status, body := s.do(t, http.MethodGet, "/api/rooms/lobby/events", "", "")
	if status != http.StatusServiceUnavailable || !strings.Contains(body, "too many") {
		t.Fatalf("third stream: %d %s, want 503", status, body)
	}
}

func TestShutdownEndsStreams(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		s := start(t, nil)
		var streams []*sse
		for _, room := range []string{"lobby", "lobby", "kitchen"} {
			streams = append(streams, s.openEvents(t, "/api/rooms/"+room+"/events"))
		}
		s.post(t, "lobby", `{"sender": "ann", "text": "hi"}`)
		streams[0].next(t) // the streams are live
		began := time.Now()
		s.stop(t)
		// Streams must end at once, not by the forced close after the grace.
		if took := time.Since(began); took >= shutdownGrace {
			t.Errorf("shutdown took %v: streams held it up", took)
		}
		for i, st := range streams {
			select {
			case _, ok := <-drain(st.events):
				if ok {
					t.Errorf("stream %d: unexpected value", i)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("stream %d still open after shutdown", i)
			}
			st.resp.Body.Close()
		}
		if n := s.a.hub.count(); n != 0 {
			t.Errorf("%d subscribers left after shutdown", n)
		}
	}()
	// The HTTP client's and server's connection goroutines end after the
	// streams closed, with no event to wait on: poll the count, bounded.
	if !testwait.Until(5*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		n := runtime.NumGoroutine()
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines after shutdown, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// drain returns a channel closed once events is closed, discarding events.
func drain(events chan sseEvent) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for range events {
		}
		close(done)
	}()
	return done
}

func TestStoredIgnoresOtherPlatformsAndNeverBlocks(t *testing.T) {
	a := New(Options{History: newFakeGateway()})
	sub := a.hub.subscribe("web:lobby")
	done := make(chan struct{})
	go func() {
		for range 100 {
			a.Stored("web:lobby", 1) // nobody reads: must coalesce, not block
			a.Stored("telegram:group/1", 1)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Stored blocked")
	}
	if len(sub.wake) != 1 {
		t.Errorf("pending wake-ups %d, want 1", len(sub.wake))
	}
	a.hub.unsubscribe("web:lobby", sub)
	if a.hub.count() != 0 {
		t.Error("subscriber left after unsubscribe")
	}
}
