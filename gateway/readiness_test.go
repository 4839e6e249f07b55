package gateway

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/telegram"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/routing"
)

// /readyz answers at once while the store's one writer is busy (a long
// write transaction here, the intake's commits under load): it reports
// the background probe's last write, not a write of its own that waits.
// A writer held longer than probeStale makes it not ready, saying so.
func TestReadyWhileTheWriterIsBusy(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: []string{"true"}})
	h.g.host("test").SetState(adapters.StateConnected, nil) // the fake adapter reports nothing
	testwait.For(t, 10*time.Second, "ready, from a probe write", func() bool {
		_, known := h.g.probe.notReady(time.Now())
		return known && len(h.g.NotReady(context.Background())) == 0
	})
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the harness stops
	held := make(chan struct{})
	go h.st.Write(context.Background(), func(*sql.Tx) error {
		close(held)
		<-release
		return nil
	})
	<-held
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	not := h.g.NotReady(ctx)
	cancel()
	if len(not) != 0 {
		t.Errorf("not ready while a write runs: %q; want ready from the last probe", not)
	}
	testwait.For(t, 15*time.Second, "not ready once no write succeeded for a while", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		not = h.g.NotReady(ctx)
		return len(not) == 1 && len(not[0]) > 0
	})
	once.Do(func() { close(release) })
	if want := "store: no write succeeded for "; not[0][:len(want)] != want {
		t.Errorf("not ready: %q, want %q…", not, want)
	}
	testwait.For(t, 10*time.Second, "ready again", func() bool { return len(h.g.NotReady(context.Background())) == 0 })
}

// A platform's 429 holds the whole adapter: while it holds, status and
// /readyz show the adapter backing off, rate limited (not merely
// connected); when the hold ends, connected again, and the change is
// persisted for `switchboard status` (takeDirty).
func TestRateLimitHoldShowsBackingOff(t *testing.T) {
	a := newAdapterStates()
	a.set("telegram", adapters.StateConnected, nil)
	a.takeDirty()
	a.set("telegram", adapters.StateBackingOff, &adapters.RetryAfterError{Wait: 300 * time.Millisecond})
	st, dirty := a.takeDirty()
	if got := st["telegram"]; !dirty || got.State != adapters.StateBackingOff || !strings.Contains(got.Err, "rate limited") {
		t.Fatalf("during the hold: %+v (changed %v); want backing_off, rate limited", got, dirty)
	}
	testwait.For(t, 10*time.Second, "connected again once the hold ends", func() bool {
		st, dirty := a.takeDirty()
		return dirty && st["telegram"].State == adapters.StateConnected
	})
	// A hold over a connection that is not up shows the connection's state.
	a.set("telegram", adapters.StateConnecting, nil)
	a.set("telegram", adapters.StateBackingOff, &adapters.RetryAfterError{Wait: time.Hour})
	if got := a.snapshot()["telegram"]; got.State != adapters.StateConnecting {
		t.Errorf("a hold while connecting shows %+v; want connecting", got)
	}
}

// End to end: the real Telegram adapter's reply answered 429 with a
// day's retry_after: the gateway shows the adapter backing off, rate
// limited for the capped wait, but still ready: it is connected and takes
// messages in, and a /readyz that failed on each 429 would have a load
// balancer turn away the posts (Slack's Events API) it still serves.
func TestRateLimitedAdapterStaysReady(t *testing.T) {
	fake := telegramtest.New(t)
	tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
		PerChat: -1, PerGroup: -1, Global: -1})
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "cat >/dev/null; echo ran"), noStart: true,
		routes: []routing.Route{{Match: map[string]string{"platform": "telegram"}, Target: "main"}},
		modify: func(o *Options) { o.Adapters = append(o.Adapters, tg) }})
	h.start()
	testwait.For(t, 10*time.Second, "telegram connected", func() bool {
		return h.g.AdapterStates()["telegram"].State == adapters.StateConnected
	})
	fake.RateLimit(24 * time.Hour)
	msg, _ := fake.UserMessage(telegramtest.GroupID, "hello", true, 0, 0)
	fake.Push("message", msg)
	testwait.For(t, 20*time.Second, "the adapter backing off", func() bool {
		return h.g.AdapterStates()["telegram"].State == adapters.StateBackingOff
	})
	if st := h.g.AdapterStates()["telegram"]; !strings.Contains(st.Err, "rate limited: retry after 5m0s") {
		t.Errorf("status %+v; want it rate limited for the capped 5m", st)
	}
	if not := strings.Join(h.g.NotReady(context.Background()), "; "); strings.Contains(not, "telegram") {
		t.Errorf("not ready: %q; want telegram ready (a 429 hold is no lost connection)", not)
	}
	// Ready, and still visible beside the 200 (CONTRACT §13: the state
	// shows in /readyz).
	if got := strings.Join(h.g.RateLimited(), "; "); !strings.Contains(got, "adapter telegram: backing_off: rate limited: retry after 5m0s") {
		t.Errorf("rate limited: %q; want telegram held for the capped 5m", got)
	}
}
