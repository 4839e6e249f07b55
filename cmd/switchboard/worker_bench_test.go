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
// at once and waits until all are answered (turns/s), then one message at a
// time in one room (message→answer p50, p90).
//
//	go test -run '^$' -bench Workers -benchtime 3x ./cmd/switchboard/
func BenchmarkWorkers(b *testing.B) {
	const rooms = 40
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
			for i := range c.workers {
				startWorker(b, dir, fmt.Sprintf("w%d", i), g.findLog("embedded nats server listening")["url"].(string), 4)
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
				for j := range 10 {
					text := fmt.Sprintf("lat-%d-%d", i, j)
					start := time.Now()
					g.mustPost("r0", text, text)
					testwait.For(b, 30*time.Second, text+" answered", func() bool { return answered("r0", text) })
					lat = append(lat, time.Since(start))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(rooms*b.N)/busy.Seconds(), "turns/s")
			b.ReportMetric(float64(lat[len(lat)/2].Milliseconds()), "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*9/10].Milliseconds()), "p90-ms")
		})
	}
}
