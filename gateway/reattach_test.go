package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/internal/testwait"
	"switchboard/ipc"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// workerRunner is an agent.Reattacher whose turns "run on workers": Run
// blocks until its ctx ends (the gateway stops while its turns run
// elsewhere) unless answer has the turn's reply; Await returns what answer
// says once release is closed.
type workerRunner struct {
	mu       sync.Mutex
	runs     []agent.Input     // every Run, in order
	awaiting map[string]bool   // turns whose Await has not returned yet
	folderOf map[string]string // turn id → folder, of the awaited turns
	overlap  []string          // turns Run started in a folder while one of its turns was awaited
	answer   func(turn string) (agent.Result, error)
	release  chan struct{}
	stops    []string // turns whose Await ended with their stop (a remote runner stops them on their worker)
	// noOutcome: Await has no outcome to give (agent.ErrNoOutcome), as a
	// remote runner without a record of the turn.
	noOutcome bool
	// forwarded, when set, takes the messages steered into a running turn,
	// as a remote runner hands them to the worker (Steering.Forward).
	forwarded chan int64
}

func (w *workerRunner) Run(ctx context.Context, _ agent.Spec, in agent.Input) (agent.Result, error) {
	turn := string(in.TurnID)
	w.mu.Lock()
	w.runs = append(w.runs, in)
	for awaited := range w.awaiting {
		if w.folderOf[awaited] == envValue(in.Env, "SWITCHBOARD_FOLDER") {
			w.overlap = append(w.overlap, turn)
		}
	}
	answer := w.answer
	w.mu.Unlock()
	if in.Steer != nil && w.forwarded != nil {
		in.Steer.Forward(func(id int64, _ string) bool { w.forwarded <- id; return true })
	}
	if answer == nil {
		<-ctx.Done()
		return agent.Result{ExitCode: -1}, agent.Cancelled(ctx.Err())
	}
	return answer(turn)
}

func (w *workerRunner) Await(ctx context.Context, id agent.TurnID, _ time.Time) (agent.Result, error) {
	turn := string(id)
	if w.noOutcome {
		return agent.Result{ExitCode: -1}, fmt.Errorf("%w: no record of turn %s", agent.ErrNoOutcome, turn)
	}
	w.mu.Lock()
	w.awaiting[turn] = true
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.awaiting, turn)
		w.mu.Unlock()
	}()
	select {
	case <-w.release:
	case <-ctx.Done():
		if agent.StopRequested(ctx) {
			w.mu.Lock()
			w.stops = append(w.stops, turn)
			w.mu.Unlock()
		}
		return agent.Result{ExitCode: -1}, agent.Cancelled(ctx.Err())
	}
	return w.answer(turn)
}

func (w *workerRunner) started() []agent.Input {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]agent.Input(nil), w.runs...)
}

// rerunWorker is the runner of a restarted gateway that awaits the turns
// its predecessor left on workers; a batch it runs again answers "rerun".
func rerunWorker() *workerRunner {
	w := &workerRunner{release: make(chan struct{}), awaiting: map[string]bool{}, folderOf: map[string]string{}}
	w.answer = func(string) (agent.Result, error) { return agent.Result{Reply: "rerun"}, nil }
	return w
}

// wantAwaitedStopped checks that a /stop stopped the awaited turn: the
// chat told "Stopped." alone, the turn recorded stopped, its work settled
// and nothing run again by next.
func (h *harness) wantAwaitedStopped(t *testing.T, next *workerRunner, turn string) {
	t.Helper()
	if sent := texts(h.waitSent(testChat, 1)); !slices.Equal(sent, []string{stopStopped}) {
		t.Fatalf("sent %q; want %q", sent, stopStopped)
	}
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped || ts[0].ID != turn {
		t.Fatalf("turns %+v; want the awaited turn recorded stopped", ts)
	}
	testwait.For(t, 10*time.Second, "no pending work", func() bool { return len(h.pending()) == 0 })
	if n := len(next.started()); n != 0 {
		t.Errorf("%d turns ran after the stop; want none", n)
	}
}

// waitAwaiting waits until n turns are awaited (Await called, not returned).
func (w *workerRunner) waitAwaiting(t *testing.T, n int) {
	t.Helper()
	testwait.For(t, 20*time.Second, fmt.Sprintf("%d turns awaited", n), func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.awaiting) == n
	})
}

