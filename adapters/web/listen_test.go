package web

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestOffLoopbackWarns: the web chat has no authentication, so listening
// off loopback (0.0.0.0, a LAN address) is said at start, naming the key;
// on loopback nothing is said.
func TestOffLoopbackWarns(t *testing.T) {
	for _, c := range []struct {
		listen string
		warns  bool
	}{{"0.0.0.0:0", true}, {"127.0.0.1:0", false}} {
		t.Run(c.listen, func(t *testing.T) {
			var logs bytes.Buffer
			s := start(t, func(a *Adapter) {
				a.listen = c.listen
				a.log = slog.New(slog.NewTextHandler(&logs, nil))
			})
			s.stop(t) // the log is complete once Run returned
			got := strings.Contains(logs.String(), "web chat listens off loopback") && strings.Contains(logs.String(), "adapters.web.listen")
			if got != c.warns {
				t.Errorf("warned %v, want %v:\n%s", got, c.warns, logs.String())
			}
		})
	}
}
