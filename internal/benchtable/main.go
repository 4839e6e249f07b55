// Command benchtable reads `go test -bench` output on stdin and prints one
// table: each figure a benchmark reports, its floor measured in the same
// run (the metric "floor-<figure>"), their ratio ("x-floor", or figure /
// floor) and the goal of issue 33 it answers to, with whether it is met.
// `make bench` runs the benchmarks and pipes them here.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// goal is what one figure of the benchmarks whose name matches bench must
// reach (metric is a path.Match pattern: find-*-p99-ms is each query's);
// met says whether it does, given the figure, its floor (0: none) and
// their ratio.
type goal struct {
	bench, metric, text string
	met                 func(v, floor, ratio float64) bool
	ofFloor             bool // met compares with the floor: none measured, none met
}

func below(n float64) func(v, _, _ float64) bool { return func(v, _, _ float64) bool { return v < n } }
func ratioAtLeast(n float64) func(_, _, r float64) bool {
	return func(_, _, r float64) bool { return r >= n }
}
func ratioAtMost(n float64) func(_, _, r float64) bool {
	return func(_, _, r float64) bool { return r <= n }
}

var goals = []goal{
	{"Deliver", "msgs/s", "≥ 0.6× floor", ratioAtLeast(0.6), true},
	{"IngestHTTP", "msgs/s", "≥ 0.8× floor", ratioAtLeast(0.8), true},
	{"ToolsCall", "", "p50 ≤ 3× echo", ratioAtMost(3), true},
	{"Resolve10000", "resolve-ns", "≤ 2× at 10 routes", ratioAtMost(2), true},
	{"TurnStartOverhead", "", "≤ 3× fork/exec", ratioAtMost(3), true},
	{"FindMessages", "p99-ms", "< 100 ms", below(100), false},
	{"ScaleStart", "ready-s", "< 5 s", below(5), false},
	{"ScaleStart", "restart-s", "< 5 s", below(5), false},
	{"ScaleStart", "rss-MB", "< 500 MB", below(500), false},
	{"ScaleStart", "status-page-ms", "< 1 s", below(1000), false},
	{"ScaleStart", "rss-searched-MB", "< 500 MB", below(500), false},
	{"ScaleStart", "find-*-p99-ms", "< 100 ms", below(100), false},
	{"ScaleCLI", "cli-ms", "< 200 ms", below(200), false},
	{"ScaleCLI", "status-ms", "< 1 s", below(1000), false},
	{"Overload/capacity", "start-p99-ms", "< 100 ms", below(100), false},
	{"Overload/overload", "post-p99-ms", "< 50 ms", below(50), false},
	{"Overload/overload", "readyz-p99-ms", "< 50 ms", below(50), false},
	{"Overload/overload", "metrics-p99-ms", "< 50 ms", below(50), false},
	{"Overload/overload", "messages-p99-ms", "< 50 ms", below(50), false},
	{"Overload/overload", "turns/s", "≥ 0.8× slots / median turn", ratioAtLeast(0.8), true},
}

var line = regexp.MustCompile(`^Benchmark(\S+?)(-\d+)?\s+\d+\s+(.*)$`)

type row struct{ bench, metric, value, floor, ratio, goal, met string }

func main() {
	rows := table(os.Stdin)
	w := []int{9, 6, 5, 5, 5, 4}
	for _, r := range rows {
		for i, s := range []string{r.bench, r.metric, r.value, r.floor, r.ratio, r.goal} {
			w[i] = max(w[i], len([]rune(s)))
		}
	}
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len([]rune(s))) }
	fmt.Printf("%s  %s  %s  %s  %s  %s  met\n", pad("benchmark", w[0]), pad("figure", w[1]), pad("value", w[2]), pad("floor", w[3]), pad("ratio", w[4]), pad("goal", w[5]))
	for _, r := range rows {
		fmt.Printf("%s  %s  %s  %s  %s  %s  %s\n", pad(r.bench, w[0]), pad(r.metric, w[1]), pad(r.value, w[2]), pad(r.floor, w[3]), pad(r.ratio, w[4]), pad(r.goal, w[5]), r.met)
	}
}

// table reads benchmark lines and returns a row for each figure that has
// a floor or a goal.
func table(in io.Reader) []row {
	var rows []row
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		name, fields := m[1], strings.Fields(m[3])
		var order []string
		vals := map[string]float64{}
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				continue
			}
			vals[fields[i+1]] = v
			order = append(order, fields[i+1])
		}
		for _, metric := range order {
			if strings.HasPrefix(metric, "floor-") || metric == "x-floor" || strings.Contains(metric, "/op") {
				continue
			}
			v := vals[metric]
			floor, hasFloor := vals["floor-"+metric]
			ratio, hasRatio := vals["x-floor"]
			if hasFloor && !hasRatio && floor != 0 {
				ratio, hasRatio = v/floor, true
			}
			g, hasGoal := find(name, metric, hasFloor)
			if !hasFloor && !hasGoal {
				continue
			}
			r := row{bench: name, metric: metric, value: num(v), floor: "-", ratio: "-", goal: "-", met: "-"}
			if hasFloor {
				r.floor, r.ratio = num(floor), num(ratio)+"×"
			}
			if hasGoal {
				r.goal, r.met = g.text, "MISSED"
				switch {
				case g.ofFloor && !hasFloor:
					r.met = "no floor"
				case g.met(v, floor, ratio):
					r.met = "yes"
				}
			}
			rows = append(rows, r)
		}
	}
	return rows
}

// find is the goal for metric of bench: one naming the metric, or one
// naming none, for the benchmark's figure that has a floor.
func find(bench, metric string, hasFloor bool) (goal, bool) {
	for _, g := range goals {
		if bench != g.bench && !strings.HasPrefix(bench, g.bench+"/") {
			continue
		}
		if ok, _ := path.Match(g.metric, metric); ok && g.metric != "" || g.metric == "" && hasFloor {
			return g, true
		}
	}
	return goal{}, false
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