// startOnWorker starts a gateway whose turns run on a worker (modify, if
// set, changes its options further), posts text in testChat and returns
// once its turn runs there, with that turn's id. The caller's h.stop()
// then leaves the turn to the next start's await.
func startOnWorker(t *testing.T, text string, modify func(*Options)) (*harness, string) {
	t.Helper()
	first := &workerRunner{}
	h := newHarness(t, harnessConfig{agent: []string{"unused"}, modify: func(o *Options) {
		o.Runner = first
		o.DrainTimeout = 50 * time.Millisecond
		if modify != nil {
			modify(o)
		}
	}})
	h.post(testChat, "m1", text)
	testwait.Count(t, 20*time.Second, "turns run on a worker", 1, func() int { return len(first.started()) })
	return h, string(first.started()[0].TurnID)
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// A gateway stops while three turns run on workers. The next one does not
// run those batches again: it awaits each turn's outcome and records it as
// that turn (its reply sent once, the turn succeeded under its own id, its
// MCP token valid until then); the folder starts nothing else meanwhile.
// A turn whose agent answered through a tool before the stop does not
// answer on stdout as well. A turn whose outcome never comes counts as a
// crashed attempt and its batch runs again.
func TestRestartAwaitsTurnsOnWorkers(t *testing.T) {
	const chat2, chat3 = "test:room/2", "test:room/3"
	first := &workerRunner{}
	h := newHarness(t, harnessConfig{
		agent:  []string{"unused"},
		groups: []string{"other", "third"},
		routes: []routing.Route{
			{Match: map[string]string{"chat_jid": chat2}, Target: "other"},
			{Match: map[string]string{"chat_jid": chat3}, Target: "third"},
			{Match: map[string]string{"platform": "test"}, Target: "main"},
		},
		modify: func(o *Options) {
			o.Runner = first
			o.DrainTimeout = 50 * time.Millisecond
			o.MCPHTTP = MCPHTTP{Listen: "127.0.0.1:0", PassToAgents: true}
		},
	})
	h.post(testChat, "m1", "first question")
	h.post(chat2, "m2", "second question")
	h.post(chat3, "m4", "question answered through a tool")
	testwait.Count(t, 20*time.Second, "turns run on workers", 3, func() int { return len(first.started()) })
	// The third turn's agent answers through its tool before the stop.
	if sent, err := h.g.backend.Send(context.Background(), "third", ipc.Outgoing{Chat: chat3, Text: "tool reply", Kind: store.OutboxSend}); err != nil || sent.Status != ipc.SentOK {
		t.Fatalf("send through the tool: %+v %v", sent, err)
	}
	turns := map[string]string{}    // chat → turn id
	folderOf := map[string]string{} // turn id → folder
	var token string
	for _, in := range first.started() {
		turns[envValue(in.Env, "SWITCHBOARD_CHAT_JID")] = string(in.TurnID)
		folderOf[string(in.TurnID)] = envValue(in.Env, "SWITCHBOARD_FOLDER")
		if envValue(in.Env, "SWITCHBOARD_CHAT_JID") == testChat {
			token = envValue(in.Env, "SWITCHBOARD_MCP_TOKEN")
		}
	}
	if token == "" {
		t.Fatal("the turn got no MCP token")
	}
	h.stop()

	// The restarted gateway: the first turn's outcome comes, the second's
	// never does; a batch run anew answers "rerun".
	next := &workerRunner{release: make(chan struct{}), awaiting: map[string]bool{}, folderOf: folderOf}
	next.answer = func(turn string) (agent.Result, error) {
		switch turn {
		case turns[testChat]:
			return agent.Result{Reply: "answer from the worker", ExitCode: 0, Duration: time.Second}, nil
		case turns[chat2]:
			return agent.Result{ExitCode: -1, TimedOut: true}, fmt.Errorf("%w: nobody published it", agent.ErrNoOutcome)
		case turns[chat3]:
			return agent.Result{Reply: "stdout too"}, nil
		}
		return agent.Result{Reply: "rerun"}, nil
	}
	h.restart(func(o *Options) { o.Runner = next })
	next.waitAwaiting(t, 3)
	if _, err := h.st.TokenByHash(context.Background(), store.HashToken(token)); err != nil {
		t.Errorf("the awaited turn's MCP token: %v; want it valid while the turn runs on its worker", err)
	}
	// A message arriving meanwhile waits for the awaited turn.
	h.post(testChat, "m3", "third question")
	close(next.release)

	sent := h.waitSent(testChat, 2)
	if sent[0].Text != "answer from the worker" || sent[1].Text != "rerun" {
		t.Errorf("sent to %s: %q, %q; want the worker's answer, then the reply to m3", testChat, sent[0].Text, sent[1].Text)
	}
	if got := h.waitSent(chat2, 1); got[0].Text != "rerun" {
		t.Errorf("sent to %s: %q; want the rerun's reply", chat2, got[0].Text)
	}
	next.mu.Lock()
	overlap := next.overlap
	next.mu.Unlock()
	if len(overlap) > 0 {
		t.Errorf("turns %v started while an interrupted turn was awaited; want none before its outcome", overlap)
	}
	var runChats []string
	for _, in := range next.started() {
		runChats = append(runChats, envValue(in.Env, "SWITCHBOARD_CHAT_JID"))
		if strings.Contains(in.Prompt, "first question") {
			t.Errorf("the batch of the awaited turn ran again:\n%s", in.Prompt)
		}
	}
	if len(runChats) != 2 {
		t.Errorf("turns run after the restart: %v; want one for m3 and the rerun of %s", runChats, chat2)
	}

	main := h.turns("main")
	if len(main) != 2 || main[0].ID != turns[testChat] || main[0].Status != store.TurnSucceeded || main[0].Attempt != 1 || main[0].Duration != time.Second {
		t.Fatalf("main's turns %+v; want %s succeeded (attempt 1, the worker's duration), then m3's", main, turns[testChat])
	}
	if _, err := h.st.TokenByHash(context.Background(), store.HashToken(token)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the recorded turn's MCP token: %v; want it revoked", err)
	}
	other := h.turns("other")
	if len(other) != 1 || other[0].Status != store.TurnSucceeded || other[0].Attempt != 2 || other[0].ID == turns[chat2] {
		t.Errorf("other's turns %+v; want one new succeeded turn counting the lost one as attempt 1", other)
	}
	testwait.For(t, 20*time.Second, "the third turn recorded", func() bool { return len(h.turns("third")) == 1 })
	if third := h.turns("third")[0]; third.ID != turns[chat3] || third.Status != store.TurnSucceeded {
		t.Errorf("third's turn %+v; want %s succeeded", third, turns[chat3])
	}
	if got := h.fa.sentTo(chat3); len(got) != 0 {
		t.Errorf("sent to %s after the restart: %+v; want nothing (the agent answered through its tool before the stop)", chat3, got)
	}
	if p := h.pending(); len(p) != 0 {
		t.Errorf("pending work left in %v", p)
	}
}

// A message steered into a turn on a worker just before the gateway
// stopped is stored with the turn's rows; only the turn's outcome says
// whether the worker wrote it into the agent. The restarted gateway that
// awaits the turn records it as part of the turn only if the outcome lists
// it; otherwise (also when the turn is stopped meanwhile) a new turn
// answers it.
func TestRestartSettlesSteeredByTheOutcome(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listed bool // the outcome lists the steered message as taken
		stop   bool // a /stop ends the awaited turn
	}{
		{name: "not taken"},
		{name: "taken", listed: true},
		{name: "stopped", stop: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, turn := startOnWorker(t, "first question", nil)
			// As the gateway writes a message steered into the running turn.
			m := ops.StoreMessage(adapters.Inbound{Chat: testChat, ID: "m2", Sender: "test:user/ann", SenderName: "Ann",
				Text: "steered question", Verb: adapters.VerbMention})
			w := store.WorkItem{Folder: "main", ChatJID: testChat, Mode: "trigger", Trigger: store.TriggerMessage}
			if inserted, _, err := h.st.SteerMessage(context.Background(), &m, w, turn); err != nil || !inserted {
				t.Fatalf("SteerMessage: inserted %v err %v", inserted, err)
			}
			h.stop()

			next := &workerRunner{release: make(chan struct{}), awaiting: map[string]bool{}, folderOf: map[string]string{turn: "main"}}
			next.answer = func(id string) (agent.Result, error) {
				if id != turn {
					return agent.Result{Reply: "answer to the steered message"}, nil
				}
				res := agent.Result{Reply: "answer from the worker"}
				if tc.listed {
					res.Steered = []int64{m.Seq}
				}
				return res, nil
			}
			if !tc.stop {
				close(next.release)
			}
			h.restart(func(o *Options) { o.Runner = next })
			if tc.stop {
				next.waitAwaiting(t, 1)
				h.post(testChat, "s1", "/stop")
			}
			testwait.For(t, 20*time.Second, "the awaited turn recorded", func() bool {
				main := h.turns("main")
				return len(main) > 0 && main[0].ID == turn
			})
			checkSteeredSettled(t, h, next, turn, tc.listed, tc.stop)
		})
	}
}

