package ipc_test

// What a client of the MCP HTTP endpoint can hold, with a token or without:
// a body that trickles in, an idle keep-alive connection, connections past
// the cap; and that the streams of authenticated requests outlive those
// bounds.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/gateway"
	"switchboard/store"
)

// newHarnessHTTP runs the gateway with the MCP HTTP endpoint configured by m
// (on a free loopback port).
func newHarnessHTTP(t testing.TB, m gateway.MCPHTTP) *harness {
	t.Helper()
	dir := shortTempDir(t)
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := standardSetup(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	m.Listen, m.PassToAgents = "127.0.0.1:0", true
	return startMCP(t, dir, st, []string{"true"}, m)
}

// dialEndpoint opens a raw TCP connection to the endpoint of URL u.
func dialEndpoint(t testing.TB, u string) net.Conn {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitServerClose reads c until the server closes it; it fails the test
// when that has not happened within 20 s.
func waitServerClose(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the server still holds the connection after 20 s", what)
	}
}

// A POST whose headers arrive but whose body trickles is cut off at the
// body timeout, with a valid token or without one.
func TestHTTPSlowBodyCutOff(t *testing.T) {
	h := newHarnessHTTP(t, gateway.MCPHTTP{BodyTimeout: 200 * time.Millisecond})
	u := h.mcpURL(t)
	for name, tok := range map[string]string{"no token": "", "valid token": h.token(t, "acme")} {
		t.Run(name, func(t *testing.T) {
			c := dialEndpoint(t, u)
			auth := ""
			if tok != "" {
				auth = "Authorization: Bearer " + tok + "\r\n"
			}
			fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", c.RemoteAddr(), auth)
			waitServerClose(t, c, "a body trickling in")
		})
	}
}

// An idle keep-alive connection is closed after the idle timeout.
func TestHTTPIdleConnectionClosed(t *testing.T) {
	h := newHarnessHTTP(t, gateway.MCPHTTP{IdleTimeout: 200 * time.Millisecond})
	c := dialEndpoint(t, h.mcpURL(t))
	br := bufio.NewReader(c)
	resp := roundTrip(t, c, br)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET without a token: %d, want 401", resp.StatusCode)
	}
	waitServerClose(t, c, "an idle keep-alive connection")
}

// roundTrip sends a GET of the endpoint without a token on c (kept alive)
// and reads the response.
func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader) *http.Response {
	t.Helper()
	fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\n\r\n", c.RemoteAddr())
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// At most MaxConns connections are served at once: with two kept alive, a
// third is answered only once one of them is closed.
func TestHTTPConnectionCap(t *testing.T) {
	h := newHarnessHTTP(t, gateway.MCPHTTP{MaxConns: 2, IdleTimeout: time.Minute})
	u := h.mcpURL(t)
	var held []net.Conn
	for range 2 {
		c := dialEndpoint(t, u)
		roundTrip(t, c, bufio.NewReader(c))
		held = append(held, c)
	}
	third := dialEndpoint(t, u)
	fmt.Fprintf(third, "GET /mcp HTTP/1.1\r\nHost: %s\r\n\r\n", third.RemoteAddr())
	br := bufio.NewReader(third)
	_ = third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := br.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection was answered while two were open (%v); want it to wait for a slot", err)
	}
	held[0].Close()
	_ = third.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("the third connection after one of two closed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("third connection: %d, want 401", resp.StatusCode)
	}
}

// The body timeout ends at the request's body: an authenticated session's
// notification stream (a legacy GET stream, a 2026-07-28 listen stream)
// still delivers list_changed after a request's body has been cut off at
// that timeout, long after the stream began.
func TestHTTPStreamOutlivesBodyTimeout(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			h := newHarnessHTTP(t, gateway.MCPHTTP{BodyTimeout: 200 * time.Millisecond})
			ctx := context.Background()
			c := h.connectHTTP(t, "acme", legacy)
			ch := notes(c)
			if !legacy {
				listenToolsChanged(t, c, ch)
			}
			if err := h.st.SetGrantOverrides(ctx, "acme", []string{"!like"}); err != nil {
				t.Fatal(err)
			}
			if !waitNote(ch, mcp.MethodNotificationToolsListChanged, 5*time.Second) {
				t.Fatal("no list_changed on the new stream")
			}
			// The stream is open; a trickled body started after it is cut
			// off: the timeout has passed for the stream's request too.
			slow := dialEndpoint(t, h.mcpURL(t))
			fmt.Fprintf(slow, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n{", slow.RemoteAddr())
			waitServerClose(t, slow, "a body trickling in")
			if err := h.st.SetGrantOverrides(ctx, "acme", []string{"!like", "!pin_message"}); err != nil {
				t.Fatal(err)
			}
			// A client may open a new listen stream when one ends: the
			// notification must come on the first one, not after a new
			// subscriptions/acknowledged.
			seen := notesUntil(ch, mcp.MethodNotificationToolsListChanged, 5*time.Second)
			if !slices.Contains(seen, mcp.MethodNotificationToolsListChanged) {
				t.Fatalf("no list_changed after the body timeout (got %v): the stream was cut off", seen)
			}
			if slices.Contains(seen, mcp.MethodNotificationSubscriptionsAcknowledged) {
				t.Fatalf("notifications %v: the listen stream was cut off and opened again", seen)
			}
		})
	}
}

// notesUntil returns the methods of the notifications on ch up to the
// first of method, or those of d when none comes.
func notesUntil(ch <-chan mcp.JSONRPCNotification, method string, d time.Duration) []string {
	var seen []string
	deadline := time.After(d)
	for {
		select {
		case n := <-ch:
			seen = append(seen, n.Method)
			if n.Method == method {
				return seen
			}
		case <-deadline:
			return seen
		}
	}
}
