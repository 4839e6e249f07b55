package slack_test

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/adaptertest"
	"switchboard/adapters/slack"
	"switchboard/adapters/slack/slacktest"
	"switchboard/internal/testlog"
)

// A 429 whose Retry-After is a day does not freeze the adapter for a day:
// its calls and the gateway (the RetryAfterError's wait) hold for
// adapters.MaxRetryAfter at most, and the log says the wait was cut.
func TestHugeRetryAfterIsCapped(t *testing.T) {
	s := slacktest.New(t)
	var logs testlog.Buffer
	a := slack.New(slack.Options{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, Mode: slack.ModeSocket,
		APIURL: s.URL(), PingInterval: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	adaptertest.Start(t, a, adaptertest.NewHost())
	s.RateLimit(24 * time.Hour)
	_, err := a.Send(t.Context(), adapters.Outbound{Chat: "slack:T1/channel/C1", Text: "answered 429"})
	var ra *adapters.RetryAfterError
	if !errors.As(err, &ra) {
		t.Fatalf("send answered 429: %v; want a RetryAfterError", err)
	}
	if ra.Wait > adapters.MaxRetryAfter {
		t.Errorf("the gateway is told to wait %s; want at most %s", ra.Wait, adapters.MaxRetryAfter)
	}
	if d := a.Held(); d > adapters.MaxRetryAfter || d < adapters.MaxRetryAfter-time.Minute {
		t.Errorf("the adapter holds its calls for %s; want about %s", d, adapters.MaxRetryAfter)
	}
	if !strings.Contains(logs.String(), "rate limit wait capped") {
		t.Errorf("no log line says the wait was capped:\n%s", logs.String())
	}
}