// checkSteeredSettled checks what became of the steered message after the
// awaited turn was recorded: consumed with it when listed, else answered
// by a new turn whose prompt shows it (and not the awaited turn's batch).
func checkSteeredSettled(t *testing.T, h *harness, next *workerRunner, turn string, listed, stopped bool) {
	t.Helper()
	if listed {
		if p := h.pending(); len(p) != 0 {
			t.Errorf("pending work left in %v; want the steered message consumed with the awaited turn", p)
		}
		if runs := next.started(); len(runs) != 0 {
			t.Errorf("%d turns run after the restart; want none", len(runs))
		}
		if sent := h.waitSent(testChat, 1); sent[0].Text != "answer from the worker" {
			t.Errorf("sent %q; want the awaited turn's answer", sent[0].Text)
		}
		return
	}
	testwait.For(t, 20*time.Second, "a new turn recorded", func() bool { return len(h.turns("main")) == 2 })
	main := h.turns("main")
	if want := store.TurnSucceeded; stopped {
		want = store.TurnStopped
		if main[0].Status != want {
			t.Errorf("the awaited turn's status %s; want %s", main[0].Status, want)
		}
	}
	runs := next.started()
	if len(runs) != 1 || !strings.Contains(runs[0].Prompt, "steered question") || strings.Contains(runs[0].Prompt, "first question") {
		t.Fatalf("turns run after the restart: %d; want one whose prompt shows only the steered message:\n%v", len(runs), runs)
	}
	testwait.For(t, 20*time.Second, "the answer to the steered message sent", func() bool {
		return slices.ContainsFunc(h.fa.sentTo(testChat), func(m sentMsg) bool { return m.Text == "answer to the steered message" })
	})
	if p := h.pending(); len(p) != 0 {
		t.Errorf("pending work left in %v", p)
	}
}

