package gateway

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
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
