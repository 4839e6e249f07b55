package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
	"switchboard/internal/testagent"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

// natsConn starts an embedded server in a temp dir and connects to it as
// the gateway, which creates the streams (so that workers started before
// the test's Runner find them). Workers that the helpers below start on
// this connection connect with their own credentials (workerConn).
func natsConn(t testing.TB) *nats.Conn {
	t.Helper()
	srv := startNATS(t, "127.0.0.1:0", t.TempDir(), t.TempDir())
	return gatewayConn(t, srv, srv.URL())
}

// shSpec runs command lines with /bin/sh -c, unsandboxed.
func shSpec(command []string) (agent.Spec, error) {
	return agent.Spec{Command: append([]string{"/bin/sh", "-c"}, command...)}, nil
}

func startWorker(t *testing.T, nc *nats.Conn, id string, slots int) *Worker {
	t.Helper()
	return runWorker(t, nc, WorkerOptions{ID: id, Slots: slots})
}

// testAllowEnv is the agent.env of the tests' workers (unless a test sets
// AllowEnv): the variables the tests' agents wait on.
var testAllowEnv = []string{"GATE", "GATES", "STARTED", "REMOTE_TEST_ALLOWED"}

// runWorker runs a worker with opt (Prepare, Poll, Dir and AllowEnv filled
// in when unset) until the test ends.
func runWorker(t *testing.T, nc *nats.Conn, opt WorkerOptions) *Worker {
	t.Helper()
	w, _ := stoppableWorker(t, nc, opt)
	return w
}

// stoppableWorker is runWorker with a stop that stops the worker earlier
// (running turns get opt.Drain) and waits for it.
func stoppableWorker(t *testing.T, nc *nats.Conn, opt WorkerOptions) (*Worker, func()) {
	t.Helper()
	if opt.Prepare == nil {
		opt.Prepare = shSpec
	}
	if opt.Poll == 0 {
		opt.Poll = 500 * time.Millisecond
	}
	if opt.Dir == "" {
		opt.Dir = t.TempDir()
	}
	if opt.AllowEnv == nil {
		opt.AllowEnv = testAllowEnv
	}
	w, err := NewWorker(t.Context(), workerConn(t, nc, opt.ID), opt)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(stop)
	return w, stop
}

