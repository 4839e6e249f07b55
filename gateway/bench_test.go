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
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"switchboard/adapters"
	"switchboard/adapters/web"
	"switchboard/internal/testenv"
	"switchboard/routing"
	"switchboard/store"
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

// insertFloor is the floor Deliver is measured against, in the same run:
// messages per second that store.InsertMessages stores in batches of 100
// (one transaction each, the message rows, their FTS index and chats, with
// the group commit's own statements of many rows but no work rows), from
// one goroutine, on a fresh database in the same temporary directory.
func insertFloor(b *testing.B) float64 {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "floor.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const total, batch = 20_000, 100
	start := time.Now()
	for n := 0; n < total; n += batch {
		ms := make([]*store.Message, batch)
		for j := range ms {
			ms[j] = &store.Message{ChatJID: adapters.JID(fmt.Sprintf("test:room/%d", (n+j)%16)), ID: adapters.MessageID(strconv.Itoa(n + j)),
				Sender: "test:user/ann", Text: "deploy the release after the incident review"}
		}
		if _, err := st.InsertMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	return total / time.Since(start).Seconds()
}

// httpFloor is the HTTP half of BenchmarkIngestHTTP's floor: requests per
// second that a trivial net/http handler answers (202, body read and
// dropped) to the same clients over loopback.
func httpFloor(b *testing.B, clients int) float64 {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	const total = 20_000
	var next atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for next.Add(1) <= total {
				resp, err := client.Post(srv.URL+"/api/rooms/room1/messages", "application/json", strings.NewReader(`{"sender":"ann","text":"deploy"}`))
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	return total / time.Since(start).Seconds()
}

// cpuTime is the CPU time this process has used so far (user and system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportIntake reports the CPU time per message since cpu0 (all of the
// process: the figure that holds on a machine that other work shares) and
// how many messages the group commit put in one transaction.
func reportIntake(b *testing.B, h *harness, cpu0 time.Duration) {
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/1e3, "cpu-us/msg")
	var m dto.Metric
	if err := h.g.metrics.commitBatch.Write(&m); err != nil {
		b.Fatal(err)
	}
	if n := m.GetHistogram().GetSampleCount(); n > 0 {
		b.ReportMetric(m.GetHistogram().GetSampleSum()/float64(n), "msgs/commit")
	}
}

// reportFloor reports rate (per second) beside its floor and their ratio.
func reportFloor(b *testing.B, rate, floor float64) {
	b.ReportMetric(rate, "msgs/s")
	b.ReportMetric(floor, "floor-msgs/s")
	b.ReportMetric(rate/floor, "x-floor")
}

// postMessages posts b.N messages from clients concurrent HTTP clients,
// client c to url(c), with the benchmark's timer running from its start
// to the last answer, and returns how many were not answered 202.
func postMessages(b *testing.B, clients int, url func(c int) string) int64 {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	defer client.CloseIdleConnections()
	body := []byte(`{"sender":"ann","text":"deploy the release after the incident review"}`)
	var next, failed atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			u := url(c)
			for next.Add(1) <= int64(b.N) {
				resp, err := client.Post(u, "application/json", bytes.NewReader(body))
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
	return failed.Load()
}

// BenchmarkIngestHTTP measures messages per second from HTTP POSTs to the
// web adapter until they are committed with their work rows (routed and
// queued), with several concurrent clients. Its floor, measured in the same
// run, is a trivial handler and the batched insert in series: one message
// costs at least 1/httpFloor + 1/insertFloor seconds of the machine.
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
			cpu0 := cpuTime(b)
			failed := postMessages(b, clients, func(c int) string { return base + "room" + strconv.Itoa(c%16) + "/messages" })
			reportIntake(b, h, cpu0)
			if failed > 0 {
				b.Fatalf("%d posts failed", failed)
			}
			rate := float64(b.N) / b.Elapsed().Seconds()
			h.stop()
			hf, inf := httpFloor(b, clients), insertFloor(b)
			reportFloor(b, rate, 1/(1/hf+1/inf))
		})
	}
}

