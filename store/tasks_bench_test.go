//go:build unix

package store

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"switchboard/scheduler"
)

// The 100k-task scheduler load test (issue 5): the real scheduler.Loop on
// the real clock over this store on a file in a temp dir, taking the
// gateway's path: the store queues each claimed slot's turn in the claim's
// transaction (ClaimAndQueue), and the Firer, a TurnStarter, only records
// when the turns were started (the gateway's StartTurns kicks the folders'
// workers and touches no store). Run it alone:
//
//	GOFLAGS=-tags=sqlite_fts5 go test -run '^$' -bench BenchmarkScheduler100k -benchtime 1x ./store
//
// The 100,000 active tasks: 93,000 cron and interval tasks due an hour or
// more from now, 1,000 overdue ones for Startup to catch up, and 6,000 that
// the load phase re-times to fall due within 20 s: 400 every second, plus
// 2,000 at one instant. It takes 35-45 s and reports figures; it asserts
// only correctness (every due slot fired exactly once, its turn queued
// with its claim), never timing.
const (
	benchTasks      = 100_000
	benchOverdue    = 1_000 // missed while "down" (1-3 hourly slots each); Startup applies their policy
	benchSpread     = 4_000 // @every 10s, first slots spread over 10 s: 400 due each second
	benchBurstOnce  = 1_000 // one-shots at one instant (base+5s)
	benchBurstEvery = 1_000 // @every 15s, first slot at that same instant
	benchBurstAt    = 5 * time.Second
	benchIdle       = 3 * time.Second
	benchLead       = 2 * time.Second  // from re-timing the load tasks to their first slot
	benchWindow     = 20 * time.Second // load slots measured: [base, base+window]
)

type benchRole uint8

const (
	roleBackground benchRole = iota // due an hour or more from now
	roleOverdue
	roleSpread
	roleBurstOnce
	roleBurstEvery
)

// BenchmarkScheduler100k measures, with 100,000 active tasks: the time to
// insert them (AddTask, one transaction each, as the CLI does), start-up
// (Loop.Startup, catch-up of the overdue tasks included, until Run has
// computed its first sleep), memory after start-up, CPU and store calls
// while idle, and how late due slots fire under load (time the turn is
// queued and started − slot).
func BenchmarkScheduler100k(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: the 100k-task scheduler load test takes ~40 s")
	}
	for range b.N {
		ctx := context.Background()
		s := newStore(b)
		if err := s.AddGroup(ctx, "main"); err != nil {
			b.Fatal(err)
		}
		roles := benchInsertTasks(b, s)
		cs := &countingStore{s: s, firstNextDue: make(chan struct{})}
		f := &benchFirer{s: s}
		loop := scheduler.NewLoop(cs, f, scheduler.SystemClock(), nil)
		stop := benchStartup(b, loop, cs, f)
		benchIdleWindow(b, cs)
		benchLoad(b, s, roles, loop, cs, f, stop)
	}
}

// benchStartup runs Startup, then starts Run and waits for its first pass
// and NextDue (its first sleep); stop stops Run.
func benchStartup(b *testing.B, loop *scheduler.Loop, cs *countingStore, f *benchFirer) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	rss0 := rssBytes()
	start := time.Now()
	if err := loop.Startup(ctx, start); err != nil {
		b.Fatal(err)
	}
	catchUp := time.Since(start)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := loop.Run(ctx); err != nil {
			b.Error(err)
		}
	}()
	<-cs.firstNextDue
	total := time.Since(start)
	b.ReportMetric(float64(total.Microseconds())/1000, "startup-ms")
	// Run's first pass and sleep computation over the 100k tasks, after
	// Startup's catch-up of the overdue ones.
	b.ReportMetric(float64((total-catchUp).Microseconds())/1000, "first-sleep-ms")
	b.ReportMetric(float64(f.count()), "startup-fires")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	b.ReportMetric((float64(ms.HeapInuse)-float64(ms0.HeapInuse))/(1<<20), "startup-heap-delta-MB")
	b.ReportMetric(float64(rssBytes()-rss0)/(1<<20), "startup-rss-delta-MB")
	b.ReportMetric(float64(rssBytes())/(1<<20), "rss-MB")
	return func() { cancel(); <-done }
}

// benchIdleWindow watches the loop for benchIdle while nothing is due for
// the next half hour: it must sleep, not poll.
func benchIdleWindow(b *testing.B, cs *countingStore) {
	calls0, cpu0, t0 := cs.calls.Load(), cpuTime(), time.Now()
	// Idle time is what this measures: the window is a span of wall-clock
	// time with nothing due, not a wait for an event.
	time.Sleep(benchIdle)
	idle := time.Since(t0)
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/idle.Seconds(), "idle-cpu-ms/s")
	b.ReportMetric(float64(cs.calls.Load()-calls0), "idle-store-calls")
}

