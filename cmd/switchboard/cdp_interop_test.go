//go:build interop && linux

package main

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

// cdpPage is a page open in headless Chromium that the test reads while it
// lives, through the DevTools protocol (Runtime.evaluate over the page's
// WebSocket): what a user sees change, not one snapshot (--dump-dom).
type cdpPage struct {
	mu   sync.Mutex
	conn *websocket.Conn
	id   int
}

// openChatPage starts headless Chromium on url (the web chat's page) and
// waits until the page's event stream is open.
func openChatPage(t *testing.T, url string) *cdpPage {
	t.Helper()
	chromium := findChromium(t)
	profile := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--remote-debugging-port=0", "--user-data-dir="+profile, url)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// Chromium writes the port it chose into the profile.
	var port string
	testwait.For(t, 30*time.Second, "chromium's DevTools port", func() bool {
		b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort"))
		port, _, _ = strings.Cut(string(b), "\n")
		return err == nil && port != ""
	})
	var wsURL string
	testwait.For(t, 30*time.Second, "the page's DevTools target", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var targets []struct{ Type, URL, WebSocketDebuggerURL string }
		if json.NewDecoder(resp.Body).Decode(&targets) != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "page" && strings.HasPrefix(tg.URL, url[:strings.Index(url, "/?")]) {
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
	p := &cdpPage{conn: conn}
	var ready bool
	testwait.For(t, 30*time.Second, "the chat page's live event stream", func() bool {
		p.eval(t, `document.getElementById("status")?.dataset.state === "live"`, &ready)
		return ready
	})
	return p
}

// eval evaluates expr in the page and decodes its value into out (nil:
// ignored).
func (p *cdpPage) eval(t *testing.T, expr string, out any) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.id++
	req := map[string]any{"id": p.id, "method": "Runtime.evaluate",
		"params": map[string]any{"expression": expr, "returnByValue": true}}
	_ = p.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := p.conn.WriteJSON(req); err != nil {
		t.Fatalf("DevTools: %v", err)
	}
	_ = p.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var resp struct {
			ID     int `json:"id"`
			Result struct {
				Result struct {
					Value json.RawMessage `json:"value"`
				} `json:"result"`
				ExceptionDetails *struct {
					Text string `json:"text"`
				} `json:"exceptionDetails"`
			} `json:"result"`
			Error *struct{ Message string } `json:"error"`
		}
		if err := p.conn.ReadJSON(&resp); err != nil {
			t.Fatalf("DevTools: %v", err)
		}
		if resp.ID != p.id { // an event
			continue
		}
		switch {
		case resp.Error != nil:
			t.Fatalf("DevTools Runtime.evaluate: %s", resp.Error.Message)
		case resp.Result.ExceptionDetails != nil:
			t.Fatalf("the page threw evaluating %s: %s", expr, resp.Result.ExceptionDetails.Text)
		}
		if out != nil {
			if err := json.Unmarshal(resp.Result.Result.Value, out); err != nil {
				t.Fatal(fmt.Errorf("the value of %s: %w (%s)", expr, err, resp.Result.Result.Value))
			}
		}
		return
	}
}