// BenchmarkIngestHTTPParts is a reference for BenchmarkIngestHTTP, not a
// figure of the gateway: the floors' own parts put together as simply as
// the goal allows. 64 clients post to a trivial net/http handler (its
// floor's) that reads the body and hands the message to one goroutine;
// that goroutine commits what is waiting with store.InsertMessages (the
// insert floor's call: no routing, no work rows) and only then is each
// client answered, as the gateway must. It waits before each commit until
// as many messages as clients are waiting, at most 2 ms: told the number
// of clients, which the gateway is not. Its ratio to the same floor says
// how much of that floor acknowledging after the commit leaves on this
// machine.
func BenchmarkIngestHTTPParts(b *testing.B) {
	const clients = 64
	b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
		ctx := context.Background()
		st, err := store.Open(ctx, filepath.Join(b.TempDir(), "parts.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		type req struct {
			m    *store.Message
			done chan error
		}
		reqs := make(chan req, clients)
		var commits, committed atomic.Int64
		go func() {
			for r := range reqs {
				batch := []req{r}
				wait := time.NewTimer(2 * time.Millisecond)
			gather:
				for len(batch) < clients {
					select {
					case r := <-reqs:
						batch = append(batch, r)
					case <-wait.C:
						break gather
					}
				}
				wait.Stop()
				ms := make([]*store.Message, len(batch))
				for i, r := range batch {
					ms[i] = r.m
				}
				_, err := st.InsertMessages(ctx, ms)
				commits.Add(1)
				committed.Add(int64(len(batch)))
				for _, r := range batch {
					r.done <- err
				}
			}
		}()
		var id atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			n := id.Add(1)
			done := make(chan error, 1)
			reqs <- req{&store.Message{ChatJID: adapters.JID(fmt.Sprintf("test:room/%d", n%16)), ID: adapters.MessageID(strconv.FormatInt(n, 10)),
				Sender: "test:user/ann", Text: string(body)}, done}
			if err := <-done; err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusAccepted)
		}))
		failed := postMessages(b, clients, func(int) string { return srv.URL + "/api/rooms/room1/messages" })
		srv.Close()
		close(reqs)
		if failed > 0 {
			b.Fatalf("%d posts failed", failed)
		}
		if committed.Load() != int64(b.N) {
			b.Fatalf("%d messages committed; want %d", committed.Load(), b.N)
		}
		b.ReportMetric(float64(committed.Load())/float64(commits.Load()), "msgs/commit")
		rate := float64(b.N) / b.Elapsed().Seconds()
		hf, inf := httpFloor(b, clients), insertFloor(b)
		reportFloor(b, rate, 1/(1/hf+1/inf))
	})
}

// BenchmarkDeliver measures Deliver alone (no HTTP): committed, routed and
// queued messages per second with concurrent callers, beside the batched
// insert floor (insertFloor) measured in the same run.
func BenchmarkDeliver(b *testing.B) {
	for _, callers := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			h := newHarness(b, harnessConfig{agent: blockedAgent(b), modify: func(o *Options) { o.DrainTimeout = 10 * time.Millisecond }})
			var next atomic.Int64
			ctx := context.Background()
			cpu0 := cpuTime(b)
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
			reportIntake(b, h, cpu0)

			rate := float64(b.N) / b.Elapsed().Seconds()
			h.stop()
			reportFloor(b, rate, insertFloor(b))
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
// its first instruction, as the agent itself reports it, beside its floor
// in the same run: the time from exec.Cmd.Start to the same program's first
// instruction (fork/exec and its runtime's start).
func BenchmarkTurnStartOverhead(b *testing.B) {
	agent := stampAgent(b)
	h := newHarness(b, harnessConfig{agent: agent})
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
	b.StopTimer()
	floor := make([]time.Duration, 0, min(len(lat), 200))
	for range cap(floor) {
		start := time.Now()
		out, err := exec.Command(agent[0]).Output()
		if err != nil {
			b.Fatal(err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		floor = append(floor, time.Unix(0, ns).Sub(start))
	}
	reportLatency(b, lat)
	slices.Sort(floor)
	f := floor[len(floor)/2]
	b.ReportMetric(float64(f.Microseconds())/1000, "floor-p50-ms")
	b.ReportMetric(float64(lat[len(lat)/2])/float64(f), "x-floor")
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