// benchLoad re-times the load tasks to fall due from two seconds on, wakes
// the loop (as the gateway does when tasks change), waits until every slot
// in the window has fired, stops the loop and reports.
func benchLoad(b *testing.B, s *Store, roles map[int64]benchRole, loop *scheduler.Loop, cs *countingStore, f *benchFirer, stop func()) {
	base := time.Now().Add(benchLead).Truncate(time.Second)
	expected := benchRetime(b, s, roles, base)
	calls0, cpu0, t0, fired0 := cs.calls.Load(), cpuTime(), time.Now(), f.count()
	claimCalls0, claimed0 := cs.claimCalls.Load(), cs.claimed.Load()
	claimT0, dueT0, fireT0 := cs.claimTime.Load(), cs.dueTime.Load(), f.busy.Load()
	end := base.Add(benchWindow)
	// The window's last slot is end itself (a spread task's third), so the
	// window has passed once every slot in it fired.
	all := f.await(base, end, expected)
	loop.Wake()
	select {
	case <-all:
	case <-time.After(time.Until(end.Add(20 * time.Second))):
	}
	stop()
	busy := time.Since(t0)
	var queued int
	if err := s.r.QueryRow(`SELECT count(*) FROM work WHERE trigger = ? AND run_id > 0`, TriggerTask).Scan(&queued); err != nil {
		b.Fatal(err)
	}
	if queued != f.count() || f.calls.Load() != 0 {
		b.Errorf("%d task turns queued for %d started, %d through Fire; want all claimed and queued in one step, as the gateway does",
			queued, f.count(), f.calls.Load())
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/busy.Seconds(), "load-cpu-ms/s")
	fires := f.count() - fired0
	b.ReportMetric(float64(cs.calls.Load()-calls0)/float64(max(fires, 1)), "store-calls/fire")
	b.ReportMetric(float64(cs.claimed.Load()-claimed0)/float64(max(cs.claimCalls.Load()-claimCalls0, 1)), "claims/commit")
	// Where the time goes, per fire: DueTasks, ClaimAndQueue (claim and
	// queue the turn) and the Firer's StartTurns.
	perFire := func(ns int64) float64 { return float64(ns) / 1000 / float64(max(fires, 1)) }
	b.ReportMetric(perFire(cs.dueTime.Load()-dueT0), "due-µs/fire")
	b.ReportMetric(perFire(cs.claimTime.Load()-claimT0), "claim-µs/fire")
	b.ReportMetric(perFire(f.busy.Load()-fireT0), "fire-µs/fire")
	benchReportLateness(b, f, base, end, expected)
}

// benchInsertTasks stores benchTasks active tasks in random order and
// returns the role of each task that is not a background one, by id.
func benchInsertTasks(b *testing.B, s *Store) map[int64]benchRole {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	roles := make([]benchRole, benchTasks)
	i := 0
	for _, n := range []struct {
		role benchRole
		n    int
	}{{roleOverdue, benchOverdue}, {roleSpread, benchSpread}, {roleBurstOnce, benchBurstOnce}, {roleBurstEvery, benchBurstEvery}} {
		for range n.n {
			roles[i] = n.role
			i++
		}
	}
	r.Shuffle(len(roles), func(i, j int) { roles[i], roles[j] = roles[j], roles[i] })

	now := time.Now()
	byID := make(map[int64]benchRole, benchTasks/10)
	start := time.Now()
	for i, role := range roles {
		t := benchTask(b, r, role, i, now)
		got, err := s.AddTask(ctx, t)
		if err != nil {
			b.Fatal(err)
		}
		if role != roleBackground {
			byID[got.ID] = role
		}
	}
	d := time.Since(start)
	b.ReportMetric(d.Seconds(), "insert-100k-s")
	return byID
}

var benchZones = []string{"UTC", "Europe/London", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "Europe/Berlin"}