// fakeWorker is a worker that reports itself once (live for workerTTL)
// and leaves its jobs to the test: its consumer, as the real worker's.
func fakeWorker(t *testing.T, nc *nats.Conn, id string) jetstream.Consumer {
	t.Helper()
	w, err := NewWorker(t.Context(), workerConn(t, nc, id), WorkerOptions{ID: id, Slots: 1, Prepare: shSpec, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cons, err := w.consumer(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	w.heartbeat(t.Context())
	return cons
}

// stateDirs: each test's gateway data (RunnerOptions.StateDir), shared
// by the Runners of a test as by a gateway and the same gateway restarted.
var stateDirs sync.Map // *testing.T → dir

func stateDir(t *testing.T) string {
	if d, ok := stateDirs.Load(t); ok {
		return d.(string)
	}
	d := t.TempDir()
	stateDirs.Store(t, d)
	t.Cleanup(func() { stateDirs.Delete(t) })
	return d
}

func newRunner(t *testing.T, nc *nats.Conn, command string, grace time.Duration) *Runner {
	t.Helper()
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{command}, Grace: grace, StateDir: stateDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func turnInput(t *testing.T, turn string) agent.Input {
	dir := filepath.Join(t.TempDir(), "groups", "main")
	return agent.Input{TurnID: agent.TurnID(turn), Dir: dir, Prompt: "hello", SessionID: "s-1",
		Env: []string{"SWITCHBOARD_MCP_SOCKET=/gateway/ipc/main.sock", "SWITCHBOARD_FOLDER=main"}}
}

// A turn runs on a worker in its copy of the folder (unsandboxed: at the
// copy's own path, <worker data dir>/folders/<folderKey of the gateway's path>), with the
// prompt on stdin, the turn's environment without the gateway's socket and
// the values of the allowed variables; its reply comes back.
func TestRemoteTurn(t *testing.T) {
	nc := natsConn(t)
	wdir := t.TempDir()
	runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1, Dir: wdir})
	r := newRunner(t, nc, `printf '%s|%s|%s|%s|' "$(cat)" "$SWITCHBOARD_FOLDER" "${SWITCHBOARD_MCP_SOCKET-unset}" "$REMOTE_TEST_ALLOWED"; pwd`, 0)
	t.Setenv("REMOTE_TEST_ALLOWED", "yes")
	in := turnInput(t, "t-1")
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second, Env: []string{"REMOTE_TEST_ALLOWED"}}, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "hello|main|unset|yes|" + filepath.Join(wdir, "folders", folderKey(in.Dir)); res.Reply != want {
		t.Errorf("reply %q; want %q", res.Reply, want)
	}
	if res.SessionID != "s-1" || res.ExitCode != 0 {
		t.Errorf("session %q exit %d; want s-1, 0", res.SessionID, res.ExitCode)
	}
}

// What the agent on a worker reports a turn cost comes back with the
// result (the gateway charges it to the folder's budgets), also when the
// turn failed.
func TestRemoteTurnUsage(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	r := newRunner(t, nc, `echo answer; echo '{"switchboard_usage":{"cost_usd":0.25,"input_tokens":1200,"output_tokens":80,"num_turns":2,"duration_api_ms":1500}}'; [ "$(cat)" = hello ]`, 0)
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, turnInput(t, "t-u1"))
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Usage{CostUSD: 0.25, InputTokens: 1200, OutputTokens: 80, NumTurns: 2, APIDuration: 1500 * time.Millisecond}
	if res.Reply != "answer" || res.Usage.CostUSD != want.CostUSD || res.Usage.InputTokens != want.InputTokens ||
		res.Usage.OutputTokens != want.OutputTokens || res.Usage.NumTurns != want.NumTurns || res.Usage.APIDuration != want.APIDuration {
		t.Errorf("reply %q usage %+v; want \"answer\" and %+v", res.Reply, res.Usage, want)
	}
	r = newRunner(t, nc, `cat >/dev/null; echo '{"switchboard_usage":{"cost_usd":0.5}}'; exit 4`, 0)
	res, err = r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, turnInput(t, "t-u2"))
	if !errors.Is(err, agent.ErrFailed) || res.Usage.CostUSD != 0.5 {
		t.Errorf("failed turn: err %v cost %v; want agent.ErrFailed and the 0.5 it reported", err, res.Usage.CostUSD)
	}
}

// A failing agent on a worker fails the turn the way agent.Run does.
func TestRemoteTurnFails(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	r := newRunner(t, nc, `echo broken >&2; exit 3`, 0)
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, turnInput(t, "t-2"))
	if !errors.Is(err, agent.ErrFailed) || !strings.Contains(err.Error(), "status 3: broken") {
		t.Fatalf("err %v; want agent.ErrFailed with the exit status and stderr", err)
	}
	if res.ExitCode != 3 || res.Reply != "" {
		t.Errorf("exit %d reply %q; want 3 and no reply", res.ExitCode, res.Reply)
	}
}

// Without a worker, the turn fails as timed out once its deadline has
// passed, saying what to start: the gateway counts it as an attempt.
func TestRemoteTurnNoWorker(t *testing.T) {
	nc := natsConn(t)
	r := newRunner(t, nc, `echo hi`, 50*time.Millisecond)
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 200 * time.Millisecond}, turnInput(t, "t-3"))
	if !errors.Is(err, agent.ErrFailed) || !res.TimedOut || !strings.Contains(err.Error(), "switchboard worker") {
		t.Fatalf("err %v timed out %v; want a timed-out agent.ErrFailed naming `switchboard worker`", err, res.TimedOut)
	}
}

