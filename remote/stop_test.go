package remote

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
	"switchboard/internal/testwait"
)

// A turn stopped on the gateway (its ctx cancelled with agent.ErrStopped)
// is stopped on its worker: the agent's process tree (SIGTERM ignored) is
// gone within the stop's grace, and Run returns ErrStopped, never
// ErrFailed, with the usage the agent reported before.
func TestRemoteStop(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	pidFile := filepath.Join(t.TempDir(), "child")
	r := newRunner(t, nc, `trap '' TERM
cat >/dev/null
echo '{"switchboard_usage":{"cost_usd":0.125}}'
sh -c "trap '' TERM; sleep 1000; true" &
echo $! > "`+pidFile+`.tmp" && mv "`+pidFile+`.tmp" "`+pidFile+`"
while :; do wait; done`, 0)
	ctx, stop := context.WithCancelCause(t.Context())
	defer stop(nil)
	type outcome struct {
		res agent.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := r.Run(ctx, agent.Spec{Timeout: time.Minute}, turnInput(t, "t-stop"))
		done <- outcome{res, err}
	}()
	var pid int
	testwait.For(t, 20*time.Second, "the agent's child on the worker", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	stopped := time.Now()
	stop(agent.ErrStopped)
	if !testwait.Until(5*time.Second, func() bool { return syscall.Kill(pid, 0) != nil || zombie(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the stopped turn's child %d still runs on the worker", pid)
	}
	t.Logf("stop → process tree gone on the worker: %v", time.Since(stopped))
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return after the stop")
	}
	if !errors.Is(o.err, agent.ErrStopped) || errors.Is(o.err, agent.ErrFailed) {
		t.Fatalf("err %v; want agent.ErrStopped, not ErrFailed", o.err)
	}
	if o.res.Usage.CostUSD != 0.125 || o.res.Reply != "" {
		t.Errorf("usage %+v reply %q; want the 0.125 reported before the stop and no reply", o.res.Usage, o.res.Reply)
	}
	if _, err := os.Stat(filepath.Join(stateDir(t), "t-stop")); err == nil {
		t.Error("the stopped turn is still recorded for a restarted gateway to await")
	}
}

func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// A stop that reaches the worker before it took the turn (its slot was
// busy) keeps the turn from running at all.
func TestRemoteStopBeforeTaken(t *testing.T) {
	nc := natsConn(t)
	w := startWorker(t, nc, "w1", 1)
	r := newRunner(t, nc, "unused", 0)
	w.stops.stop("t-early")
	ran := filepath.Join(t.TempDir(), "ran")
	r.opt.Command = []string{`touch "` + ran + `"`}
	_, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, turnInput(t, "t-early"))
	if err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("err %v; want the turn stopped before it ran", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a turn stopped before the worker took it ran")
	}
}

// BenchmarkRemoteStop measures a turn stopped on the gateway → its
// process tree gone on the worker, p50 and p99 (run with -benchtime=20x):
// an agent and child that ignore SIGTERM (the SIGKILL 1 s later ends
// them) and ones that honour it.
func BenchmarkRemoteStop(b *testing.B) {
	for _, c := range []struct{ name, trap string }{{"ignores-TERM", "trap '' TERM;"}, {"honours-TERM", ""}} {
		b.Run(c.name, func(b *testing.B) {
			nc := natsConn(b)
			w, err := NewWorker(b.Context(), workerConn(b, nc, "w1"), WorkerOptions{ID: "w1", Slots: 1, Prepare: shSpec, Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			wctx, wcancel := context.WithCancel(context.Background())
			wdone := make(chan error, 1)
			go func() { wdone <- w.Run(wctx) }()
			defer func() { wcancel(); <-wdone }()
			pidDir := b.TempDir()
			r, err := NewRunner(b.Context(), nc, RunnerOptions{Command: []string{c.trap + `
cat >/dev/null
sh -c "` + c.trap + ` sleep 1000; true" &
echo $! > "` + pidDir + `/$SWITCHBOARD_TURN_ID.tmp" && mv "` + pidDir + `/$SWITCHBOARD_TURN_ID.tmp" "` + pidDir + `/$SWITCHBOARD_TURN_ID"
while :; do wait; done`}})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			dir := filepath.Join(b.TempDir(), "groups", "main")
			var took []time.Duration
			for i := range b.N {
				turn := fmt.Sprintf("b-stop-%d", i)
				ctx, stop := context.WithCancelCause(b.Context())
				done := make(chan error, 1)
				go func() {
					_, err := r.Run(ctx, agent.Spec{Timeout: time.Minute}, agent.Input{TurnID: agent.TurnID(turn), Dir: dir, Prompt: "hi"})
					done <- err
				}()
				var pid int
				for pid == 0 {
					time.Sleep(time.Millisecond)
					data, _ := os.ReadFile(filepath.Join(pidDir, turn))
					pid, _ = strconv.Atoi(strings.TrimSpace(string(data)))
				}
				stopped := time.Now()
				stop(agent.ErrStopped)
				for syscall.Kill(pid, 0) == nil && !zombie(pid) {
					time.Sleep(100 * time.Microsecond)
				}
				took = append(took, time.Since(stopped))
				if err := <-done; !errors.Is(err, agent.ErrStopped) {
					b.Fatalf("turn %s: %v; want stopped", turn, err)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}

// A turn whose job waits in its worker's queue and that ends there never
// runs later, even on a worker that does not know it ended (here: a
// worker process started after it, as a restarted one): the gateway takes
// the job out of the queue when it stops the turn, and when it gives the
// turn up because the worker stopped reporting (its retry runs elsewhere).
// The worker's next job runs as usual. So it goes for a turn that a
// restarted gateway awaits and stops.
func TestRemoteQueuedJobEndedNeverRuns(t *testing.T) {
	for _, tc := range []string{"stopped", "worker gone", "stopped after a restart"} {
		t.Run(tc, func(t *testing.T) {
			nc := natsConn(t)
			fakeWorker(t, nc, "w1") // live, takes nothing yet
			ran := t.TempDir()
			r := newRunner(t, nc, `cat >/dev/null; touch "`+ran+`/$SWITCHBOARD_TURN_ID"; echo ran`, 0)
			ctx, stop := context.WithCancelCause(t.Context())
			defer stop(nil)
			done := make(chan error, 1)
			go func() {
				_, err := r.Run(ctx, agent.Spec{Timeout: time.Minute}, turnInput(t, "t-queued"))
				done <- err
			}()
			testwait.For(t, 20*time.Second, "the job in w1's queue", func() bool {
				s, err := r.js.Stream(t.Context(), TurnsStream)
				return err == nil && s.CachedInfo().State.Msgs == 1
			})
			want := agent.ErrStopped
			switch tc {
			case "stopped":
				stop(agent.ErrStopped)
			case "stopped after a restart":
				stop(nil) // the gateway stops; the next one awaits the turn
				if err := <-done; !errors.Is(err, agent.ErrCancelled) {
					t.Fatalf("Run of the stopped gateway: %v; want cancelled", err)
				}
				r.Close()
				r = newRunner(t, nc, `cat >/dev/null; touch "`+ran+`/$SWITCHBOARD_TURN_ID"; echo ran`, 0)
				actx, astop := context.WithCancelCause(t.Context())
				go func() {
					_, err := r.Await(actx, "t-queued", time.Now().Add(time.Minute))
					done <- err
				}()
				astop(agent.ErrStopped)
			default:
				want = agent.ErrFailed
				// w1 stops reporting: its entry goes, as at its TTL.
				js, err := jetstream.New(workerConn(t, nc, "w1"))
				if err != nil {
					t.Fatal(err)
				}
				kv, err := js.KeyValue(t.Context(), workersBucket)
				if err != nil {
					t.Fatal(err)
				}
				if err := kv.Delete(t.Context(), "w1"); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-done; !errors.Is(err, want) {
				t.Fatalf("err %v; want %v", err, want)
			}
			startWorker(t, nc, "w1", 1) // knows nothing of t-queued
			res, err := r.Run(t.Context(), agent.Spec{Timeout: time.Minute}, turnInput(t, "t-next"))
			if err != nil || res.Reply != "ran" {
				t.Fatalf("the next turn: %q, %v; want it run", res.Reply, err)
			}
			if _, err := os.Stat(filepath.Join(ran, "t-queued")); err == nil {
				t.Error("the turn that ended while queued ran on the worker")
			}
			if _, err := os.Stat(filepath.Join(ran, "t-next")); err != nil {
				t.Errorf("the next turn left no mark: %v", err)
			}
		})
	}
}

// A gateway stops a turn on its worker and then stops itself before the
// outcome came (it is left to the next start): the restarted gateway's
// Await gets the outcome the worker published, marked stopped, and
// returns agent.ErrStopped (the turn is recorded stopped), not a failure
// (a failed attempt: retried, with a failure notice to the chat).
func TestRemoteAwaitStoppedBeforeRestart(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	started := filepath.Join(t.TempDir(), "started")
	r := newRunner(t, nc, `cat >/dev/null; touch "`+started+`"; exec sleep 1000`, 0)
	ctx, gatewayStops := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, agent.Spec{Timeout: time.Minute}, turnInput(t, "t-stopped"))
		done <- err
	}()
	testwait.For(t, 20*time.Second, "the agent running on the worker", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	if err := nc.Publish(stopSubject("w1", "t-stopped"), nil); err != nil { // the stop
		t.Fatal(err)
	}
	gatewayStops()
	if err := <-done; !errors.Is(err, agent.ErrCancelled) {
		t.Fatalf("Run of the stopped gateway: %v; want cancelled", err)
	}
	r.Close()
	next := newRunner(t, nc, "unused", 0)
	_, err := next.Await(t.Context(), "t-stopped", time.Now().Add(time.Minute))
	if !errors.Is(err, agent.ErrStopped) || errors.Is(err, agent.ErrFailed) {
		t.Fatalf("Await: %v; want agent.ErrStopped, not a failure", err)
	}
}

// A stop that lands while the turn's job is on its way to NATS (sent by
// the gateway, not yet stored, so before its ack) still keeps the turn
// from running: the job, stored all the same, is taken out of the
// worker's queue, and Run returns agent.ErrStopped. Before, Run returned
// at once without the job's place in the stream, and the worker ran the
// stopped turn later.
func TestRemoteStopWhilePublishing(t *testing.T) {
	srv := startNATS(t, "127.0.0.1:0", t.TempDir(), t.TempDir())
	proxy := newStallProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	nc := gatewayConn(t, srv, proxy.url())
	fakeWorker(t, nc, "w1") // live, takes nothing yet
	ran := t.TempDir()
	command := `cat >/dev/null; touch "` + ran + `/$SWITCHBOARD_TURN_ID"; echo ran`
	r := newRunner(t, nc, command, 0)
	ctx, stop := context.WithCancelCause(t.Context())
	defer stop(nil)
	// The stop comes as the job's bytes reach the server's side of the
	// proxy, before they are forwarded: no ack can precede it.
	proxy.before("PUB "+workerSubject("w1")+" ", func() { stop(agent.ErrStopped) })
	if _, err := r.Run(ctx, agent.Spec{Timeout: time.Minute}, turnInput(t, "t-pub")); !errors.Is(err, agent.ErrStopped) {
		t.Errorf("Run of the turn stopped while published: %v; want agent.ErrStopped", err)
	}
	startWorker(t, nc, "w1", 1) // knows nothing of t-pub
	res, err := r.Run(t.Context(), agent.Spec{Timeout: time.Minute}, turnInput(t, "t-next"))
	if err != nil || res.Reply != "ran" {
		t.Fatalf("the next turn: %q, %v; want it run", res.Reply, err)
	}
	if _, err := os.Stat(filepath.Join(ran, "t-pub")); err == nil {
		t.Error("the turn stopped while its job was published ran on the worker")
	}
	if _, err := os.Stat(filepath.Join(stateDir(t), "t-pub")); err == nil {
		t.Error("the stopped turn is still recorded for a restarted gateway to await")
	}
}

// A turn that a restarted gateway awaits, stopped before its Await (a
// /stop right after the restart), whose outcome its worker published
// while no gateway ran: the turn had ended, and Await returns that
// outcome, its usage with it (what the turn cost is recorded). Before,
// the look-up ran under the stopped ctx and failed, and the stop waited
// out Grace for an outcome that had come already: the turn was recorded
// stopped without its cost.
func TestRemoteAwaitStoppedAfterItsOutcome(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	gate := t.TempDir()
	first := newRunner(t, nc, `cat >/dev/null; touch "`+gate+`/started"; while [ ! -e "`+gate+`/go" ]; do sleep 0.05; done
echo done; echo '{"switchboard_usage":{"cost_usd":0.125}}'`, 0)
	ctx, gatewayStops := context.WithCancel(t.Context())
	spec := agent.Spec{Timeout: time.Minute}
	started := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := first.Run(ctx, spec, turnInput(t, "t-ended"))
		done <- err
	}()
	testwait.For(t, 20*time.Second, "the agent running on the worker", func() bool {
		_, err := os.Stat(filepath.Join(gate, "started"))
		return err == nil
	})
	gatewayStops()
	if err := <-done; !errors.Is(err, agent.ErrCancelled) {
		t.Fatalf("Run of the stopped gateway: %v; want cancelled", err)
	}
	first.Close()
	// The turn ends on its worker while no gateway runs.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gate, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the turn's outcome on the results stream", func() bool {
		s, err := js.Stream(t.Context(), ResultsStream)
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(t.Context(), resultSubject("w1", "t-ended"))
		return err == nil
	})
	next := newRunner(t, nc, "unused", 50*time.Millisecond)
	actx, stop := context.WithCancelCause(t.Context())
	stop(agent.ErrStopped)
	res, err := next.Await(actx, "t-ended", started.Add(spec.Timeout))
	if res.Usage.CostUSD != 0.125 {
		t.Errorf("Await of the stopped turn: usage %+v (err %v); want the 0.125 its published outcome reported", res.Usage, err)
	}
	if err != nil || res.Reply != "done" {
		t.Errorf("Await of the stopped turn: reply %q, %v; want the outcome it ended with", res.Reply, err)
	}
}