// benchTask makes the task for one role. Load tasks get a placeholder Next
// a month away; benchRetime sets their real slots.
func benchTask(b *testing.B, r *rand.Rand, role benchRole, i int, now time.Time) scheduler.Task {
	spec, zone, from := "", benchZones[i%len(benchZones)], now.Add(time.Hour)
	missed := []string{"skip", "once", "all"}[i%3]
	placeholder := now.Add(30 * 24 * time.Hour)
	switch role {
	case roleBackground:
		switch i % 4 {
		case 0:
			spec = fmt.Sprintf("%d %d * * 1-5", r.IntN(60), r.IntN(24))
		case 1:
			spec = fmt.Sprintf("%d %d * * *", r.IntN(60), r.IntN(24))
		case 2:
			spec = fmt.Sprintf("@every %dh", 2+r.IntN(22))
		default:
			spec = []string{"@daily", "@weekly", "@monthly", "0 */4 * * *"}[r.IntN(4)]
		}
	case roleOverdue:
		// Hourly at a minute half an hour from now, so the next slot after
		// catch-up is not inside the idle window.
		spec, zone, from = fmt.Sprintf("%d * * * *", (now.Minute()+30)%60), "UTC", now
	case roleSpread:
		spec, from = "@every 10s", placeholder
	case roleBurstEvery:
		spec, from = "@every 15s", placeholder
	case roleBurstOnce:
		spec, from = placeholder.Truncate(time.Second).Format(time.RFC3339), now
	}
	t, err := scheduler.NewTask(scheduler.TaskSpec{Folder: "main", ChatJID: "web:lobby", Prompt: "summarise the day's news for the team",
		Schedule: spec, Timezone: zone, Missed: missed, CreatedBy: "main"}, "UTC", from)
	if err != nil {
		b.Fatal(err)
	}
	if role == roleOverdue {
		t.Next = t.Next.Add(-time.Duration(1+i/3%3) * time.Hour) // 1-3 missed slots
	}
	return t
}

