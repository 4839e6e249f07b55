package discord

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/discord/discordtest"
	"switchboard/internal/testlog"
)

// A 429 whose retry_after is a day does not freeze the adapter for a day:
// the adapter holds for adapters.MaxRetryAfter at most, the log says the
// wait was cut, and discordgo, which sleeps for the body's retry_after
// and holds the route until X-RateLimit-Reset-After, reads the capped wait.
func TestHugeRetryAfterIsCapped(t *testing.T) {
	f := discordtest.New(t)
	var logs testlog.Buffer
	a := start(t, f, adaptertest.NewHost(), slog.New(slog.NewTextHandler(&logs, nil)))
	f.RateLimit(24 * time.Hour)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, discordgo.EndpointChannelMessages(discordtest.Channel),
		strings.NewReader(`{"content":"answered 429"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bot "+discordtest.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d; want the fake's 429", resp.StatusCode)
	}
	var rl discordgo.TooManyRequests
	if err := json.Unmarshal(body, &rl); err != nil {
		t.Fatalf("429 body %q: %v", body, err)
	}
	if rl.RetryAfter > adapters.MaxRetryAfter {
		t.Errorf("discordgo would sleep %s on this 429; want at most %s", rl.RetryAfter, adapters.MaxRetryAfter)
	}
	for _, key := range []string{"X-RateLimit-Reset-After", "Retry-After"} {
		if d, ok := adapters.ParseRetryAfter(resp.Header.Get(key)); !ok || d > adapters.MaxRetryAfter {
			t.Errorf("%s: %q; want at most %s", key, resp.Header.Get(key), adapters.MaxRetryAfter)
		}
	}
	if d := a.held.Left(); d > adapters.MaxRetryAfter || d < adapters.MaxRetryAfter-time.Minute {
		t.Errorf("the adapter holds its requests for %s; want about %s", d, adapters.MaxRetryAfter)
	}
	if !strings.Contains(logs.String(), "rate limit wait capped") {
		t.Errorf("no log line says the wait was capped:\n%s", logs.String())
	}
}
