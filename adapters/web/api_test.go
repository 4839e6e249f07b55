package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/internal/testwait"
)

func decode[T any](t *testing.T, body string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
	return v
}

func TestPostStoresMessage(t *testing.T) {
	s := start(t, nil)
	status, body := s.post(t, "lobby", `{"sender": "ann", "text": "hi there", "name": "Ann K", "topic": "plans"}`)
	if status != http.StatusAccepted {
		t.Fatalf("status %d %s, want 202", status, body)
	}
	resp := decode[postResponse](t, body)
	if !strings.HasPrefix(resp.ID.String(), "w-") || resp.Seq != 1 {
		t.Fatalf("response %+v, want id w-… and seq 1", resp)
	}
	got := s.g.stored()
	if len(got) != 1 {
		t.Fatalf("stored %d messages, want 1", len(got))
	}
	m := got[0]
	want := adapters.Inbound{Chat: "web:lobby", ChatName: "lobby", ID: resp.ID, Sender: "web:user/ann",
		SenderName: "Ann K", Text: "hi there", Topic: "plans", Verb: adapters.VerbMention, Time: m.Time, FromHost: true}
	if fmt.Sprint(m.Inbound) != fmt.Sprint(want) {
		t.Errorf("stored\n %+v\nwant\n %+v", m.Inbound, want)
	}
	if m.Time.IsZero() || m.Time.Location().String() != "UTC" {
		t.Errorf("time %v, want now in UTC", m.Time)
	}
	for _, p := range []string{adapters.JID("web:lobby").String(), "web:user/ann"} {
		if _, err := adapters.ParseJID(p); err != nil {
			t.Errorf("minted JID %q is invalid: %v", p, err)
		}
	}

	// Without a name, the display name is the sender.
	_, body = s.post(t, "lobby", `{"sender": "bob", "text": "yo"}`)
	if seq := decode[postResponse](t, body).Seq; seq != 2 || s.g.stored()[1].SenderName != "bob" {
		t.Errorf("second message: seq %d name %q, want 2 and bob", seq, s.g.stored()[1].SenderName)
	}
}

func TestPostValidation(t *testing.T) {
	ok := `{"sender": "ann", "text": "hi"}`
	tests := []struct {
		name        string
		room        string
		contentType string
		body        string
		status      int
		mention     string // the error must name this
	}{
		{"bad room", "no!room", "", ok, 400, "room"},
		{"room too long", strings.Repeat("r", 65), "", ok, 400, "room"},
		{"room of dots", "...", "", ok, 400, "room"},
		{"missing sender", "lobby", "", `{"text": "hi"}`, 400, "sender"},
		{"bad sender", "lobby", "", `{"sender": "ann smith", "text": "hi"}`, 400, "sender"},
		{"sender too long", "lobby", "", `{"sender": "` + strings.Repeat("a", 65) + `", "text": "hi"}`, 400, "sender"},
		{"missing text", "lobby", "", `{"sender": "ann"}`, 400, "text"},
		{"blank text", "lobby", "", `{"sender": "ann", "text": " \n\t "}`, 400, "text"},
		{"huge text", "lobby", "", `{"sender": "ann", "text": "` + strings.Repeat("x", maxText+1) + `"}`, 400, "text"},
		{"text not a string", "lobby", "", `{"sender": "ann", "text": 5}`, 400, `"text"`},
		{"unknown field", "lobby", "", `{"sender": "ann", "text": "hi", "colour": "red"}`, 400, `unknown field "colour"`},
		{"not JSON", "lobby", "", `hello`, 400, "JSON"},
		{"broken JSON", "lobby", "", `{"sender": "ann", "text": `, 400, "JSON"},
		{"JSON array", "lobby", "", `[{"sender": "ann", "text": "hi"}]`, 400, "JSON object"},
		{"empty body", "lobby", "", ``, 400, "JSON object"},
		{"two objects", "lobby", "", ok + ok, 400, "single JSON object"},
		{"too large body", "lobby", "", `{"sender": "ann", "text": "hi", "name": "` + strings.Repeat("n", maxBody) + `"}`, 413, "body"},
		{"bad client id", "lobby", "", `{"id": "a b", "sender": "ann", "text": "hi"}`, 400, "id"},
		{"long name", "lobby", "", `{"sender": "ann", "name": "` + strings.Repeat("n", 65) + `", "text": "hi"}`, 400, "name"},
		{"control in topic", "lobby", "", `{"sender": "ann", "topic": "a\u0007", "text": "hi"}`, 400, "topic"},
		{"form content type, bad body", "lobby", "application/x-www-form-urlencoded", `sender=ann&text=hi`, 400, "JSON"},
	}
	s := start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct := tt.contentType
			if ct == "" {
				ct = "application/json; charset=utf-8"
			}
			status, body := s.do(t, http.MethodPost, "/api/rooms/"+tt.room+"/messages", ct, tt.body)
			if status != tt.status {
				t.Fatalf("status %d (%s), want %d", status, body, tt.status)
			}
			msg := decode[map[string]string](t, body)["error"]
			if !strings.Contains(msg, tt.mention) {
				t.Errorf("error %q does not mention %q", msg, tt.mention)
			}
		})
	}
	if n := s.g.deliverCalls(); n != 0 {
		t.Errorf("deliver called %d times for invalid requests, want 0", n)
	}
}

