// Package testbrowser drives headless Chromium over the DevTools protocol
// for tests: one page, navigated and inspected with Runtime.evaluate.
// Test-only (a copy of adapters/web's own driver, for tests outside it).
package testbrowser

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Chromium is Debian's headless-capable browser; tests skip without it
// (testenv.Need).
const Chromium = "/usr/bin/chromium"

// Browser is headless Chromium with one page.
type Browser struct {
	t    *testing.T
	conn *websocket.Conn

	mu      sync.Mutex
	next    int
	replies map[int]chan json.RawMessage
}

var devtoolsRE = regexp.MustCompile(`DevTools listening on (ws://\S+)`)

// Open starts Chromium with a blank page and connects to that page; it
// is killed when the test ends.
func Open(t *testing.T) *Browser {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write in it
	// after the browser was killed, and its removal would fail the test.
	profile, err := os.MkdirTemp("", "switchboard-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, Chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+profile, "--remote-debugging-port=0", "about:blank")
	cmd.WaitDelay = 5 * time.Second
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		for try := 0; try < 10 && os.RemoveAll(profile) != nil; try++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := devtoolsRE.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatal("chromium did not start its DevTools endpoint within 30s")
	}
	host := strings.TrimPrefix(wsURL, "ws://")
	host = host[:strings.Index(host, "/")]
	var pages []struct {
		Type, WebSocketDebuggerURL string
	}
	resp, err := http.Get("http://" + host + "/json/list")
	if err != nil {
		t.Fatalf("devtools targets: %v", err)
	}
	err = json.NewDecoder(resp.Body).Decode(&pages)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("devtools targets: %v", err)
	}
	for _, p := range pages {
		if p.Type == "page" {
			conn, _, err := websocket.DefaultDialer.Dial(p.WebSocketDebuggerURL, nil)
			if err != nil {
				t.Fatalf("connect to the page: %v", err)
			}
			b := &Browser{t: t, conn: conn, replies: map[int]chan json.RawMessage{}}
			t.Cleanup(func() { conn.Close() })
			go b.read()
			return b
		}
	}
	t.Fatal("chromium has no page")
	return nil
}

func (b *Browser) read() {
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := b.conn.ReadJSON(&msg); err != nil {
			return
		}
		b.mu.Lock()
		ch := b.replies[msg.ID]
		delete(b.replies, msg.ID)
		b.mu.Unlock()
		if ch != nil {
			if msg.Error != nil {
				ch <- json.RawMessage(`{"error":` + string(msg.Error) + `}`)
			} else {
				ch <- msg.Result
			}
		}
	}
}

// call sends one DevTools command and returns its result.
func (b *Browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	b.mu.Lock()
	b.next++
	id := b.next
	ch := make(chan json.RawMessage, 1)
	b.replies[id] = ch
	err := b.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params})
	b.mu.Unlock()
	if err != nil {
		b.t.Fatalf("devtools %s: %v", method, err)
	}
	select {
	case r := <-ch:
		return r
	case <-time.After(30 * time.Second):
		b.t.Fatalf("devtools %s: no answer within 30s", method)
		return nil
	}
}

// Eval evaluates a JavaScript expression in the page and returns its value
// as JSON.
func (b *Browser) Eval(expr string) string {
	b.t.Helper()
	v, err := b.try(expr)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

// try is eval that returns a failure (the page was navigating away).
func (b *Browser) try(expr string) (string, error) {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	raw := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err := json.Unmarshal(raw, &r); err != nil || r.Exception != nil {
		return "", fmt.Errorf("evaluate %s: %s", expr, raw)
	}
	return string(r.Result.Value), nil
}

// Navigate loads url in the page and waits until the new document runs.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	b.try("window.oldDocument = true")
	b.call("Page.navigate", map[string]any{"url": url})
	b.WaitFor("the new document", "window.oldDocument === undefined && document.readyState === 'complete'")
}

// WaitFor evaluates expr until it is true.
func (b *Browser) WaitFor(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for v, _ := b.try(expr); v != "true"; v, _ = b.try(expr) {
		if time.Now().After(deadline) {
			b.t.Fatalf("the page never showed %s (%s); body: %s", what, expr, b.Eval("document.body.innerText"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// JSString is s as a JavaScript string literal.
func JSString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