// An outcome is applied once per turn id: a second outcome for the same
// turn (here from another worker than the one the turn was given to) is
// refused, logged and counted.
func TestRemoteOutcomeOnce(t *testing.T) {
	nc := natsConn(t)
	var logs testlog.Buffer
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{"unused"}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	js, err := jetstream.New(workerConn(t, nc, "a"))
	if err != nil {
		t.Fatal(err)
	}
	publish := func(o Outcome) {
		data, _ := json.Marshal(o)
		// Not de-duplicated by message id: as if the job ran twice.
		if _, err := js.Publish(context.Background(), resultSubject(o.Worker, o.TurnID), data); err != nil {
			t.Error(err)
		}
	}
	// A worker that takes the job answers twice.
	cons := fakeWorker(t, nc, "a")
	published := make(chan struct{})
	go func() {
		defer close(published)
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			return
		}
		_ = m.Ack()
		publish(Outcome{TurnID: "t-4", Worker: "a", Reply: "first"})
		publish(Outcome{TurnID: "t-4", Worker: "a", Reply: "second"})
	}()
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, turnInput(t, "t-4"))
	if err != nil || res.Reply != "first" {
		t.Fatalf("reply %q err %v; want the first outcome", res.Reply, err)
	}
	testwait.For(t, 10*time.Second, "the second outcome dropped", func() bool {
		l := logs.String() // dropped while the first is handed over, or after
		return (strings.Contains(l, "no longer waited for; dropped") || strings.Contains(l, "already answered; dropped")) && strings.Contains(l, "turn=t-4")
	})
	// The runner can log the drop before the publisher has the stream's
	// acknowledgement: the test's end closes the connection, which failed
	// that second Publish ("nats: connection closed").
	<-published
}

// A worker with one slot runs one turn at a time: a second job waits in the
// stream until the first is done, and another worker takes it.
func TestWorkersShareTurns(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	startWorker(t, nc, "w2", 1)
	gate := filepath.Join(t.TempDir(), "gate")
	r := newRunner(t, nc, `while [ ! -e "$GATE" ]; do sleep 0.02; done; echo "$SWITCHBOARD_TURN_ID"`, 0)
	t.Setenv("GATE", gate)
	type out struct {
		res agent.Result
		err error
	}
	outs := make(chan out, 2)
	for _, id := range []string{"t-5", "t-6"} {
		go func() {
			res, err := r.Run(context.Background(), agent.Spec{Timeout: 20 * time.Second, Env: []string{"GATE"}}, turnInput(t, id))
			outs <- out{res, err}
		}()
	}
	// Both turns run at once, one per worker, before the gate opens.
	testwait.For(t, 10*time.Second, "both workers busy", func() bool {
		ws, err := r.Workers(t.Context())
		if err != nil || len(ws) != 2 {
			return false
		}
		return ws[0].Busy == 1 && ws[1].Busy == 1
	})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		o := <-outs
		if o.err != nil {
			t.Error(o.err)
		}
	}
	ws, err := r.Workers(t.Context())
	if err != nil || len(ws) != 2 || ws[0].ID != "w1" || ws[0].Slots != 1 {
		t.Errorf("workers %+v err %v; want w1 and w2 with one slot each", ws, err)
	}
}

// A turn taken by a worker that then stops reporting fails long before its
// deadline: the gateway retries it.
func TestRemoteWorkerGone(t *testing.T) {
	nc := natsConn(t)
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{"unused"}, Check: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	// A worker that takes the job, says so, and dies without a trace in
	// the workers bucket.
	cons := fakeWorker(t, nc, "ghost")
	ghost := workerConn(t, nc, "ghost")
	js, err := jetstream.New(ghost)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(t.Context(), workersBucket)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			return
		}
		_ = m.Ack()
		var j Job
		_ = json.Unmarshal(m.Data(), &j)
		_ = ghost.Publish(takenPrefix+"ghost."+j.TurnID, nil)
		_ = kv.Delete(context.Background(), "ghost")
	}()
	done := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), agent.Spec{Timeout: time.Hour}, turnInput(t, "t-7"))
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, agent.ErrFailed) || !strings.Contains(err.Error(), "worker ghost stopped reporting") {
			t.Fatalf("err %v; want the lost worker named", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the turn of a lost worker still waits (its deadline is an hour away)")
	}
}