// A message the gateway steers into a turn running on a worker, handed on
// to the worker, is not put back when the gateway then shuts down: the
// turn is left to the next start's await, whose outcome says whether the
// worker wrote it in. Listed as taken, it is answered once, in that turn
// (put back at the shutdown, it was answered again by a turn of its own).
func TestShutdownLeavesSteeredToTheAwait(t *testing.T) {
	first := &workerRunner{forwarded: make(chan int64, 1)}
	h := newHarness(t, harnessConfig{agent: []string{"unused"}, modify: func(o *Options) {
		o.Runner = first
		o.DrainTimeout = 50 * time.Millisecond
		o.Agent.Output = agent.OutputClaudeStream
		o.Agent.Input = agent.InputStreamJSON
		o.MidTurn = MidTurnSteer
	}})
	h.post(testChat, "m1", "first question")
	testwait.Count(t, 20*time.Second, "turns run on a worker", 1, func() int { return len(first.started()) })
	turn := string(first.started()[0].TurnID)
	h.post(testChat, "m2", "steered question")
	var seq int64
	select {
	case seq = <-first.forwarded:
	case <-time.After(20 * time.Second):
		t.Fatal("the second message was not steered into the running turn")
	}
	h.stop()

	next := &workerRunner{release: make(chan struct{}), awaiting: map[string]bool{}, folderOf: map[string]string{turn: "main"}}
	next.answer = func(id string) (agent.Result, error) {
		if id != turn {
			return agent.Result{Reply: "answer to the steered message"}, nil
		}
		return agent.Result{Reply: "answer from the worker", Steered: []int64{seq}}, nil
	}
	close(next.release)
	h.restart(func(o *Options) { o.Runner = next })
	testwait.For(t, 20*time.Second, "the awaited turn recorded", func() bool {
		main := h.turns("main")
		return len(main) > 0 && main[0].ID == turn
	})
	checkSteeredSettled(t, h, next, turn, true, false)
}

// A gateway that stopped a turn on its worker (/stop) and then stopped
// itself before the turn's outcome came leaves the turn to the next start,
// whose await gets the outcome the worker published: stopped. The turn is
// recorded stopped under its id, as the first gateway would have: no
// retry, no failure notice, the chat told "Stopped." once.
func TestRestartRecordsStoppedOutcomeStopped(t *testing.T) {
	h, turn := startOnWorker(t, "first question", nil)
	h.stop()

	next := &workerRunner{release: make(chan struct{}), awaiting: map[string]bool{}, folderOf: map[string]string{turn: "main"}}
	next.answer = func(id string) (agent.Result, error) {
		if id != turn {
			return agent.Result{Reply: "rerun"}, nil
		}
		// As remote's Await returns a turn its worker stopped.
		return agent.Result{ExitCode: -1, Duration: time.Second}, fmt.Errorf("%w before the gateway restarted (on worker w1)", agent.ErrStopped)
	}
	close(next.release)
	h.restart(func(o *Options) { o.Runner = next })
	ts := h.waitTurns("main", 1)
	if ts[0].ID != turn || ts[0].Status != store.TurnStopped {
		t.Fatalf("main's turns %+v; want %s stopped", ts, turn)
	}
	if sent := h.waitSent(testChat, 1); len(sent) != 1 || sent[0].Text != stopStopped {
		t.Errorf("sent %+v; want %q alone (no failure notice)", sent, stopStopped)
	}
	if p := h.pending(); len(p) != 0 {
		t.Errorf("pending work left in %v; want none: a stopped turn is not retried", p)
	}
	if runs := next.started(); len(runs) != 0 {
		t.Errorf("%d turns run after the restart; want none", len(runs))
	}
}
