package main

import (
	"strings"
	"testing"
)

// TestTable: each figure with a goal or a floor gets a row saying whether
// the goal is met; find_messages' per-query p99 figures each answer to
// the < 100 ms goal, their p50 to none.
func TestTable(t *testing.T) {
	in := strings.Join([]string{
		"goos: linux",
		"BenchmarkScaleStart-2   1   9000000000 ns/op   3.1 ready-s   1.0 floor-ready-s   3.1 x-floor   2.4 restart-s   280 rss-MB   4.2 find-root-commonest-p50-ms   7.5 find-root-commonest-p99-ms   40 find-group-phrase-p50-ms   130 find-group-phrase-p99-ms   300 rss-searched-MB",
		"BenchmarkFindMessages/all_chats/rare-2   1000   5000 ns/op   0.1 p50-ms   0.2 p99-ms   3 hits",
		"BenchmarkDeliver/callers=64-2   30000   40000 ns/op   25000 msgs/s   50000 floor-msgs/s   0.5 x-floor",
		"BenchmarkDeliverWhileScraped/scrapers=0-2   30000   40000 ns/op   25000 msgs/s   0 scrapes/s",
		"BenchmarkResolve10000/chat-2   1000000   100 ns/op   60 resolve-ns   40 floor-resolve-ns   1.5 x-floor",
	}, "\n")
	got := map[string]row{}
	for _, r := range table(strings.NewReader(in)) {
		got[r.bench+" "+r.metric] = r
	}
	for key, want := range map[string]struct{ goal, met string }{
		"ScaleStart ready-s":                    {"< 5 s", "yes"},
		"ScaleStart restart-s":                  {"< 5 s", "yes"},
		"ScaleStart rss-searched-MB":            {"< 500 MB", "yes"},
		"ScaleStart find-root-commonest-p99-ms": {"< 100 ms", "yes"},
		"ScaleStart find-group-phrase-p99-ms":   {"< 100 ms", "MISSED"},
		"FindMessages/all_chats/rare p99-ms":    {"< 100 ms", "yes"},
		"Deliver/callers=64 msgs/s":             {"≥ 0.6× floor", "MISSED"},
		"Resolve10000/chat resolve-ns":          {"≤ 2× at 10 routes", "yes"},
	} {
		r, ok := got[key]
		if !ok {
			t.Errorf("%s: no row", key)
			continue
		}
		if r.goal != want.goal || r.met != want.met {
			t.Errorf("%s: goal %q met %q, want %q %q", key, r.goal, r.met, want.goal, want.met)
		}
	}
	if r := got["ScaleStart ready-s"]; r.floor != "1" || r.ratio != "3.1×" {
		t.Errorf("ready-s: floor %q ratio %q, want 1 and 3.1×", r.floor, r.ratio)
	}
	for _, key := range []string{"DeliverWhileScraped/scrapers=0 msgs/s", "ScaleStart find-root-commonest-p50-ms", "ScaleStart find-group-phrase-p50-ms", "FindMessages/all_chats/rare hits"} {
		if _, ok := got[key]; ok {
			t.Errorf("%s: a row for a figure with neither goal nor floor", key)
		}
	}
}
