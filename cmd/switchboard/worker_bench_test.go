package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// TestBenchWorkers measures, with the demo agent (answering over MCP HTTP)
// and the real binary: turns per second with the local runner and with 1
// and 2 `switchboard worker` processes, and the time from a message to its
// answer (one turn at a time) locally and through a worker. It only runs
// with SWITCHBOARD_BENCH=1 and reports with t.Log:
//
//	SWITCHBOARD_BENCH=1 go test -run TestBenchWorkers -v ./cmd/switchboard/
func TestBenchWorkers(t *testing.T) {
	if os.Getenv("SWITCHBOARD_BENCH") == "" {
		t.Skip("a benchmark: set SWITCHBOARD_BENCH=1")
	}
	const rooms, latencyTurns = 40, 30
	for _, c := range []struct {
		name    string
		workers int
	}{{"local", 0}, {"nats-1-worker", 1}, {"nats-2-workers", 2}} {
		t.Run(c.name, func(t *testing.T) {
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
			dir := newE2E(t, cfg)
			g := startGW(t, dir)
			for i := range c.workers {
				startWorker(t, dir, fmt.Sprintf("w%d", i), g.findLog("embedded nats server listening")["url"].(string), 4)
			}
			// Warm up: one turn per room.
			answer := func(room, text string) bool { return quoted(g, room, text) > 0 }
			// Latency: one message at a time in r0.
			var lat []time.Duration
			for i := range latencyTurns {
				text := fmt.Sprintf("lat-%d", i)
				start := time.Now()
				g.mustPost("r0", text, text) // a sender each: under the flood limits
				testwait.For(t, 30*time.Second, text+" answered", func() bool { return answer("r0", text) })
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			// Throughput: one message in each room at once.
			start := time.Now()
			for r := range rooms {
				g.mustPost(fmt.Sprintf("r%d", r), fmt.Sprintf("s%d", r), fmt.Sprintf("tp-%d", r))
			}
			testwait.For(t, 120*time.Second, "every room answered", func() bool {
				for r := range rooms {
					if !answer(fmt.Sprintf("r%d", r), fmt.Sprintf("tp-%d", r)) {
						return false
					}
				}
				return true
			})
			el := time.Since(start)
			t.Logf("%s: message→answer p50 %s p90 %s max %s (%d turns one at a time); %d turns at once in %s = %.1f turns/s",
				c.name, lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*9/10].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
				latencyTurns, rooms, el.Round(time.Millisecond), float64(rooms)/el.Seconds())
		})
	}
}
