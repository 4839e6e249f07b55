package slack_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
)

func reactionEvent(ts string) map[string]any {
	return map[string]any{"type": "reaction_added", "user": "U2", "reaction": "eyes",
		"item": map[string]any{"type": "message", "channel": "C1", "ts": ts}, "event_ts": ts}
}

func TestEventsAPISignatures(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeEvents, host)
	ts := s.AddMessage("C1", "U1", "hello", "")
	body := slacktest.Callback("Ev1", reactionEvent(ts))
	for _, c := range []struct {
		name   string
		secret string
		at     time.Time
	}{
		{"bad signature", "wrong-secret", time.Now()},
		{"stale signature", slacktest.Secret, time.Now().Add(-6 * time.Minute)},
	} {
		status, err := s.Post(body, c.secret, c.at, "")
		if err != nil || status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, %v; want 401", c.name, status, err)
		}
	}
	if ev := host.Events(); len(ev) != 0 {
		t.Fatalf("refused requests stored %+v", ev)
	}
	status, err := s.Post(body, slacktest.Secret, time.Now(), "")
	if err != nil || status != http.StatusOK {
		t.Fatalf("good signature: status %d, %v", status, err)
	}
	if ev := host.Events(); len(ev) != 1 || ev[0].Kind != adapters.KindReaction || ev[0].Reaction != "eyes" {
		t.Fatalf("stored %+v; want the reaction, stored before the 200", ev)
	}

	// url_verification is answered with the challenge.
	status, answer, err := s.PostBody([]byte(`{"token":"x","challenge":"c-123","type":"url_verification"}`))
	if err != nil || status != http.StatusOK || answer != "c-123" {
		t.Fatalf("url_verification answered %d %q, %v", status, answer, err)
	}
}

// startUntil runs a with host until the returned stop is called, and waits
// for it to report connected.
func startUntil(t *testing.T, a *slack.Adapter, host *adaptertest.Host) (stop func()) {
	t.Helper()
	before, _ := host.States()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, host) }()
	host.Wait(t, 10*time.Second, "connected", func(h *adaptertest.Host) bool {
		st, _ := h.States()
		return len(st) > len(before) && st[len(st)-1] == adapters.StateConnected
	})
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestEventsAPIRetriesAndRestartStoredOnce(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	a := newAdapter(s, slack.ModeEvents)
	stop := startUntil(t, a, host)
	s.EventsURL = "http://" + a.Addr().String() + slack.EventsPath
	ts := s.AddMessage("C1", "U1", "hello", "")
	body := slacktest.Callback("Ev7", reactionEvent(ts))
	for _, retry := range []string{"", "1"} {
		if status, err := s.Post(body, slacktest.Secret, time.Now(), retry); err != nil || status != http.StatusOK {
			t.Fatalf("delivery (retry %q): status %d, %v", retry, status, err)
		}
	}
	// A restart: a new adapter with the same persisted values.
	stop()
	a2 := newAdapter(s, slack.ModeEvents)
	startUntil(t, a2, host)
	s.EventsURL = "http://" + a2.Addr().String() + slack.EventsPath
	if status, err := s.Post(body, slacktest.Secret, time.Now(), "2"); err != nil || status != http.StatusOK {
		t.Fatalf("delivery after restart: status %d, %v", status, err)
	}
	// Reactions are not de-duplicated by the host: only event_id stops them.
	if ev := host.Events(); len(ev) != 1 {
		t.Fatalf("stored %d events %+v; want the reaction once", len(ev), ev)
	}
}

