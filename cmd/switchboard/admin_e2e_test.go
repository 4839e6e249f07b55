package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
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

// metricValue reads one sample from a Prometheus text exposition.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
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
	waitFor(t, 10*time.Second, "the metrics to move", func() bool {
		_, after = g.admin(t, "/metrics")
		return metricValue(t, after, `switchboard_outbox_deliveries_total{adapter="web",result="sent"}`) >= 1
	})
	for _, series := range []string{
		`switchboard_inbound_events_total{kind="message",platform="web"}`,
		`switchboard_turns_total{outcome="succeeded",trigger="message"}`,
		`switchboard_turn_duration_seconds_count{trigger="message"}`,
	} {
		if b, a := metricValue(t, before, series), metricValue(t, after, series); a != b+1 {
			t.Errorf("%s went from %v to %v; want +1", series, b, a)
		}
	}
	if metricValue(t, after, `switchboard_adapter_state{adapter="web",state="connected"}`) != 1 || !strings.Contains(after, "switchboard_store_bytes") {
		t.Errorf("state metrics missing:\n%s", after)
	}
	if strings.Contains(after, "web:lobby") || strings.Contains(after, "count me") {
		t.Error("a chat id or message text leaked into the metrics")
	}
	var code int
	var body string
	waitFor(t, 10*time.Second, "readyz to report telegram", func() bool {
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
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; make test installs it (apt-get install chromium)")
		}
		t.Skip("chromium is not installed: run make test, which installs it, to render the status page")
	}
	out, err := exec.Command("/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=2000",
		"--dump-dom", "http://"+g.adminAddr+"/").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `id="adapters"`) || !strings.Contains(string(out), "backing_off") {
		t.Errorf("chromium rendered the status page as: %v\n%s", err, out)
	}
}
