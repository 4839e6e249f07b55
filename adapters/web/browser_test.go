package web

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testenv"
)

// chromium is Debian's headless-capable browser; without it the test skips,
// or fails when CI is set.
const chromium = "/usr/bin/chromium"

// TestBrowserRendersMessages loads the chat page in headless Chromium and
// checks that its script fetched and rendered the room's messages, escaped.
// Set WEB_SCREENSHOT=path to keep a screenshot of the page. Without
// Chromium it skips, or fails when CI is set.
func TestBrowserRendersMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a browser")
	}
	testenv.Need(t, chromium, "make test installs it, or apt-get install chromium")
	// Chromium's virtual time stands still while a request is open, so
	// --virtual-time-budget would never run out with a live event stream:
	// end streams quickly; the page reconnects (and resumes) on its own.
	s := start(t, func(a *Adapter) { a.streamMaxAge = 500 * time.Millisecond })
	s.post(t, "lobby", `{"sender": "ann", "name": "Ann", "text": "Hello from ann, can you summarise today's tickets?"}`)
	s.g.reply(t, s.a, "web:lobby", "Sure. 3 tickets were opened today:\n- login fails on Safari\n- <b>export</b> is slow\n- typo on the pricing page")
	s.post(t, "lobby", `{"sender": "bob", "text": "Thanks! I'll take the Safari one.", "topic": "triage"}`)
	s.post(t, "kitchen", `{"sender": "eve", "text": "message from another room"}`)

	url := s.base + "/?room=lobby"
	dom := runChromium(t, "--dump-dom", url)
	for _, want := range []string{
		"Hello from ann, can you summarise",
		"I'll take the Safari one.",
		"&lt;b&gt;export&lt;/b&gt; is slow", // bot text rendered as text, not markup
		`class="msg bot"`,
		"# triage",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	if strings.Contains(dom, "another room") {
		t.Error("rendered DOM shows a message of another room")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, "--screenshot="+shot, "--window-size=900,700", url)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10_000 {
		t.Fatalf("screenshot is %d bytes, want a non-trivial PNG", len(png))
	}
	if out := os.Getenv("WEB_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Errorf("keep screenshot: %v", err)
		}
	}
}

// runChromium runs headless Chromium on args and returns its stdout.
func runChromium(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=3000",
	}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}