// A worker told to stop takes no new job but finishes the turn it runs and
// publishes its result.
func TestWorkerDrains(t *testing.T) {
	nc := natsConn(t)
	w, err := NewWorker(t.Context(), workerConn(t, nc, "w1"), WorkerOptions{ID: "w1", Slots: 1, Prepare: shSpec, Poll: 500 * time.Millisecond, Dir: t.TempDir(),
		AllowEnv: testAllowEnv})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("GATE", gate)
	r := newRunner(t, nc, `while [ ! -e "$GATE" ]; do sleep 0.02; done; echo drained`, 0)
	type out struct {
		res agent.Result
		err error
	}
	outs := make(chan out, 1)
	go func() {
		res, err := r.Run(context.Background(), agent.Spec{Timeout: 20 * time.Second, Env: []string{"GATE"}}, turnInput(t, "t-8"))
		outs <- out{res, err}
	}()
	testwait.For(t, 10*time.Second, "the worker busy", func() bool {
		ws, err := r.Workers(t.Context())
		return err == nil && len(ws) == 1 && ws[0].Busy == 1
	})
	stop()
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := <-outs
	if o.err != nil || o.res.Reply != "drained" {
		t.Fatalf("reply %q err %v; want the running turn finished", o.res.Reply, o.err)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if ws, err := r.Workers(t.Context()); err != nil || len(ws) != 0 {
		t.Errorf("workers after the stop: %+v %v; want none", ws, err)
	}
}

// A gateway that stopped while its turns ran on workers: a new Runner
// (the restarted gateway's) gets the outcome a worker published meanwhile
// from the results stream, awaits the outcome of a turn still running, and
// gives up on a turn nobody answered once its deadline and the grace have
// passed.
func TestRemoteAwait(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 2)
	gate := t.TempDir()
	// Each turn says it started, then waits until its file is released.
	agentSh := `touch "` + gate + `/started-$SWITCHBOARD_TURN_ID"; while [ ! -e "` + gate + `/go-$SWITCHBOARD_TURN_ID" ]; do sleep 0.05; done; echo "done $SWITCHBOARD_TURN_ID"`
	first := newRunner(t, nc, agentSh, 0)
	ctx, gatewayDies := context.WithCancel(t.Context())
	spec := agent.Spec{Timeout: time.Minute}
	ran := make(chan error, 2)
	started := time.Now()
	for _, turn := range []string{"t-early", "t-late"} {
		go func() { _, err := first.Run(ctx, spec, turnInput(t, turn)); ran <- err }()
	}
	for _, turn := range []string{"t-early", "t-late"} {
		testwait.For(t, 20*time.Second, turn+" running on the worker", func() bool {
			_, err := os.Stat(filepath.Join(gate, "started-"+turn))
			return err == nil
		})
	}
	gatewayDies()
	for range 2 {
		if err := <-ran; !errors.Is(err, agent.ErrCancelled) || !strings.Contains(err.Error(), "cancelled") {
			t.Fatalf("Run of the stopped gateway: %v; want cancelled", err)
		}
	}
	first.Close()

	// t-early's outcome is published while no gateway runs.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gate, "go-t-early"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "t-early's outcome on the results stream", func() bool {
		s, err := js.Stream(t.Context(), ResultsStream)
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(t.Context(), resultSubject("w1", "t-early"))
		return err == nil
	})

	next := newRunner(t, nc, agentSh, 50*time.Millisecond)
	res, err := next.Await(t.Context(), "t-early", started.Add(spec.Timeout))
	if err != nil || res.Reply != "done t-early" || res.ExitCode != 0 {
		t.Fatalf("Await t-early: reply %q exit %d err %v; want its published outcome", res.Reply, res.ExitCode, err)
	}

	// t-late is still running: Await gets its outcome when it comes.
	late := make(chan error, 1)
	var lateRes agent.Result
	go func() {
		var err error
		lateRes, err = next.Await(t.Context(), "t-late", started.Add(spec.Timeout))
		late <- err
	}()
	if err := os.WriteFile(filepath.Join(gate, "go-t-late"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-late; err != nil || lateRes.Reply != "done t-late" {
		t.Fatalf("Await t-late: reply %q err %v; want the outcome published after the restart", lateRes.Reply, err)
	}

	// No outcome of t-never will come: its deadline has passed.
	if err := next.record("t-never", turnRecord{Dir: turnInput(t, "x").Dir, Worker: "w1", DeadlineMs: time.Now().Add(-time.Minute).UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	res, err = next.Await(t.Context(), "t-never", time.Now().Add(-time.Minute))
	if !errors.Is(err, agent.ErrNoOutcome) || !res.TimedOut {
		t.Fatalf("Await t-never: err %v timed out %v; want agent.ErrNoOutcome", err, res.TimedOut)
	}
	// A turn this gateway has no record of has no outcome it would apply.
	res, err = next.Await(t.Context(), "t-unknown", time.Now().Add(time.Minute))
	if !errors.Is(err, agent.ErrNoOutcome) || !strings.Contains(err.Error(), "no record") {
		t.Fatalf("Await t-unknown: err %v; want agent.ErrNoOutcome saying there is no record", err)
	}
}

// With the embedded server, NATS stops with its gateway: the outcome of a
// turn a worker finishes meanwhile (its publish times out) reaches the
// server once it is back (the restarted gateway, on the same address and
// storage): the NATS client sends what was published while it was
// disconnected when it reconnects. The gateway finds it there.
func TestWorkerPublishesAfterNATSRestart(t *testing.T) {
	storage := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	auth := t.TempDir()
	srv := startNATS(t, addr, storage, auth)
	gnc := gatewayConn(t, srv, srv.URL())
	gatewayStreams(t, gnc)
	wnc := connectAs(t, srv, srv.URL(), "w1", nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	var logs testlog.Buffer
	w, err := NewWorker(t.Context(), wnc, WorkerOptions{ID: "w1", Slots: 1, Prepare: shSpec, Poll: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stopWorker := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	stop := sync.OnceFunc(func() { stopWorker(); <-done })
	t.Cleanup(stop)

	gate := t.TempDir()
	first := newRunner(t, gnc, `touch "`+gate+`/started"; while [ ! -e "`+gate+`/go" ]; do sleep 0.05; done; echo finished`, 0)
	ctx, gatewayDies := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	started := time.Now()
	go func() { _, err := first.Run(ctx, agent.Spec{Timeout: time.Minute}, turnInput(t, "t-9")); ran <- err }()
	testwait.For(t, 20*time.Second, "the turn running on the worker", func() bool {
		_, err := os.Stat(filepath.Join(gate, "started"))
		return err == nil
	})
	gatewayDies()
	<-ran
	first.Close()
	gnc.Close()
	srv.Close()

	if err := os.WriteFile(filepath.Join(gate, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "the worker failing to publish while NATS is down", func() bool {
		return strings.Contains(logs.String(), `msg="publish turn result`)
	})
	srv = startNATS(t, addr, storage, auth) // the credentials made at first start
	res, err := newRunner(t, gatewayConn(t, srv, srv.URL()), "unused", 0).Await(t.Context(), "t-9", started.Add(time.Minute))
	if err != nil || res.Reply != "finished" {
		t.Fatalf("Await after the restart: reply %q err %v; want the outcome the worker published late", res.Reply, err)
	}
	stop() // while NATS runs
}

// A job's environment reaches the agent only with SWITCHBOARD_* names and
// those the worker's own agent.env allows: code smuggled in through
// BASH_FUNC_x%%, LD_PRELOAD or NODE_OPTIONS (run by the agent's shell,
// loader or runtime, on the host with sandbox: none) is dropped, counted,
// and logged by name without its value.
func TestWorkerJobEnvFiltered(t *testing.T) {
	nc := natsConn(t)
	var wlog testlog.Buffer
	printEnv := testagent.Script(t, "env")
	w := runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1, AllowEnv: []string{"REMOTE_OK"}, Logger: slog.New(slog.NewTextHandler(&wlog, nil)),
		Prepare: func([]string) (agent.Spec, error) { return agent.Spec{Command: printEnv}, nil }})
	r := newRunner(t, nc, "agent", 0)
	in := turnInput(t, "t-env")
	in.Env = append(in.Env, "BASH_FUNC_cat%%=() { echo pwned-secret; }", "LD_PRELOAD=/tmp/evil-secret.so",
		"NODE_OPTIONS=--require /tmp/evil-secret.js", "REMOTE_NO=other-secret", "REMOTE_OK=yes")
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, in)
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(res.Reply, "\n")
	for _, want := range []string{"SWITCHBOARD_FOLDER=main", "SWITCHBOARD_TURN_ID=t-env", "REMOTE_OK=yes"} {
		if !slices.Contains(env, want) {
			t.Errorf("the agent's environment lacks %s:\n%s", want, res.Reply)
		}
	}
	for _, bad := range []string{"BASH_FUNC", "LD_PRELOAD", "NODE_OPTIONS", "REMOTE_NO"} {
		if strings.Contains(res.Reply, bad) {
			t.Errorf("%s reached the agent:\n%s", bad, res.Reply)
		}
	}
	if n := w.DroppedEnv(); n != 4 {
		t.Errorf("DroppedEnv %d; want 4", n)
	}
	if l := wlog.String(); !strings.Contains(l, "LD_PRELOAD") || !strings.Contains(l, "BASH_FUNC_cat%%") || strings.Contains(l, "secret") {
		t.Errorf("want the dropped names logged, without their values:\n%s", l)
	}
}
