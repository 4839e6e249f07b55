package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/scalegen"
	"switchboard/internal/testwait"
)

// The size of the installation the scale benchmarks make (issue 33: 10,000
// groups, 100,000 routed chats, 10 million stored messages; `make bench`
// passes the messages, and SCALE_ARGS can shrink all three).
var (
	scaleGroups   = flag.Int("scale.groups", 10000, "scale benchmarks: group folders")
	scaleChats    = flag.Int("scale.chats", 100000, "scale benchmarks: routed chats (one route each)")
	scaleMessages = flag.Int("scale.messages", 0, "scale benchmarks: stored messages")
	scaleSearches = flag.Int("scale.searches", 200, "scale benchmarks: find_messages calls a query and scope")
)

const benchLog = "{level: info, format: json}"

// makeScale generates an installation in a new directory.
func makeScale(b *testing.B, s scalegen.Spec) scalegen.Dataset {
	b.Helper()
	s.Dir = b.TempDir()
	ds, err := generateScale(b, s)
	if err != nil {
		b.Fatal(err)
	}
	return ds
}

// generateScale generates the installation s describes, with the
// benchmarks' listeners and log.
func generateScale(b *testing.B, s scalegen.Spec) (scalegen.Dataset, error) {
	b.Helper()
	s.WebListen, s.AdminListen, s.Log = "127.0.0.1:0", "127.0.0.1:0", benchLog
	ds, err := scalegen.Generate(context.Background(), s)
	if err != nil {
		return ds, err
	}
	b.Logf("generated %d groups, %d chats, %d messages in %s", s.Groups, s.Chats, s.Messages, ds.Took.Round(time.Millisecond))
	return ds, nil
}

// scaleShared is the installation of -scale.groups, -scale.chats and
// -scale.messages that BenchmarkScaleStart and BenchmarkScaleCLI share:
// generated once a run (10 million messages take minutes and 4 GB), in a
// directory TestMain removes. Benchmarks run one at a time.
var scaleShared struct {
	dir     string
	ds      scalegen.Dataset
	err     error
	started bool // a gateway ran on it: its first start (the seeding) is spent
}

// sharedScale returns the shared installation, generated at the first
// call, and whether no gateway has started on it yet.
func sharedScale(b *testing.B) (scalegen.Dataset, bool) {
	b.Helper()
	if scaleShared.dir == "" && scaleShared.err == nil {
		scaleShared.dir, scaleShared.err = os.MkdirTemp("", "switchboard-scale-")
		if scaleShared.err == nil {
			scaleShared.ds, scaleShared.err = generateScale(b, scalegen.Spec{Dir: scaleShared.dir,
				Groups: *scaleGroups, Chats: *scaleChats, Messages: *scaleMessages, RoutesInConfig: true})
		}
	}
	if scaleShared.err != nil {
		b.Fatal(scaleShared.err)
	}
	return scaleShared.ds, !scaleShared.started
}

// removeSharedScale removes the shared installation (from TestMain).
func removeSharedScale() {
	if scaleShared.dir != "" {
		os.RemoveAll(scaleShared.dir)
	}
}

// socketFloor is what start-up cannot avoid at n groups on this file
// system: a directory and a bound unix socket for each, one at a time,
// beside the data directory. The socket files stay until the benchmark
// ends: on an ext4 without a journal (this machine's) each new inode's
// allocation steps over every inode of its group freed in the last 1 to
// 6 minutes, one by one (recently_deleted), so 10,000 sockets removed just
// before the gateway starts made its 10,000 binds quadratic.
func socketFloor(b *testing.B, n int) time.Duration {
	b.Helper()
	root := filepath.Join(b.TempDir(), "floor")
	start := time.Now()
	lns := make([]*net.UnixListener, n)
	for i := range n {
		d := filepath.Join(root, strconv.Itoa(i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			b.Fatal(err)
		}
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(d, "mcp.sock"), Net: "unix"})
		if err != nil {
			b.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		lns[i] = ln
	}
	took := time.Since(start)
	for _, ln := range lns {
		ln.Close()
	}
	return took
}