func TestPostDeliverErrorIs503(t *testing.T) {
	s := start(t, nil)
	s.g.fail = errors.New("database is locked")
	status, body := s.post(t, "lobby", `{"sender": "ann", "text": "hi"}`)
	if status != http.StatusServiceUnavailable {
		t.Fatalf("status %d %s, want 503", status, body)
	}
	if msg := decode[map[string]string](t, body)["error"]; !strings.Contains(msg, "not stored") {
		t.Errorf("error %q should say the message was not stored", msg)
	}
}

// A post the gateway refuses for now (*adapters.RetryAfterError: the loop
// guard) is answered 429 with the gateway's reason and a Retry-After.
func TestPostRefusedForNowIs429(t *testing.T) {
	s := start(t, nil)
	s.g.fail = fmt.Errorf("new room n3 refused: post into an existing room, or wait: %w", &adapters.RetryAfterError{Wait: 90 * time.Second})
	resp, err := s.client.Post(s.base+"/api/rooms/n3/messages", "application/json", strings.NewReader(`{"sender": "ann", "text": "hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "90" {
		t.Fatalf("status %d, Retry-After %q, %s; want 429 and 90", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if msg := decode[map[string]string](t, body)["error"]; !strings.Contains(msg, "new room n3 refused: post into an existing room") {
		t.Errorf("error %q, want the gateway's reason", msg)
	}
}

// Posts from loopback or from one of this machine's addresses are marked
// FromHost (an agent on the host can post so); others are not.
func TestFromHost(t *testing.T) {
	a := New(Options{})
	a.host.list = func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("10.1.2.3"), Mask: net.CIDRMask(8, 32)}}, nil
	}
	for remote, want := range map[string]bool{
		"127.0.0.1:5555": true, "[::1]:5555": true, "10.1.2.3:5555": true, "[::ffff:10.1.2.3]:5555": true,
		"10.1.2.4:5555": false, "192.0.2.7:5555": false, "[2001:db8::1]:5555": false, "garbage": false,
	} {
		if got := a.fromHost(remote); got != want {
			t.Errorf("fromHost(%s) = %v, want %v", remote, got, want)
		}
	}
}

// The ids the adapter gives posted messages are unique and sort in the
// order the messages were posted (the store's index on them grows at its
// end), also within one millisecond's ids only by their random part.
func TestPostedIDsSortByTime(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	seen := map[adapters.MessageID]bool{}
	var prev adapters.MessageID
	for i := range 50 {
		in, err := inbound("lobby", postRequest{Sender: "ann", Text: "hi"}, "", t0.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^w-[0-9a-f]{28}$`).MatchString(in.ID.String()) || seen[in.ID] {
			t.Fatalf("id %q: want w- and 28 hex digits, unique", in.ID)
		}
		if in.ID <= prev {
			t.Fatalf("id %q posted after %q sorts before it", in.ID, prev)
		}
		seen[in.ID], prev = true, in.ID
	}
	again, _ := inbound("lobby", postRequest{Sender: "ann", Text: "hi"}, "", t0)
	if seen[again.ID] {
		t.Fatalf("two posts in one millisecond got the same id %q", again.ID)
	}
}

