// Package testcdp drives headless Chromium over the DevTools protocol for
// tests: one page, opened on a URL, read while it lives with
// Runtime.evaluate (what a user sees change, not one snapshot) and
// navigated. It is for tests only.
package testcdp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"switchboard/internal/testwait"
)

// answerWithin bounds the wait for Chromium: to start, and to answer one
// command.
const answerWithin = 30 * time.Second

// Page is a page open in headless Chromium. Its methods fail t; they are
// safe for concurrent use.
type Page struct {
	t    testing.TB
	conn *websocket.Conn

	mu      sync.Mutex
	next    int
	replies map[int]chan json.RawMessage
}

// Open starts the Chromium binary chromium on url (about:blank for none)
// and connects to its page; the browser is killed and its profile removed
// when the test ends.
func Open(t testing.TB, chromium, url string) *Page {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write in it
	// after the browser was killed, and its removal would fail the test.
	profile, err := os.MkdirTemp("", "switchboard-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+profile, "--remote-debugging-port=0", url)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start chromium: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		for try := 0; try < 10 && os.RemoveAll(profile) != nil; try++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	// Chromium writes the port it chose into the profile.
	var port string
	testwait.For(t, answerWithin, "chromium's DevTools port", func() bool {
		b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort"))
		port, _, _ = strings.Cut(string(b), "\n")
		return err == nil && port != ""
	})
	var wsURL string
	testwait.For(t, answerWithin, "the page's DevTools target", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var targets []struct{ Type, WebSocketDebuggerURL string }
		if json.NewDecoder(resp.Body).Decode(&targets) != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "page" {
				wsURL = tg.WebSocketDebuggerURL
			}
		}
		return wsURL != ""
	})
	conn, _, err := websocket.DefaultDialer.Dial(wsURL, nil)
	if err != nil {
		t.Fatalf("chromium's DevTools socket: %v\n%s", err, stderr.String())
	}
	t.Cleanup(func() { conn.Close() })
	p := &Page{t: t, conn: conn, replies: map[int]chan json.RawMessage{}}
	go p.read()
	return p
}

// read hands each answer to the command waiting for it; events are
// dropped.
func (p *Page) read() {
	for {
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := p.conn.ReadJSON(&msg); err != nil {
			return
		}
		p.mu.Lock()
		ch := p.replies[msg.ID]
		delete(p.replies, msg.ID)
		p.mu.Unlock()
		if ch != nil {
			if msg.Error != nil {
				ch <- json.RawMessage(`{"error":` + string(msg.Error) + `}`)
			} else {
				ch <- msg.Result
			}
		}
	}
}

// Call sends one DevTools command and returns its result (an error as
// {"error": ...}).
func (p *Page) Call(method string, params any) json.RawMessage {
	p.t.Helper()
	p.mu.Lock()
	p.next++
	id := p.next
	ch := make(chan json.RawMessage, 1)
	p.replies[id] = ch
	err := p.conn.WriteJSON(map[string]any{"id": id, "method": method, "params": params})
	p.mu.Unlock()
	if err != nil {
		p.t.Fatalf("devtools %s: %v", method, err)
	}
	select {
	case r := <-ch:
		return r
	case <-time.After(answerWithin):
		p.t.Fatalf("devtools %s: no answer within %s", method, answerWithin)
		return nil
	}
}

// Eval evaluates a JavaScript expression in the page (awaiting a promise)
// and returns its value as JSON.
func (p *Page) Eval(expr string) string {
	p.t.Helper()
	v, err := p.Try(expr)
	if err != nil {
		p.t.Fatal(err)
	}
	return v
}

// EvalInto is Eval decoding the value into out.
func (p *Page) EvalInto(expr string, out any) {
	p.t.Helper()
	if err := json.Unmarshal([]byte(p.Eval(expr)), out); err != nil {
		p.t.Fatalf("the value of %s: %v", expr, err)
	}
}

// Try is Eval returning a failure (the page threw, or was navigating
// away) instead of failing the test.
func (p *Page) Try(expr string) (string, error) {
	p.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	raw := p.Call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	if err := json.Unmarshal(raw, &r); err != nil || r.Exception != nil {
		return "", fmt.Errorf("evaluate %s: %s", expr, raw)
	}
	return string(r.Result.Value), nil
}

// Navigate loads url in the page and waits until the new document runs.
func (p *Page) Navigate(url string) {
	p.t.Helper()
	_, _ = p.Try("window.oldDocument = true")
	p.Call("Page.navigate", map[string]any{"url": url})
	p.WaitFor("the new document", "window.oldDocument === undefined && document.readyState === 'complete'")
}

// WaitFor evaluates expr until it is true, failing the test with the
// page's text after 20 s.
func (p *Page) WaitFor(what, expr string) {
	p.t.Helper()
	if !testwait.Until(20*time.Second, func() bool { v, _ := p.Try(expr); return v == "true" }) {
		p.t.Fatalf("the page never showed %s (%s); body: %s", what, expr, p.Eval("document.body.innerText"))
	}
}

// JSString is s as a JavaScript string literal.
func JSString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