func TestEventsAPIAnswersOnlyAfterStored(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	entered, release := make(chan string, 4), make(chan error)
	host.DeliverFunc = func(ctx context.Context, m adapters.Inbound) (int64, error) {
		entered <- m.ID.String()
		select {
		case err := <-release:
			return 0, err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	start(t, s, slack.ModeEvents, host)
	ts := s.AddMessage("C1", "U1", "hello", "")
	body := slacktest.Callback("Ev9", map[string]any{"type": "message", "channel": "C1", "channel_type": "channel",
		"user": "U1", "text": "hello", "ts": ts, "event_ts": ts})
	answered := make(chan int, 1)
	go func() {
		status, _ := s.Post(body, slacktest.Secret, time.Now(), "")
		answered <- status
	}()
	<-entered
	select {
	case status := <-answered:
		t.Fatalf("answered %d while Deliver blocks", status)
	default:
	}
	release <- errors.New("database is locked")
	if status := <-answered; status != http.StatusInternalServerError {
		t.Fatalf("answered %d when the message was not stored; want 500 so that Slack retries", status)
	}
	go func() {
		status, _ := s.Post(body, slacktest.Secret, time.Now(), "1")
		answered <- status
	}()
	<-entered
	release <- nil
	if status := <-answered; status != http.StatusOK {
		t.Fatalf("retry answered %d", status)
	}
	if ev := host.Events(); len(ev) != 1 || ev[0].ID.String() != ts {
		t.Fatalf("stored %+v; want the retried message", ev)
	}
}

// BenchmarkEventsAPIMessage: one signed message event, verified, parsed,
// normalized, delivered (in-memory host) and answered.
func BenchmarkEventsAPIMessage(b *testing.B) {
	s := slacktest.New(b)
	host := adaptertest.NewHost()
	a := newAdapter(s, slack.ModeEvents)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, host) }()
	defer func() { cancel(); <-done }()
	host.Wait(b, 10*time.Second, "connected", func(h *adaptertest.Host) bool {
		st, _ := h.States()
		return len(st) > 0 && st[len(st)-1] == adapters.StateConnected
	})
	s.EventsURL = "http://" + a.Addr().String() + slack.EventsPath
	b.ResetTimer()
	for i := range b.N {
		ts := fmt.Sprintf("1700000000.%06d", i)
		body := slacktest.Callback(fmt.Sprintf("EvB%d", i), map[string]any{"type": "message", "channel": "C1",
			"channel_type": "channel", "user": "U1", "text": "hello <@U2> see <https://x.io|docs>", "ts": ts, "event_ts": ts})
		if status, err := s.Post(body, slacktest.Secret, time.Now(), ""); err != nil || status != http.StatusOK {
			b.Fatalf("status %d, %v", status, err)
		}
	}
}

// A body over the limit is refused as too large, not as a bad signature.
func TestEventsAPIBodyTooLarge(t *testing.T) {
	s := slacktest.New(t)
	host := adaptertest.NewHost()
	start(t, s, slack.ModeEvents, host)
	body := slacktest.Callback("Ev1", map[string]any{"type": "message", "channel": "C1", "user": "U1",
		"text": strings.Repeat("x", 2<<20), "ts": "1.000001"})
	status, answer, err := s.PostBody(body)
	if err != nil || status != http.StatusRequestEntityTooLarge || strings.Contains(answer, "signature") {
		t.Fatalf("a 2 MB event answered %d %q, %v; want 413", status, answer, err)
	}
	if ev := host.Events(); len(ev) != 0 {
		t.Errorf("stored %+v", ev)
	}
}

// trickle opens a connection to addr that sends the headers of a POST and
// the start of its body, and then nothing.
func trickle(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\nContent-Type: application/json\r\n\r\n{\"type\":", slack.EventsPath)
	return c
}

// A request whose body trickles in is cut off at the read timeout instead
// of holding its connection open for good.
func TestEventsAPISlowBodyCutOff(t *testing.T) {
	s := slacktest.New(t)
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, Mode: slack.ModeEvents, SigningSecret: slacktest.Secret,
		Listen: "127.0.0.1:0", APIURL: s.URL(), EventsReadTimeout: 200 * time.Millisecond})
	adaptertest.Start(t, a, adaptertest.NewHost())
	c := trickle(t, a.Addr().String())
	closed := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, c) // returns when the server closes the connection
		closed <- err
	}()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("a trickling request is still open after 20s; want it cut off at the 200ms read timeout")
	}
}

// The listener holds at most EventsMaxConns connections at once: eight
// trickling clients are served three at a time as the read timeout frees
// their slots.
func TestEventsAPIConnectionCap(t *testing.T) {
	s := slacktest.New(t)
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, Mode: slack.ModeEvents, SigningSecret: slacktest.Secret,
		Listen: "127.0.0.1:0", APIURL: s.URL(), EventsReadTimeout: 100 * time.Millisecond, EventsMaxConns: 3})
	conns := adaptertest.NewConns()
	a.SetConnStateHook(conns.State)
	adaptertest.Start(t, a, adaptertest.NewHost())
	for range 8 {
		trickle(t, a.Addr().String())
	}
	deadline := time.After(20 * time.Second)
	for {
		n, p := conns.Counts()
		if n == 8 {
			if p > 3 {
				t.Errorf("%d connections were open at once; want at most 3", p)
			}
			return
		}
		select {
		case <-conns.Changed():
		case <-deadline:
			t.Fatalf("%d of 8 connections accepted (peak %d)", n, p)
		}
	}
}

// TestEventsListenInUse: in events mode a listen address another program
// holds is a configuration error naming adapters.slack.listen (the gateway
// stops at start with it), not a failure retried with backoff forever.
func TestEventsListenInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	s := slacktest.New(t)
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, Mode: slack.ModeEvents, SigningSecret: slacktest.Secret,
		Listen: busy.Addr().String(), APIURL: s.URL()})
	err = a.Run(t.Context(), adaptertest.NewHost())
	if !errors.Is(err, adapters.ErrConfig) || !strings.Contains(err.Error(), "adapters.slack.listen") {
		t.Fatalf("run: %v; want ErrConfig naming adapters.slack.listen", err)
	}
}