func TestPostClientIDIsIdempotent(t *testing.T) {
	s := start(t, nil)
	const body = `{"id": "c1-retry", "sender": "ann", "text": "once"}`
	_, first := s.post(t, "lobby", body)
	status, second := s.post(t, "lobby", body)
	if status != http.StatusAccepted {
		t.Fatalf("retry status %d %s, want 202", status, second)
	}
	a, b := decode[postResponse](t, first), decode[postResponse](t, second)
	if a != b || a.ID != "w-c1-retry" {
		t.Errorf("first %+v, retry %+v: want the same id w-c1-retry and seq", a, b)
	}
	if n := len(s.g.stored()); n != 1 {
		t.Errorf("stored %d messages, want 1", n)
	}
	// The same client id in another room is another message.
	_, other := s.post(t, "kitchen", body)
	if decode[postResponse](t, other).Seq == a.Seq {
		t.Error("same client id in another room was de-duplicated")
	}
}

// A client id names one message of the room (§4: a message is (chat JID,
// platform id)): a post that reuses it for another text, sender or topic
// is not that message's retry, and is not stored. Answering 202 with the
// first message's id and seq told the user their text was taken when it was
// dropped; the answer is 409 naming the id and the stored message's seq.
func TestPostReusedClientIDWithOtherContent(t *testing.T) {
	s := start(t, nil)
	_, first := s.post(t, "lobby", `{"id": "c1", "sender": "ann", "text": "first"}`)
	orig := decode[postResponse](t, first)
	for _, tc := range []struct{ name, body string }{
		{"other text", `{"id": "c1", "sender": "ann", "text": "second"}`},
		{"other sender", `{"id": "c1", "sender": "bob", "text": "first"}`},
		{"other topic", `{"id": "c1", "sender": "ann", "text": "first", "topic": "t1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := s.post(t, "lobby", tc.body)
			if status != http.StatusConflict {
				t.Fatalf("status %d %s, want 409", status, body)
			}
			got := decode[map[string]any](t, body)
			msg, _ := got["error"].(string)
			if !strings.Contains(msg, `"c1"`) || !strings.Contains(msg, fmt.Sprint(orig.Seq)) || !strings.Contains(msg, "not stored") {
				t.Errorf("error %q: want it to name the id \"c1\", the stored seq %d and say the post was not stored", msg, orig.Seq)
			}
			if got["id"] != string(orig.ID) || got["seq"] != float64(orig.Seq) {
				t.Errorf("body %s: want the stored message's id %q and seq %d", body, orig.ID, orig.Seq)
			}
		})
	}
	msgs := s.g.stored()
	if len(msgs) != 1 || msgs[0].Text != "first" {
		t.Fatalf("stored %+v, want only the first message", msgs)
	}
	// A true retry (same sender, text, topic; a display name may differ)
	// is still answered 202 with the first message's id and seq.
	status, again := s.post(t, "lobby", `{"id": "c1", "sender": "ann", "name": "Ann", "text": "first"}`)
	if status != http.StatusAccepted || decode[postResponse](t, again) != orig {
		t.Errorf("retry: %d %s, want 202 %+v", status, again, orig)
	}
}

func TestGetMessages(t *testing.T) {
	s := start(t, nil)
	for i := range 4 {
		s.g.seed("lobby", "ann", fmt.Sprintf("m%d", i+1))
	}
	s.g.seed("kitchen", "bob", "elsewhere") // seq 5, another room
	botSeq := s.g.reply(t, s.a, "web:lobby", "hello ann")

	status, body := s.do(t, http.MethodGet, "/api/rooms/lobby/messages?after=2&limit=2", "", "")
	if status != http.StatusOK {
		t.Fatalf("status %d %s", status, body)
	}
	got := decode[messagesResponse](t, body).Messages
	if len(got) != 2 || got[0].Seq != 3 || got[1].Seq != 4 {
		t.Fatalf("after=2&limit=2 gave %+v, want seqs 3 and 4", got)
	}
	m := got[0]
	if m.Sender != "ann" || m.Name != "ann" || m.Text != "m3" || m.FromBot || m.ID != "seed-m3" {
		t.Errorf("message %+v", m)
	}
	if m.Time != "2026-03-01T12:30:05.123Z" {
		t.Errorf("time %q, want RFC 3339 UTC with ms", m.Time)
	}
	for _, key := range []string{`"seq"`, `"id"`, `"sender"`, `"name"`, `"text"`, `"time"`, `"from_bot"`, `"topic"`} {
		if !strings.Contains(body, key) {
			t.Errorf("response lacks %s: %s", key, body)
		}
	}

	_, body = s.do(t, http.MethodGet, "/api/rooms/lobby/messages", "", "")
	all := decode[messagesResponse](t, body).Messages
	if len(all) != 5 || all[4].Seq != botSeq {
		t.Fatalf("default query gave %d messages, want 5 ending with the bot's", len(all))
	}
	if bot := all[4]; !bot.FromBot || bot.Sender != "sb" || bot.Name != "sb" || !strings.HasPrefix(bot.ID.String(), "b-") {
		t.Errorf("bot message %+v, want from_bot, sender and name sb, id b-…", bot)
	}

	_, body = s.do(t, http.MethodGet, "/api/rooms/empty/messages", "", "")
	if !strings.Contains(body, `"messages":[]`) {
		t.Errorf("empty room: %s, want an empty list, not null", body)
	}

	for _, q := range []string{"after=x", "after=-1", "limit=0", "limit=1001", "limit=ten"} {
		status, body := s.do(t, http.MethodGet, "/api/rooms/lobby/messages?"+q, "", "")
		field, _, _ := strings.Cut(q, "=")
		if status != http.StatusBadRequest || !strings.Contains(body, field) {
			t.Errorf("?%s: %d %s, want 400 naming %s", q, status, body, field)
		}
	}
	if status, _ := s.do(t, http.MethodGet, "/api/rooms/a*b/messages", "", ""); status != http.StatusBadRequest {
		t.Errorf("bad room: status %d, want 400", status)
	}
}

func TestSend(t *testing.T) {
	a := New(Options{History: newFakeGateway()})
	if a.Name() != "web" {
		t.Errorf("name %q", a.Name())
	}
	ids := make(map[adapters.MessageID]bool)
	for range 1000 {
		id, err := a.Send(t.Context(), adapters.Outbound{Chat: "web:lobby", Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`^b-[0-9a-f]{16}$`).MatchString(id.String()) || ids[id] {
			t.Fatalf("id %q: want a fresh b-<hex>", id)
		}
		ids[id] = true
	}
	for _, chat := range []adapters.JID{"telegram:user/1", "web:", "web:a/b", "web"} {
		_, err := a.Send(t.Context(), adapters.Outbound{Chat: chat, Text: "hi"})
		if !errors.Is(err, adapters.ErrPermanent) {
			t.Errorf("send to %q: %v, want ErrPermanent", chat, err)
		}
	}
}

func TestRunPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	a := New(Options{Listen: addr, History: newFakeGateway()})
	err = a.Run(t.Context(), &adaptertest.Host{DeliverFunc: newFakeGateway().deliver})
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "adapters.web.listen") {
		t.Fatalf("run on a taken port: %v, want an error naming %s and adapters.web.listen", err, addr)
	}
}

func TestPageAndHeaders(t *testing.T) {
	s := start(t, nil)
	resp, err := s.client.Get(s.base + "/?room=lobby")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("page: %d %s", resp.StatusCode, h.Get("Content-Type"))
	}
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("page lacks X-Content-Type-Options: nosniff")
	}
	for path, want := range map[string]string{
		"/static/app.js":    "EventSource",
		"/static/style.css": ".msg.bot",
		"/healthz":          "ok",
	} {
		if status, body := s.do(t, http.MethodGet, path, "", ""); status != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, body lacks %q", path, status, want)
		}
	}
	for _, path := range []string{"/static/", "/nope"} {
		if status, _ := s.do(t, http.MethodGet, path, "", ""); status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, status)
		}
	}
}

func TestBrowserAttacksRejected(t *testing.T) {
	s := start(t, nil)
	// DNS rebinding: a remote name resolved to 127.0.0.1.
	status, body := s.do(t, http.MethodGet, "/api/rooms/lobby/messages", "", "", "Host", "evil.example:80")
	if status != http.StatusForbidden || !strings.Contains(body, "evil.example") {
		t.Errorf("foreign Host: %d %s, want 403", status, body)
	}
	// CSRF: another site's page posting into the chat.
	status, _ = s.do(t, http.MethodPost, "/api/rooms/lobby/messages", "application/json",
		`{"sender": "ann", "text": "hi"}`, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if status != http.StatusForbidden {
		t.Errorf("cross-site POST: %d, want 403", status)
	}
	if n := s.g.deliverCalls(); n != 0 {
		t.Errorf("deliver called %d times", n)
	}
	for _, host := range []string{"localhost:1", "127.0.0.1:1", "[::1]:1", "LOCALHOST"} {
		if !adapters.LoopbackHost(host) {
			t.Errorf("adapters.LoopbackHost(%q) = false", host)
		}
	}
}

func TestRunLifecycle(t *testing.T) {
	g := newFakeGateway()
	a := New(Options{Listen: "127.0.0.1:0", History: g})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := a.Run(ctx, &adaptertest.Host{DeliverFunc: g.deliver}); err != nil {
		t.Errorf("run with a cancelled context: %v, want nil", err)
	}
	if err := a.Run(t.Context(), &adaptertest.Host{DeliverFunc: g.deliver}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Errorf("second run: %v, want an error", err)
	}
	if err := New(Options{Listen: "127.0.0.1:0"}).Run(t.Context(), &adaptertest.Host{DeliverFunc: g.deliver}); err == nil || !strings.Contains(err.Error(), "history") {
		t.Errorf("run without history: %v, want an error", err)
	}
}

// curl -d sends application/x-www-form-urlencoded; a JSON body is what counts.
func TestPostAcceptsJSONBodyWithAnyContentType(t *testing.T) {
	s := start(t, nil)
	for _, ct := range []string{"application/x-www-form-urlencoded", "", "text/plain"} {
		status, body := s.do(t, http.MethodPost, "/api/rooms/lobby/messages", ct, `{"sender": "ann", "text": "hi"}`)
		if status != http.StatusAccepted {
			t.Errorf("content type %q: status %d (%s), want 202", ct, status, body)
		}
	}
}

// A POST whose body stops arriving is closed at the body deadline, even
// after the handler answered and net/http would discard the rest.
func TestStalledBodyClosedAtDeadline(t *testing.T) {
	s := start(t, func(a *Adapter) { a.bodyDeadline = 200 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Content-Length promises more than is sent: the handler reads what
	// came (invalid JSON), answers 400, and the rest never arrives.
	fmt.Fprintf(conn, "POST /api/rooms/lobby/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"sender\":")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		t.Fatalf("the server held the stalled connection open: %v", err)
	}
}

// A client that asks for a long page of history and then reads nothing
// must not hold the server's goroutine and the page's bytes forever (the
// server has no WriteTimeout, as event streams outlive it): the
// connection is closed once the client has taken nothing for the stall
// deadline.
func TestStalledReaderClosedAtDeadline(t *testing.T) {
	closed := make(chan struct{})
	var once sync.Once
	s := start(t, func(a *Adapter) {
		a.stallDeadline = 200 * time.Millisecond
		a.connState = func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				once.Do(func() { close(closed) })
			}
		}
	})
	text := strings.Repeat("x", maxText-16)
	for i := range maxLimit {
		s.g.seed("lobby", "ann", fmt.Sprintf("%06d%s", i, text)) // ~16 MB in all
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(conn, "GET /api/rooms/lobby/messages?limit=%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", maxLimit)
	// Read nothing: the server fills the socket buffers and then stalls.
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the server still holds the connection of a client that stopped reading")
	}
}

// The server holds at most maxConns connections at once; more wait to be
// accepted, so that idle connections cannot take every file descriptor of
// the gateway. Five idle clients are served three at a time.
func TestConnectionCap(t *testing.T) {
	conns := adaptertest.NewConns()
	s := start(t, func(a *Adapter) {
		a.maxConns = 3
		a.connState = conns.State
	})
	counts := conns.Counts
	var clients []net.Conn
	for range 5 {
		c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	testwait.For(t, 10*time.Second, "three connections accepted", func() bool { n, _ := counts(); return n >= 3 })
	for _, c := range clients {
		c.Close() // frees the slots: the waiting two are accepted and end
	}
	testwait.For(t, 10*time.Second, "all five connections accepted", func() bool { n, _ := counts(); return n == 5 })
	if _, p := counts(); p > 3 {
		t.Errorf("%d connections were open at once; want at most 3", p)
	}
	// The cap leaves the server serving.
	if status, body := s.do(t, http.MethodGet, "/healthz", "", ""); status != http.StatusOK {
		t.Errorf("GET /healthz after the flood: %d %s", status, body)
	}
}

// Every request's body must arrive within the body deadline, not only a
// posted message's: a button press, an approval decision or a GET whose
// body stops arriving is closed too, instead of holding a goroutine
// forever (the server has no ReadTimeout: event streams outlive it).
func TestStalledBodyClosedAtDeadlineOnEveryRequest(t *testing.T) {
	s := start(t, func(a *Adapter) { a.bodyDeadline = 200 * time.Millisecond })
	for _, req := range []string{"POST /api/rooms/lobby/messages", "POST /api/rooms/lobby/press", "POST /api/approvals/a1", "GET /api/rooms/lobby/messages"} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		// Content-Length promises more than is sent, and the rest never
		// arrives.
		fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"sender\":", req)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadAll(conn); err != nil {
			t.Errorf("%s: the server held the stalled connection open: %v", req, err)
		}
		conn.Close()
	}
}

// TestPostBlankTopicIsNoTopic: a topic of spaces (a script's or a form's
// blank field) posts into the room itself. It was stored as the topic "   ",
// a thread of its own, so the bot's answer went into a thread the room
// could not tell apart from the room.
func TestPostBlankTopicIsNoTopic(t *testing.T) {
	s := start(t, nil)
	if status, body := s.post(t, "lobby", `{"sender": "ann", "text": "hi", "topic": "   "}`); status != http.StatusAccepted {
		t.Fatalf("status %d %s, want 202", status, body)
	}
	if got := s.g.stored(); len(got) != 1 || got[0].Topic != "" {
		t.Errorf("stored %+v, want one message without a topic", got)
	}
}