// startReady starts the gateway on dir and returns it once /readyz
// answers 200, with the time that took from the process's start.
func startReady(b *testing.B, dir string) (*gw, time.Duration) {
	b.Helper()
	start := time.Now()
	g := startGW(b, dir)
	testwait.For(b, 120*time.Second, "/readyz 200", func() bool {
		resp, err := g.http.Get("http://" + g.adminAddr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return g, time.Since(start)
}

// rssMB is the process's resident memory (VmRSS) in megabytes.
func rssMB(b *testing.B, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

// getTimes GETs url n times and returns the durations, sorted.
func getTimes(b *testing.B, c *http.Client, url string, n int) []time.Duration {
	b.Helper()
	var ds []time.Duration
	for range n {
		start := time.Now()
		resp, err := c.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %d", url, resp.StatusCode)
		}
		ds = append(ds, time.Since(start))
	}
	slices.Sort(ds)
	return ds
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkScaleStart: the real binary's first start on the shared
// installation (sharedScale: -scale.groups groups, -scale.chats routes
// listed in its config, which it seeds, and -scale.messages stored
// messages), then a restart, each to /readyz 200; beside the floor
// measured in the same run: making the groups' socket directories and
// binding their sockets one at a time. Also the resident memory once
// ready, the status page's median, and find_messages over MCP on the
// restarted gateway (scaleSearch: p50 and p99 of each query, across all
// chats and within a group's chats, and the resident memory after).
//
//	go test -run '^$' -bench ScaleStart -benchtime 1x ./cmd/switchboard/ -args -scale.messages=1000000
func BenchmarkScaleStart(b *testing.B) {
	switchboardBinary(b) // built before the clock starts
	for range b.N {
		ds, fresh := sharedScale(b)
		if !fresh { // its first start is spent: a first start needs an installation of its own
			ds = makeScale(b, scalegen.Spec{Groups: *scaleGroups, Chats: *scaleChats, Messages: *scaleMessages, RoutesInConfig: true})
		}
		scaleShared.started = true
		floor := socketFloor(b, *scaleGroups)
		g, first := startReady(b, filepath.Dir(ds.Config))
		rss := rssMB(b, g.cmd.Process.Pid)
		page := getTimes(b, g.http, "http://"+g.adminAddr+"/", 5)
		if err := g.stop(60 * time.Second); err != nil {
			b.Fatal(err)
		}
		g, again := startReady(b, filepath.Dir(ds.Config))
		rss = max(rss, rssMB(b, g.cmd.Process.Pid))
		b.ReportMetric(first.Seconds(), "ready-s")
		b.ReportMetric(floor.Seconds(), "floor-ready-s")
		b.ReportMetric(first.Seconds()/floor.Seconds(), "x-floor")
		b.ReportMetric(again.Seconds(), "restart-s")
		b.ReportMetric(rss, "rss-MB")
		b.ReportMetric(ms(page[len(page)/2]), "status-page-ms")
		if *scaleMessages > 0 {
			scaleSearch(b, ds, *scaleSearches)
			b.ReportMetric(rssMB(b, g.cmd.Process.Pid), "rss-searched-MB")
		}
		if err := g.stop(60 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
}

// cliCommands are the commands BenchmarkScaleCLI times (reads; version is
// the floor: the process alone).
var cliCommands = []string{"version", "status", "group list", "route explain web:c0000001", "route explain web:nomatch",
	"route list", "route list --limit 1000", "grants show g000001", "grants check g000001 send_message jid=web:c0000001",
	"task list", "turns", "turns --limit 1000",
	"budget list", "token list", "messages search deploy"}

// BenchmarkScaleCLI: each command of cliCommands (median of three runs of
// the real binary) while the config lists every route, on the shared
// installation (sharedScale) once a gateway seeded them; reports the slowest command against version's
// time (the process's start) and switchboard status alone.
//
//	go test -run '^$' -bench ScaleCLI -benchtime 1x ./cmd/switchboard/
func BenchmarkScaleCLI(b *testing.B) {
	bin := switchboardBinary(b)
	ds, fresh := sharedScale(b)
	if fresh { // seeded by a first start, as an operator's installation is
		scaleShared.started = true
		g, _ := startReady(b, filepath.Dir(ds.Config))
		if err := g.stop(60 * time.Second); err != nil {
			b.Fatal(err)
		}
	}
	for range b.N {
		median := map[string]time.Duration{}
		slowest := ""
		var report strings.Builder // one line: go test keeps ten lines of a benchmark's log
		for _, c := range cliCommands {
			var ts []time.Duration
			for range 3 {
				start := time.Now()
				out, err := exec.Command(bin, append([]string{"--config", ds.Config}, strings.Fields(c)...)...).CombinedOutput()
				if err != nil {
					b.Fatalf("switchboard %s: %v\n%s", c, err, out)
				}
				ts = append(ts, time.Since(start))
			}
			slices.Sort(ts)
			median[c] = ts[1]
			if c != "version" && (slowest == "" || ts[1] > median[slowest]) {
				slowest = c
			}
			fmt.Fprintf(&report, "; %s %.1f ms", c, ms(ts[1]))
		}
		b.Logf("slowest: %s%s", slowest, report.String())
		b.ReportMetric(ms(median[slowest]), "cli-ms")
		b.ReportMetric(ms(median["version"]), "floor-cli-ms")
		b.ReportMetric(float64(median[slowest])/float64(median["version"]), "x-floor")
		b.ReportMetric(ms(median["status"]), "status-ms")
	}
}

// scaleDB opens the installation's database read-only for the figures
// the benchmarks compute after a run.
func scaleDB(b *testing.B, ds scalegen.Dataset) *sql.DB {
	b.Helper()
	return openDB(b, ds.DataDir).Read()
}

// load is one run of posts at a steady rate over chats, with probes of the
// gateway's other endpoints while it lasts.
type load struct {
	rate     int           // posts a second
	chats    int           // web:c0000001… in turn
	duration time.Duration // how long the posts go on
}

// loadResult is what a load run saw.
type loadResult struct {
	posted, refused int
	post            []time.Duration            // each POST's answer time
	probes          map[string][]time.Duration // endpoint → answer times during the load
	start, end      time.Time
}

// run posts l.rate messages a second for l.duration (a sender per chat,
// each message unique) from 64 clients, and GETs /readyz, /metrics and one
// chat's messages every 50 ms meanwhile.
func (l load) run(b *testing.B, g *gw) loadResult {
	b.Helper()
	n := int(float64(l.rate) * l.duration.Seconds())
	type done struct {
		d  time.Duration
		ok bool
	}
	jobs, results := make(chan int, n), make(chan done, n)
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	post := &gw{t: b, addr: g.addr, http: client}
	for range 64 {
		go func() {
			for i := range jobs {
				room := scalegen.Chat(i % l.chats)[len("web:"):]
				start := time.Now()
				status, _, err := post.post(context.Background(), room, fmt.Sprintf("s%d", i%l.chats), fmt.Sprintf("load %d", i), "")
				results <- done{time.Since(start), err == nil && status == http.StatusAccepted}
			}
		}()
	}
	probeURLs := map[string]string{"readyz": "http://" + g.adminAddr + "/readyz", "metrics": "http://" + g.adminAddr + "/metrics",
		"messages": "http://" + g.addr + "/api/rooms/c0000001/messages"}
	probes := map[string][]time.Duration{}
	stop := make(chan struct{})
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for name, u := range probeURLs {
				start := time.Now()
				if resp, err := client.Get(u); err == nil {
					resp.Body.Close()
					probes[name] = append(probes[name], time.Since(start))
				}
			}
		}
	}()
	r := loadResult{start: time.Now()}
	tick := time.NewTicker(10 * time.Millisecond)
	for sent := 0; sent < n; {
		<-tick.C
		due := min(n, int(time.Since(r.start).Seconds()*float64(l.rate)))
		for ; sent < due; sent++ {
			jobs <- sent
		}
	}
	tick.Stop()
	close(jobs)
	for range n {
		d := <-results
		r.post = append(r.post, d.d)
		if d.ok {
			r.posted++
		} else {
			r.refused++
		}
	}
	r.end = time.Now()
	close(stop)
	<-probed
	r.probes = probes
	slices.Sort(r.post)
	for _, p := range r.probes {
		slices.Sort(p)
	}
	return r
}

// p is the q-quantile of sorted durations, in milliseconds.
func p(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	return ms(ds[min(len(ds)-1, int(float64(len(ds))*q))])
}

// waitAnswered waits until every chat's last message from a person has a
// bot message after it and the turn that answered it is recorded, and
// returns when that happened.
func waitAnswered(b *testing.B, db *sql.DB, chats int, within time.Duration) time.Time {
	b.Helper()
	testwait.For(b, within, "every chat answered", func() bool {
		var open int
		err := db.QueryRow(`SELECT count(*) FROM (SELECT chat_jid, max(CASE WHEN from_bot = 0 THEN seq END) AS asked,
			max(CASE WHEN from_bot = 1 THEN seq END) AS answered FROM messages WHERE chat_jid LIKE 'web:c%' GROUP BY chat_jid)
			WHERE answered IS NULL OR answered < asked`).Scan(&open)
		if err != nil || open > 0 {
			return false
		}
		// The reply goes out during the turn; its record comes at its end.
		err = db.QueryRow(`SELECT count(*) FROM (SELECT chat_jid, max(created_ms) AS asked FROM messages
			WHERE chat_jid LIKE 'web:c%' AND from_bot = 0 GROUP BY chat_jid) m
			WHERE NOT EXISTS (SELECT 1 FROM turns t WHERE t.chat_jid = m.chat_jid AND t.started_ms >= m.asked)`).Scan(&open)
		return err == nil && open == 0
	})
	var n int
	if err := db.QueryRow(`SELECT count(DISTINCT chat_jid) FROM messages WHERE chat_jid LIKE 'web:c%' AND from_bot = 1`).Scan(&n); err != nil || n != chats {
		b.Fatalf("%d chats answered, want %d (%v)", n, chats, err)
	}
	return time.Now()
}

// turnStarts is, for each message people sent in the run, how long after
// it was stored the first turn of its chat started, sorted.
func turnStarts(b *testing.B, db *sql.DB) []time.Duration {
	b.Helper()
	rows, err := db.Query(`SELECT (SELECT min(t.started_ms) FROM turns t WHERE t.chat_jid = m.chat_jid AND t.started_ms >= m.created_ms) - m.created_ms,
		m.chat_jid, m.created_ms, (SELECT group_concat(t.started_ms || ' ' || t.status) FROM turns t WHERE t.chat_jid = m.chat_jid)
		FROM messages m WHERE m.from_bot = 0 AND m.chat_jid LIKE 'web:c%' AND m.text LIKE 'load %'`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var ds []time.Duration
	for rows.Next() {
		var d sql.NullInt64
		var chat, turns sql.NullString
		var created int64
		if err := rows.Scan(&d, &chat, &created, &turns); err != nil {
			b.Fatal(err)
		}
		if !d.Valid {
			b.Fatalf("a message was never followed by a turn of its chat: %s at %d, turns %s", chat.String, created, turns.String)
		}
		ds = append(ds, time.Duration(d.Int64)*time.Millisecond)
	}
	slices.Sort(ds)
	return ds
}

// turnRate is the turns started per second between the first and the last
// turn start of the run, and the median turn duration.
func turnRate(b *testing.B, db *sql.DB) (perSecond float64, median time.Duration) {
	b.Helper()
	var n int
	var first, last int64
	if err := db.QueryRow(`SELECT count(*), min(started_ms), max(started_ms) FROM turns WHERE chat_jid LIKE 'web:c%'`).Scan(&n, &first, &last); err != nil {
		b.Fatal(err)
	}
	var med int64
	if err := db.QueryRow(`SELECT duration_ms FROM turns WHERE chat_jid LIKE 'web:c%' ORDER BY duration_ms LIMIT 1 OFFSET ?`, n/2).Scan(&med); err != nil {
		b.Fatal(err)
	}
	return float64(n-1) / (float64(last-first) / 1000), time.Duration(med) * time.Millisecond
}

// BenchmarkOverload: the real binary and the demo agent (agent.max_concurrent
// 4, no sandbox) under web POSTs over 1,000 chats, each routed to its own
// group. capacity: 20 a second for 20 s, a load the agent slots carry:
// message → turn start p50 and p99. overload: 1,000 a second for 20 s:
// every POST accepted, the POST, /readyz, /metrics and chat history p99
// while it lasts, the turns started a second against what the slots allow
// (max_concurrent / median turn time: floor-turns/s), and how long the
// backlog takes to drain once the posts stop, every chat answered.
//
//	go test -run '^$' -bench Overload -benchtime 1x ./cmd/switchboard/
func BenchmarkOverload(b *testing.B) {
	const chats, slots = 1000, 4
	for _, c := range []struct {
		name string
		load load
	}{
		{"capacity", load{rate: 20, chats: chats, duration: 20 * time.Second}},
		{"overload", load{rate: 1000, chats: chats, duration: 20 * time.Second}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				ds := makeScale(b, scalegen.Spec{Groups: chats, Chats: chats, RoutesInConfig: true, MaxConcurrent: slots})
				g, _ := startReady(b, filepath.Dir(ds.Config))
				db := scaleDB(b, ds)
				r := c.load.run(b, g)
				if r.refused > 0 {
					b.Errorf("%d of %d POSTs refused", r.refused, r.posted+r.refused)
				}
				drained := waitAnswered(b, db, min(chats, r.posted), 10*time.Minute)
				var stored int
				if err := db.QueryRow(`SELECT count(*) FROM messages WHERE from_bot = 0 AND text LIKE 'load %'`).Scan(&stored); err != nil || stored != r.posted {
					b.Errorf("%d messages stored, %d accepted (%v)", stored, r.posted, err)
				}
				starts := turnStarts(b, db)
				rate, med := turnRate(b, db)
				b.ReportMetric(p(starts, 0.5), "start-p50-ms")
				b.ReportMetric(p(starts, 0.99), "start-p99-ms")
				b.ReportMetric(p(r.post, 0.99), "post-p99-ms")
				for name, ds := range r.probes {
					b.ReportMetric(p(ds, 0.99), name+"-p99-ms")
				}
				b.ReportMetric(rate, "turns/s")
				b.ReportMetric(float64(slots)/med.Seconds(), "floor-turns/s")
				b.ReportMetric(rate/(float64(slots)/med.Seconds()), "x-floor")
				b.ReportMetric(drained.Sub(r.end).Seconds(), "drain-s")
			}
		})
	}
}
