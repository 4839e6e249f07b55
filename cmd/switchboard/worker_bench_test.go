package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// BenchmarkWorkers measures, with the demo agent (answering over MCP HTTP)
// and the real binary, the local runner against 1 and 2 `switchboard
// worker` processes: each iteration posts one message in each of 40 rooms
// at once and waits until all are answered (turns/s), then 50 messages one
// at a time, round the rooms (message→answer p50, p99). The nats cases also
// report their p50 and p99 minus the local case's (added-p50-ms,
// added-p99-ms; when the local case ran first, as in the command below)
// and the share of turns that moved a folder to another worker than the
// one it ran on last (moved-%).
//
//	go test -run '^$' -bench Workers -benchtime 3x ./cmd/switchboard/
func BenchmarkWorkers(b *testing.B) {
	const rooms, serial = 40, 50
	var local struct{ p50, p99 time.Duration }
	for _, c := range []struct {
		name    string
		workers int
	}{{"local", 0}, {"nats-1-worker", 1}, {"nats-2-workers", 2}} {
		b.Run(c.name, func(b *testing.B) {
			var routes strings.Builder
			var groups []string
			for r := range rooms {
				groups = append(groups, fmt.Sprintf("g%d", r))
				fmt.Fprintf(&routes, "  - {match: {platform: web, room: r%d}, target: g%d}\n", r, r)
			}
			cfg := e2eConfig{command: `["switchboard", "demo-agent"]`, groups: groups, routes: routes.String(), timeout: "30s",
				maxConcurrent: 8, extra: "mcp: {listen: \"127.0.0.1:0\"}\n"}
			if c.workers > 0 {
				cfg.agentExtra = "  runner: nats\n"
				cfg.extra += "nats: {embedded: true, listen: \"127.0.0.1:0\"}\n"
			}
			dir := newE2E(b, cfg)
			g := startGW(b, dir)
			var workers []*worker
			for i := range c.workers {
				workers = append(workers, startWorker(b, dir, fmt.Sprintf("w%d", i), embeddedNATSURL(b, g), 4))
			}
			answered := func(room, text string) bool { return quoted(g, room, text) > 0 }
			var lat []time.Duration
			var busy time.Duration
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				for r := range rooms { // a sender each: under the flood limits
					g.mustPost(fmt.Sprintf("r%d", r), fmt.Sprintf("s%d", r), fmt.Sprintf("tp-%d-%d", i, r))
				}
				testwait.For(b, 120*time.Second, "every room answered", func() bool {
					for r := range rooms {
						if !answered(fmt.Sprintf("r%d", r), fmt.Sprintf("tp-%d-%d", i, r)) {
							return false
						}
					}
					return true
				})
				busy += time.Since(start)
				for j := range serial {
					// Round the rooms: a room posted to while its turn
					// still runs would wait for it, and trip the web
					// loop guard. The next message waits until the turn
					// is over.
					room, folder, text := fmt.Sprintf("r%d", j%rooms), fmt.Sprintf("g%d", j%rooms), fmt.Sprintf("lat-%d-%d", i, j)
					done := len(g.records("turn done", "folder", folder))
					start := time.Now()
					g.mustPost(room, text, text)
					testwait.For(b, 30*time.Second, text+" answered", func() bool { return answered(room, text) })
					lat = append(lat, time.Since(start))
					testwait.For(b, 30*time.Second, text+"'s turn over", func() bool { return len(g.records("turn done", "folder", folder)) > done })
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			p50, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
			b.ReportMetric(float64(rooms*b.N)/busy.Seconds(), "turns/s")
			b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
			b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
			if c.workers == 0 {
				local.p50, local.p99 = p50, p99
				return
			}
			if local.p50 > 0 {
				b.ReportMetric(float64((p50 - local.p50).Milliseconds()), "added-p50-ms")
				b.ReportMetric(float64((p99 - local.p99).Milliseconds()), "added-p99-ms")
			}
			turns := 0
			for _, w := range workers {
				turns += len(w.records("turn done", "", ""))
			}
			if turns > 0 {
				moved := len(g.records("remote turn moves folder to another worker", "", ""))
				b.ReportMetric(100*float64(moved)/float64(turns), "moved-%")
			}
		})
	}
}
