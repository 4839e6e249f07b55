package gateway

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/web"
	"switchboard/internal/testenv"
	"switchboard/routing"
)

// blockedAgent never finishes a turn on its own, so that a benchmark measures
// intake alone: messages are committed, routed and queued while the folder's
// one turn waits. Shutdown kills it.
func blockedAgent(t testing.TB) []string {
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte("exec sleep 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{"/bin/sh", path}
}

// BenchmarkIngestHTTP measures messages per second from HTTP POSTs to the
// web adapter until they are committed with their work rows (routed and
// queued), with several concurrent clients.
func BenchmarkIngestHTTP(b *testing.B) {
	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			wa := web.New(web.Options{Listen: "127.0.0.1:0", History: History{}})
			h := newHarness(b, harnessConfig{
				agent:  blockedAgent(b),
				routes: []routing.Route{{Match: map[string]string{"platform": "web"}, Target: "main"}},
				modify: func(o *Options) {
					o.Adapters = append(o.Adapters, wa)
					o.DrainTimeout = 10 * time.Millisecond
					// The clients stand for people on other machines: the
					// loop guard's cap on new rooms from this one is not
					// what is measured.
					o.LoopGuard.NewRooms = 1 << 20
				},
			})
			<-wa.Ready()
			base := "http://" + wa.Addr() + "/api/rooms/"
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
			defer client.CloseIdleConnections()
			body := []byte(`{"sender":"ann","text":"deploy the release after the incident review"}`)
			var next atomic.Int64
			var failed atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					url := base + "room" + strconv.Itoa(c%16) + "/messages"
					for next.Add(1) <= int64(b.N) {
						resp, err := client.Post(url, "application/json", bytes.NewReader(body))
						if err != nil {
							failed.Add(1)
							continue
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusAccepted {
							failed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d posts failed", n)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			h.stop()
		})
	}
}

// BenchmarkDeliver measures Deliver alone (no HTTP): committed, routed and
// queued messages per second with concurrent callers.
func BenchmarkDeliver(b *testing.B) {
	for _, callers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			h := newHarness(b, harnessConfig{agent: blockedAgent(b), modify: func(o *Options) { o.DrainTimeout = 10 * time.Millisecond }})
			var next atomic.Int64
			ctx := context.Background()
			b.ResetTimer()
			var wg sync.WaitGroup
			for c := range callers {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						_, err := h.g.Deliver(ctx, adapters.Inbound{Chat: adapters.JID(fmt.Sprintf("test:room/%d", c%16)), ID: adapters.MessageID(strconv.FormatInt(i, 10)),
							Sender: "test:user/ann", Text: "deploy the release after the incident review", Verb: adapters.VerbMention})
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			h.stop()
		})
	}
}

// stampAgent builds a minimal agent that prints the time it started running
// (unix ns) and exits without reading its prompt: a small static Go binary,
// so that its own start-up (fork, exec, runtime init) is small.
func stampAgent(b *testing.B) []string {
	goTool := testenv.Need(b, "go", "the Go toolchain builds the stamp agent")
	dir := b.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport (\n\t\"fmt\"\n\t\"time\"\n)\n\nfunc main() { fmt.Println(time.Now().UnixNano()) }\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	bin := filepath.Join(dir, "stamp")
	cmd := exec.Command(goTool, "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build stamp agent: %v\n%s", err, out)
	}
	return []string{bin}
}

// BenchmarkTurnStartOverhead measures, one message at a time, the time from
// Deliver returning (the message is stored) to the agent process running
// its first instruction, as the agent itself reports it.
func BenchmarkTurnStartOverhead(b *testing.B) {
	h := newHarness(b, harnessConfig{agent: stampAgent(b)})
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		h.post(testChat, "m"+strconv.Itoa(i), "hello")
		stored := time.Now()
		sent := h.waitSent(testChat, i)
		ns, err := strconv.ParseInt(strings.TrimSpace(sent[i-1].Text), 10, 64)
		if err != nil {
			b.Fatalf("agent reply %q: %v", sent[i-1].Text, err)
		}
		lat = append(lat, time.Unix(0, ns).Sub(stored))
	}
	reportLatency(b, lat)
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}

// BenchmarkDeliverWhileScraped measures intake (64 concurrent Deliver
// callers) alone, while 100 Prometheus servers scrape /metrics once a second
// each (100 scrapes a second, far above the usual one per 15 s), and while
// 100 scrapers scrape back to back (100 scrapes in flight at all times).
func BenchmarkDeliverWhileScraped(b *testing.B) {
	for _, bc := range []struct {
		name     string
		scrapers int
		every    time.Duration // 0: back to back
	}{{"scrapers=0", 0, 0}, {"scrapers=100/1s", 100, time.Second}, {"scrapers=100/busy", 100, 0}} {
		b.Run(bc.name, func(b *testing.B) {
			h := newHarness(b, harnessConfig{agent: blockedAgent(b), modify: func(o *Options) { o.DrainTimeout = 10 * time.Millisecond }})
			srv := httptest.NewServer(h.g.MetricsHandler())
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: max(bc.scrapers, 1)}}
			stop := make(chan struct{})
			var scrapes atomic.Int64
			var sg sync.WaitGroup
			for range bc.scrapers {
				sg.Go(func() {
					// A ticker, or a closed channel for back to back.
					always := make(chan time.Time)
					close(always)
					var tick <-chan time.Time = always
					if bc.every > 0 {
						t := time.NewTicker(bc.every)
						defer t.Stop()
						tick = t.C
					}
					for {
						select {
						case <-stop:
							return
						case <-tick:
						}
						resp, err := client.Get(srv.URL)
						if err != nil {
							continue
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						scrapes.Add(1)
					}
				})
			}
			var next atomic.Int64
			ctx := context.Background()
			b.ResetTimer()
			var wg sync.WaitGroup
			for c := range 64 {
				wg.Go(func() {
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if _, err := h.g.Deliver(ctx, adapters.Inbound{Chat: adapters.JID(fmt.Sprintf("test:room/%d", c%16)), ID: adapters.MessageID(strconv.FormatInt(i, 10)),
							Sender: "test:user/ann", Text: "deploy the release after the incident review", Verb: adapters.VerbMention}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			close(stop)
			sg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(scrapes.Load())/b.Elapsed().Seconds(), "scrapes/s")
			h.stop()
		})
	}
}
