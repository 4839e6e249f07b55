package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testenv"
	"switchboard/internal/testmetrics"
	"switchboard/internal/testwait"
)

func (g *gw) admin(t *testing.T, path string) (int, string) {
	t.Helper()
	if g.adminAddr == "" {
		t.Fatal("the admin listener did not log its address")
	}
	resp, err := g.http.Get("http://" + g.adminAddr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The admin listener: metrics move when a message goes through the
// pipeline, /healthz and /readyz answer, and /readyz turns 503 naming the
// adapter that is down; the status page renders.
func TestE2EAdmin(t *testing.T) {
	t.Parallel()
	// An unreachable Telegram: the adapter keeps backing off.
	dead := "http://127.0.0.1:1"
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  telegram: {enabled: true, token: \"1:x\", api_url: \"" + dead + "\"}\n"})
	g := startGW(t, dir)
	if code, body := g.admin(t, "/healthz"); code != 200 || strings.TrimSpace(body) != "ok" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	_, before := g.admin(t, "/metrics")
	g.mustPost("lobby", "ann", "count me")
	g.waitBot("lobby", 1)
	var after string
	testwait.For(t, 10*time.Second, "the metrics to move", func() bool {
		_, after = g.admin(t, "/metrics")
		return testmetrics.Value(t, after, `switchboard_outbox_deliveries_total{adapter="web",result="sent"}`) >= 1
	})
	for _, series := range []string{
		`switchboard_inbound_events_total{kind="message",platform="web"}`,
		`switchboard_turns_total{outcome="succeeded",trigger="message"}`,
		`switchboard_turn_duration_seconds_count{trigger="message"}`,
	} {
		if b, a := testmetrics.Value(t, before, series), testmetrics.Value(t, after, series); a != b+1 {
			t.Errorf("%s went from %v to %v; want +1", series, b, a)
		}
	}
	if testmetrics.Value(t, after, `switchboard_adapter_state{adapter="web",state="connected"}`) != 1 || !strings.Contains(after, "switchboard_store_bytes") {
		t.Errorf("state metrics missing:\n%s", after)
	}
	if strings.Contains(after, "web:lobby") || strings.Contains(after, "count me") {
		t.Error("a chat id or message text leaked into the metrics")
	}
	var code int
	var body string
	testwait.For(t, 10*time.Second, "readyz to report telegram", func() bool {
		code, body = g.admin(t, "/readyz")
		return strings.Contains(body, "telegram")
	})
	var rz struct {
		Ready    bool     `json:"ready"`
		NotReady []string `json:"not_ready"`
	}
	if err := json.Unmarshal([]byte(body), &rz); err != nil || code != http.StatusServiceUnavailable || rz.Ready ||
		len(rz.NotReady) != 1 || !strings.HasPrefix(rz.NotReady[0], "adapter telegram: backing_off") {
		t.Errorf("/readyz with telegram down: %d %s", code, body)
	}
	code, page := g.admin(t, "/")
	if code != 200 || !strings.Contains(page, "running") || !strings.Contains(page, "backing_off") {
		t.Errorf("status page: %d\n%s", code, page)
	}
	chromium := findChromium(t)
	out, err := exec.Command(chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=2000",
		"--dump-dom", "http://"+g.adminAddr+"/").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `id="adapters"`) || !strings.Contains(string(out), "backing_off") ||
		!strings.Contains(string(out), `http-equiv="refresh"`) {
		t.Errorf("chromium rendered the status page as: %v\n%s", err, out)
	}
}

// An adapter holding its sends for a platform's 429 stays ready (/readyz
// 200: it still takes messages in) and its state shows there all the same
// (CONTRACT §13), under rate_limited.
func TestE2EReadyzShowsRateLimit(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t)
	dir := newE2E(t, e2eConfig{agent: replyAgent,
		adapters: "  telegram: {enabled: true, token: \"" + telegramtest.Token + "\", api_url: \"" + tg.URL() + "\"}\n",
		routes:   "  - {match: {chat_jid: \"telegram:group/1001234\"}, target: main}\n"})
	g := startGW(t, dir)
	testwait.For(t, 10*time.Second, "/readyz 200", func() bool {
		code, _ := g.admin(t, "/readyz")
		return code == http.StatusOK
	})
	tg.RateLimit(24 * time.Hour) // the reply's sendMessage: capped to 5m
	msg, _ := tg.UserMessage(telegramtest.GroupID, "hello", true, 0, 0)
	tg.Push("message", msg)
	var code int
	var body string
	testwait.For(t, 20*time.Second, "/readyz to show the hold", func() bool {
		code, body = g.admin(t, "/readyz")
		return strings.Contains(body, "rate_limited")
	})
	var rz struct {
		Ready       bool     `json:"ready"`
		NotReady    []string `json:"not_ready"`
		RateLimited []string `json:"rate_limited"`
	}
	if err := json.Unmarshal([]byte(body), &rz); err != nil || code != http.StatusOK || !rz.Ready || len(rz.NotReady) != 0 ||
		len(rz.RateLimited) != 1 || !strings.HasPrefix(rz.RateLimited[0], "adapter telegram: backing_off: rate limited") {
		t.Errorf("/readyz while telegram holds for a 429: %d %s", code, body)
	}
}

// findChromium finds a headless-capable Chromium on PATH (Debian's
// chromium, make test installs it). Without one the test skips, saying so,
// except in CI, where it fails.
func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, "no Chromium on PATH (chromium, chromium-browser, google-chrome): run make test as root, which installs it, to render the status page")
	return ""
}

// An admin address that is taken stops start-up with an error naming
// admin.listen; no adapter starts.
func TestE2EAdminListenTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := newE2E(t, e2eConfig{agent: replyAgent})
	cfg := filepath.Join(dir, "switchboard.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`admin: {listen: "127.0.0.1:0"}`), []byte(`admin: {listen: "`+taken.Addr().String()+`"}`), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(switchboardBinary(t), dir, "run")
	if err == nil || !strings.Contains(err.Error(), "admin.listen") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("run with admin.listen taken: %v\n%s", err, out)
	}
	if strings.Contains(err.Error(), "web chat listening") {
		t.Errorf("the web chat started before the admin listener failed:\n%v", err)
	}
}

// TestE2EAdminOffLoopbackWarns: the admin listener has no authentication,
// so run says so when admin.listen is off loopback.
func TestE2EAdminOffLoopbackWarns(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: replyAgent})
	cfg := filepath.Join(dir, "switchboard.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`admin: {listen: "127.0.0.1:0"}`), []byte(`admin: {listen: "0.0.0.0:0"}`), 1)
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir)
	if !strings.Contains(g.logText(), `"msg":"admin listener off loopback: it has no authentication`) {
		t.Errorf("no warning for admin.listen 0.0.0.0:0:\n%s", g.logText())
	}
}