// benchRetime moves every load task's first slot to base or just after it
// (one-shots get a new spec to match) and returns how many slots fall in
// [base, base+benchWindow].
func benchRetime(b *testing.B, s *Store, roles map[int64]benchRole, base time.Time) int {
	ctx := context.Background()
	end := base.Add(benchWindow)
	expected, spread := 0, 0
	ids := make([]int64, 0, len(roles))
	for id := range roles {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	err := s.Write(ctx, func(tx *sql.Tx) error {
		for _, id := range ids {
			var first time.Time
			var every time.Duration
			spec := ""
			switch roles[id] {
			case roleSpread:
				first, every = base.Add(time.Duration(spread%10)*time.Second), 10*time.Second
				spread++
			case roleBurstEvery:
				first, every = base.Add(benchBurstAt), 15*time.Second
			case roleBurstOnce:
				first = base.Add(benchBurstAt)
				spec = first.UTC().Format(time.RFC3339)
			default:
				continue
			}
			for t := first; !t.After(end); t = t.Add(every) {
				expected++
				if every == 0 {
					break
				}
			}
			q, args := `UPDATE tasks SET next_s = ? WHERE id = ?`, []any{first.Unix(), id}
			if spec != "" {
				q, args = `UPDATE tasks SET next_s = ?, spec = ? WHERE id = ?`, []any{first.Unix(), spec, id}
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return expected
}

// benchReportLateness reports the lateness of the fires whose slot is in
// [base, end], overall and split between the instants where only the
// spread tasks fall due (400 a second) and the burst at base+benchBurstAt
// (2,400 at once); it fails if a slot fired twice or not at all.
func benchReportLateness(b *testing.B, f *benchFirer, base, end time.Time, expected int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var late []benchFire
	seen := make(map[[2]int64]bool, len(f.fires))
	perInstant := map[int64]int{}
	for _, fr := range f.fires {
		k := [2]int64{fr.task, fr.slot.Unix()}
		if seen[k] {
			b.Errorf("task %d slot %s fired twice", fr.task, fr.slot)
		}
		seen[k] = true
		if !fr.slot.Before(base) && !fr.slot.After(end) {
			late = append(late, fr)
			perInstant[fr.slot.Unix()]++
		}
	}
	if len(late) != expected {
		b.Errorf("%d slots fired in the load window, want %d", len(late), expected)
	}
	var all, steady []time.Duration
	var burst time.Duration
	for _, fr := range late {
		d := fr.at.Sub(fr.slot)
		all = append(all, d)
		if perInstant[fr.slot.Unix()] <= benchSpread/10 {
			steady = append(steady, d)
		}
		if fr.slot.Equal(base.Add(benchBurstAt)) {
			burst = max(burst, d)
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	pct := func(ds []time.Duration, p int) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		slices.Sort(ds)
		return ds[min(len(ds)*p/100, len(ds)-1)]
	}
	b.ReportMetric(float64(len(all)), "load-fires")
	b.ReportMetric(ms(pct(all, 50)), "p50-late-ms")
	b.ReportMetric(ms(pct(all, 99)), "p99-late-ms")
	b.ReportMetric(ms(pct(all, 100)), "max-late-ms")
	b.ReportMetric(ms(pct(steady, 99)), "steady-p99-late-ms")
	b.ReportMetric(ms(burst), "burst-drain-ms")
	b.ReportMetric(float64(perInstant[base.Add(benchBurstAt).Unix()])/max(burst.Seconds(), 1e-9), "burst-fires/s")
}

// benchFirer records when each slot's turn was started. Its Fire, which the
// Loop does not call over this store, makes the store call gateway.Fire
// makes.
type benchFirer struct {
	s     *Store
	calls atomic.Int64 // Fire calls
	busy  atomic.Int64 // ns spent in Fire and StartTurns
	mu    sync.Mutex
	fires []benchFire
	watch *benchWatch // set by await
}

// benchWatch counts the fires whose slot is in [from, to] and closes done
// when there are want of them.
type benchWatch struct {
	from, to time.Time
	want, n  int
	done     chan struct{}
}

// await returns a channel closed once want fires with a slot in [from, to]
// happened after this call.
func (f *benchFirer) await(from, to time.Time, want int) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watch = &benchWatch{from: from, to: to, want: want, done: make(chan struct{})}
	return f.watch.done
}

type benchFire struct {
	task     int64
	slot, at time.Time
}

func (f *benchFirer) Fire(ctx context.Context, t scheduler.Task, slot time.Time, runID int64) error {
	f.calls.Add(1)
	defer addSince(&f.busy, time.Now())
	if err := f.s.QueueTaskTurn(ctx, t.ID, runID); err != nil {
		return err
	}
	f.StartTurns(ctx, []scheduler.Fired{{Task: t, Slot: slot, RunID: runID}})
	return nil
}

func (f *benchFirer) StartTurns(ctx context.Context, fires []scheduler.Fired) {
	defer addSince(&f.busy, time.Now())
	at := time.Now()
	f.mu.Lock()
	for _, fr := range fires {
		f.fires = append(f.fires, benchFire{fr.Task.ID, fr.Slot, at})
		if w := f.watch; w != nil && !fr.Slot.Before(w.from) && !fr.Slot.After(w.to) {
			if w.n++; w.n == w.want {
				close(w.done)
			}
		}
	}
	f.mu.Unlock()
}

func (f *benchFirer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.fires)
}

// countingStore counts the scheduler's store calls and signals the first
// NextDue (Run's first sleep computation; Startup never calls it).
type countingStore struct {
	s            *Store
	calls        atomic.Int64
	claimCalls   atomic.Int64
	claimed      atomic.Int64 // claims passed to ClaimRuns and ClaimAndQueue
	claimTime    atomic.Int64 // ns spent in them
	dueTime      atomic.Int64 // ns spent in DueTasks
	once         sync.Once
	firstNextDue chan struct{}
}

func (c *countingStore) DueTasks(ctx context.Context, now time.Time, limit int) ([]scheduler.Task, error) {
	c.calls.Add(1)
	defer addSince(&c.dueTime, time.Now())
	return c.s.DueTasks(ctx, now, limit)
}

func (c *countingStore) NextDue(ctx context.Context) (time.Time, bool, error) {
	c.calls.Add(1)
	next, ok, err := c.s.NextDue(ctx)
	c.once.Do(func() { close(c.firstNextDue) })
	return next, ok, err
}

func (c *countingStore) ClaimRuns(ctx context.Context, claims []scheduler.Claim) ([]int64, error) {
	c.calls.Add(1)
	c.claimCalls.Add(1)
	c.claimed.Add(int64(len(claims)))
	defer addSince(&c.claimTime, time.Now())
	return c.s.ClaimRuns(ctx, claims)
}

func (c *countingStore) ClaimAndQueue(ctx context.Context, claims []scheduler.Claim) ([]int64, []error, error) {
	c.calls.Add(1)
	c.claimCalls.Add(1)
	c.claimed.Add(int64(len(claims)))
	defer addSince(&c.claimTime, time.Now())
	return c.s.ClaimAndQueue(ctx, claims)
}

func (c *countingStore) SkipRuns(ctx context.Context, a scheduler.Advance, skipped int) (bool, error) {
	c.calls.Add(1)
	return c.s.SkipRuns(ctx, a, skipped)
}

func (c *countingStore) FailRun(ctx context.Context, runID int64, reason string) error {
	c.calls.Add(1)
	return c.s.FailRun(ctx, runID, reason)
}

func addSince(sum *atomic.Int64, start time.Time) { sum.Add(int64(time.Since(start))) }

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssBytes is the process's resident set size (0 where there is no /proc).
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(fields[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
