package gateway

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// stoppableAgent is a Claude Code stand-in (claude-stream, --resume ID):
// it records each turn's prompt, arguments and turn id in dir, names its
// session in an init line, and answers "reply N" with a result event.
// A prompt holding LONG (and not "instead") makes it a long tool call: it ignores
// SIGTERM (unless the prompt says POLITE) and starts a child that ignores it
// too, whose pid it writes to dir/child-N and which it waits for forever.
func stoppableAgent(t testing.TB, dir string) []string {
	return testagent.Script(t, `out="`+dir+`"
n=$(ls "$out" | grep -c '^prompt-')
n=$((n+1))
cat > "$out/prompt-tmp-$$"
echo "$@" > "$out/args.tmp" && mv "$out/args.tmp" "$out/args-$n"
echo "$SWITCHBOARD_TURN_ID" > "$out/turn.tmp" && mv "$out/turn.tmp" "$out/turn-$n"
mv "$out/prompt-tmp-$$" "$out/prompt-$n"
sess=${2:-sess-$n}
echo '{"type":"system","subtype":"init","session_id":"'$sess'"}'
if grep -q LONG "$out/prompt-$n" && ! grep -q instead "$out/prompt-$n"; then
  if grep -q POLITE "$out/prompt-$n"; then ign=""; else ign="trap '' TERM;"; trap '' TERM; fi
  sh -c "$ign sleep 1000; true" &
  echo $! > "$out/child.tmp" && mv "$out/child.tmp" "$out/child-$n"
  while :; do wait; done
fi
echo '{"type":"result","subtype":"success","is_error":false,"result":"reply '$n'","session_id":"'$sess'","total_cost_usd":0.01}'`)
}

func stopHarness(t testing.TB, modify func(*Options)) (*harness, string) {
	t.Helper()
	dir := t.TempDir()
	h := newHarness(t, harnessConfig{agent: stoppableAgent(t, dir), modify: func(o *Options) {
		o.Agent.Output = agent.OutputClaudeStream
		o.Agent.ResumeArgs = []string{"--resume", "{session}"}
		o.Agent.Timeout = time.Minute
		if modify != nil {
			modify(o)
		}
	}})
	return h, dir
}

// turnFile reads dir/<name>-<n> once it exists.
func turnFile(t testing.TB, dir, name string, n int) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%s-%d", name, n))
	testwait.For(t, 20*time.Second, path, func() bool { _, err := os.Stat(path); return err == nil })
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func childPid(t testing.TB, dir string, n int) int {
	t.Helper()
	pid, err := strconv.Atoi(turnFile(t, dir, "child", n))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// gone reports whether pid is dead (a zombie counts).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// requireStopped waits (generously) for the child of a stopped turn to be
// gone and logs how long it took from since.
func requireStopped(t *testing.T, pid int, since time.Time) {
	t.Helper()
	if !testwait.Until(5*time.Second, func() bool { return gone(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the stopped turn's child %d is still running", pid)
	}
	t.Logf("/stop posted → process tree gone: %v", time.Since(since))
}

func texts(ms []sentMsg) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

// waitTurns waits for folder's n-th turn record and returns them all.
func (h *harness) waitTurns(folder groups.Folder, n int) []store.Turn {
	h.t.Helper()
	testwait.For(h.t, 20*time.Second, fmt.Sprintf("%d turns of %s", n, folder), func() bool { return len(h.turns(folder)) >= n })
	return h.turns(folder)
}

// /stop during a long tool call: the process tree is gone, the turn is
// recorded stopped (no retry, no failure notice), the chat told once, the
// /stop never prompted, and the next message resumes the session.
func TestStopCommand(t *testing.T) {
	h, dir := stopHarness(t, nil)
	h.post(testChat, "m1", "a LONG job")
	pid := childPid(t, dir, 1)
	posted := time.Now()
	h.post(testChat, "m2", "/stop")
	requireStopped(t, pid, posted)
	ts := h.waitTurns("main", 1)
	if ts[0].Status != store.TurnStopped || ts[0].Error != "stopped by test:user/ann" || ts[0].SessionID != "sess-1" {
		t.Fatalf("turn %+v; want stopped by ann, session sess-1 kept", ts[0])
	}
	if sent := texts(h.waitSent(testChat, 1)); !slices.Equal(sent, []string{stopStopped}) {
		t.Fatalf("the chat got %q; want only %q (no failure notice)", sent, stopStopped)
	}
	if p := h.pending(); len(p) != 0 {
		t.Fatalf("pending work in %v after a stop; a stopped turn is not retried", p)
	}
	h.post(testChat, "m3", "hello again")
	if sent := texts(h.waitSent(testChat, 2)); sent[1] != "reply 2" {
		t.Fatalf("sent %q; want the next turn's reply", sent)
	}
	if args := turnFile(t, dir, "args", 2); args != "--resume sess-1" {
		t.Errorf("the next turn ran with %q; want it to resume the stopped turn's session", args)
	}
	prompt := turnFile(t, dir, "prompt", 2)
	if !strings.Contains(prompt, "hello again") || strings.Contains(prompt, "/stop") || strings.Contains(prompt, "LONG") {
		t.Errorf("the next prompt:\n%s\nwant only the new message: never the /stop, nor the stopped batch again", prompt)
	}
	if len(h.turns("main")) != 2 {
		t.Errorf("turns %+v; want the stopped one and the next", h.turns("main"))
	}
}

// A /stop with nothing running says so, once (a redelivery of the same
// message says nothing more), and starts no turn.
func TestStopNothingRunning(t *testing.T) {
	h, dir := stopHarness(t, nil)
	h.post(testChat, "m1", "/stop")
	h.post(testChat, "m1", "/stop")
	h.post(testChat, "m2", "@switchboard stop")
	if sent := texts(h.waitSent(testChat, 2)); !slices.Equal(sent, []string{stopNothingRunning, stopNothingRunning}) {
		t.Fatalf("sent %q; want %q for each of the two requests", sent, stopNothingRunning)
	}
	h.post(testChat, "m3", "hi")
	h.waitSent(testChat, 3)
	if prompt := turnFile(t, dir, "prompt", 1); strings.Contains(prompt, "stop") {
		t.Errorf("the prompt shows a stop request:\n%s", prompt)
	}
	if sent := texts(h.fa.sentTo(testChat)); len(sent) != 3 {
		t.Errorf("sent %q; want two answers and one reply", sent)
	}
}

// selfMention is an adapters.Mentioner whose bot is mentioned as its
// value ("@ourbot"); "" cannot tell yet.
type selfMention string

func (s selfMention) MentionsSelf(word string) (self, known bool) {
	return s != "" && word == string(s), s != ""
}

func TestIsStopCommand(t *testing.T) {
	ours := botMention{selfMention("@ourbot")}
	for _, c := range []struct {
		text string
		verb adapters.Verb
		bot  botMention
		want bool
	}{
		{"/stop", adapters.VerbMessage, botMention{}, true},
		{" /stop\n", adapters.VerbMention, botMention{}, true},
		{"/stop@switchboard_bot", adapters.VerbMention, botMention{}, true},
		{"/stop@other_bot", adapters.VerbMessage, botMention{}, false},
		{"@switchboard stop", adapters.VerbMention, botMention{}, true},
		{"<@U123> Stop!", adapters.VerbMention, botMention{}, true},
		{"<@U123> /stop", adapters.VerbMention, botMention{}, true},
		{"<@U123> /stop", adapters.VerbMessage, botMention{}, false},
		{"@someone stop", adapters.VerbMessage, botMention{}, false},
		{"/stop please", adapters.VerbMention, botMention{}, false},
		{"stop", adapters.VerbMention, botMention{}, false},
		{"please stop", adapters.VerbMention, botMention{}, false},
		// An adapter that knows its bot's mention: only that one counts.
		{"@ourbot stop", adapters.VerbMention, ours, true},
		{"@ourbot: stop", adapters.VerbMention, ours, true},
		{"@ourbot, /stop", adapters.VerbMention, ours, true},
		{"/stop", adapters.VerbMention, ours, true},
		{"@alice stop", adapters.VerbMention, ours, false},
		{"@alice /stop", adapters.VerbMention, ours, false},
		{"<@U123> stop", adapters.VerbMention, ours, false},
		// One not connected yet cannot tell: any mention, as before.
		{"@alice stop", adapters.VerbMention, botMention{selfMention("")}, true},
	} {
		if got := isStopCommand(c.text, c.verb, c.bot); got != c.want {
			t.Errorf("isStopCommand(%q, %s, %v) = %v, want %v", c.text, c.verb, c.bot.m, got, c.want)
		}
	}
}

// limits.stop_by: approvers: anyone else is told it is not theirs and the
// turn goes on; an approver stops it, by /stop or with the Stop button.
func TestStopByApprovers(t *testing.T) {
	h, dir := stopHarness(t, func(o *Options) {
		o.StopBy = StopByApprovers
		o.Approvals.Groups = map[groups.Folder]GroupApprovals{"main": {Approvers: []adapters.JID{"test:user/boss"}}}
	})
	h.post(testChat, "m1", "a LONG job")
	pid := childPid(t, dir, 1)
	h.post(testChat, "m2", "/stop")
	if sent := texts(h.waitSent(testChat, 1)); !slices.Equal(sent, []string{stopNotYours}) {
		t.Fatalf("sent %q; want %q", sent, stopNotYours)
	}
	host := h.g.host("test")
	press := adapters.Press{Chat: testChat, Sender: "test:user/ann", Data: stopPressPrefix + turnFile(t, dir, "turn", 1)}
	if answer, err := host.Press(context.Background(), press); err != nil || answer != stopNotYours {
		t.Fatalf("ann's press: %q, %v; want %q", answer, err, stopNotYours)
	}
	if gone(pid) || len(h.turns("main")) != 0 {
		t.Fatal("the turn ended although nobody who may stop it did")
	}
	press.Sender = "test:user/boss"
	posted := time.Now()
	if answer, err := host.Press(context.Background(), press); err != nil || answer != stopStopping {
		t.Fatalf("the approver's press: %q, %v; want %q", answer, err, stopStopping)
	}
	requireStopped(t, pid, posted)
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped || ts[0].Error != "stopped by test:user/boss" {
		t.Fatalf("turn %+v; want stopped by the approver", ts[0])
	}
	if answer, _ := host.Press(context.Background(), press); answer != stopGone {
		t.Errorf("a press after the turn ended: %q; want %q", answer, stopGone)
	}
}

// A stopped turn's live reply ends with the text so far and "(stopped)";
// the chat gets no other message (no "Stopped." notice, no failure notice).
func TestStopLiveReplyMarker(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, _ := streamAgent(t, toolFixture, 6, 0) // the gate never opens
	h := liveHarness(t, la, argv, Stream{Mode: StreamNative, Interval: 10 * time.Millisecond}, func(o *Options) {
		o.Agent.Timeout = time.Minute
	})
	h.post(testChat, "m1", "@bot run it")
	testwait.For(t, 20*time.Second, "an update", func() bool { u, _, _, _, _ := la.snapshot(); return len(u) > 0 })
	h.post(testChat, "m2", "@bot stop")
	testwait.For(t, 20*time.Second, "the marker", func() bool { _, f, _, _, _ := la.snapshot(); return len(f) > 0 })
	if _, f, _, _, _ := la.snapshot(); f[0] != "Let me run that."+liveEndStopped.marker() {
		t.Errorf("final = %q, want the text so far and the stop marker", f[0])
	}
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
		t.Errorf("turn %+v; want stopped", ts[0])
	}
	h.stop()
	if sent := texts(h.fa.sentTo(testChat)); len(sent) != 0 {
		t.Errorf("the chat also got %q; the live reply says it all", sent)
	}
}

// buttonAdapter is the fake platform with buttons (adapters.Buttons) and
// deletes: it records the messages with buttons, their edits and deletes.
type buttonAdapter struct {
	*fakeAdapter
	bmu     sync.Mutex
	posted  []adapters.Button
	edited  []string
	deleted []adapters.MessageID
	noDel   bool // Delete fails: the button is edited away instead
}

func (a *buttonAdapter) SendButtons(ctx context.Context, m adapters.Outbound, buttons []adapters.Button) (adapters.MessageID, error) {
	a.bmu.Lock()
	defer a.bmu.Unlock()
	a.posted = append(a.posted, buttons...)
	return adapters.MessageID(fmt.Sprintf("b-%d", len(a.posted))), nil
}

func (a *buttonAdapter) EditButtons(ctx context.Context, m adapters.MessageRef, text string, buttons []adapters.Button) error {
	a.bmu.Lock()
	defer a.bmu.Unlock()
	a.edited = append(a.edited, fmt.Sprintf("%s=%s/%d", m.ID, text, len(buttons)))
	return nil
}

func (a *buttonAdapter) Delete(ctx context.Context, m adapters.MessageRef) error {
	a.bmu.Lock()
	defer a.bmu.Unlock()
	if a.noDel {
		return errors.New("not allowed")
	}
	a.deleted = append(a.deleted, m.ID)
	return nil
}

func (a *buttonAdapter) snapshot() (posted []adapters.Button, edited []string, deleted []adapters.MessageID) {
	a.bmu.Lock()
	defer a.bmu.Unlock()
	return slices.Clone(a.posted), slices.Clone(a.edited), slices.Clone(a.deleted)
}

// A turn that runs a while shows a Stop button (in a chat whose adapter
// has buttons and streams); pressing it stops the turn, and the button's
// message goes when the turn ends. A quick turn never shows one.
func TestStopButton(t *testing.T) {
	for _, noDel := range []bool{false, true} {
		t.Run(fmt.Sprintf("delete fails %v", noDel), func(t *testing.T) {
			ba := &buttonAdapter{fakeAdapter: newFakeAdapter("test"), noDel: noDel}
			dir := t.TempDir()
			h := newHarness(t, harnessConfig{agent: stoppableAgent(t, dir), noStart: true, modify: func(o *Options) {
				o.Agent.Output = agent.OutputClaudeStream
				o.Agent.Timeout = time.Minute
				o.Adapters = []adapters.Adapter{ba}
				o.Streams = map[string]Stream{"test": {Mode: StreamEdit}}
			}})
			h.fa = ba.fakeAdapter
			h.g.turns.buttons.delay = 300 * time.Millisecond
			h.start()
			h.post(testChat, "m1", "quick")
			h.waitSent(testChat, 1)
			if posted, _, _ := ba.snapshot(); len(posted) != 0 {
				t.Fatalf("a quick turn showed %v", posted)
			}
			h.post(testChat, "m2", "a LONG job")
			pid := childPid(t, dir, 2)
			var posted []adapters.Button
			testwait.For(t, 20*time.Second, "the stop button", func() bool { posted, _, _ = ba.snapshot(); return len(posted) > 0 })
			turn := turnFile(t, dir, "turn", 2)
			if want := (adapters.Button{Label: "Stop", Data: "stop:" + turn, Style: adapters.StyleDanger}); posted[0] != want {
				t.Fatalf("button %+v; want %+v", posted[0], want)
			}
			pressed := time.Now()
			answer, err := h.g.host("test").Press(context.Background(), adapters.Press{Chat: testChat, Sender: "test:user/bob", Data: posted[0].Data})
			if err != nil || answer != stopStopping {
				t.Fatalf("press: %q, %v; want %q", answer, err, stopStopping)
			}
			requireStopped(t, pid, pressed)
			if ts := h.waitTurns("main", 2); ts[1].Status != store.TurnStopped || ts[1].Error != "stopped by test:user/bob" {
				t.Fatalf("turn %+v; want stopped by bob", ts[1])
			}
			testwait.For(t, 20*time.Second, "the button removed", func() bool {
				_, edited, deleted := ba.snapshot()
				return len(deleted) == 1 || len(edited) == 1
			})
			if _, edited, deleted := ba.snapshot(); noDel && (len(edited) != 1 || edited[0] != "b-1=Finished./0") || !noDel && deleted[0] != "b-1" {
				t.Errorf("edited %q, deleted %q; want the button's message deleted, or its button taken away", edited, deleted)
			}
		})
	}
}

// BenchmarkStopCommand measures /stop posted → the turn's process tree
// gone, reported as p50 and p99 over the iterations (run with
// -benchtime=20x): an agent and child that ignore SIGTERM (the SIGKILL
// 1 s later ends them) and ones that honour it.
func BenchmarkStopCommand(b *testing.B) {
	for _, c := range []struct{ name, prompt string }{{"ignores-TERM", "a LONG job"}, {"honours-TERM", "a POLITE LONG job"}} {
		b.Run(c.name, func(b *testing.B) {
			h, dir := stopHarness(b, nil)
			var took []time.Duration
			for i := range b.N {
				h.post(testChat, fmt.Sprintf("long-%d", i), c.prompt)
				pid := childPid(b, dir, 2*i+1)
				posted := time.Now()
				h.post(testChat, fmt.Sprintf("stop-%d", i), "/stop")
				for !gone(pid) {
					time.Sleep(100 * time.Microsecond)
				}
				took = append(took, time.Since(posted))
				h.waitTurns("main", 2*i+1)
				// A quick turn in between: the next long one is turn 2i+3.
				h.post(testChat, fmt.Sprintf("quick-%d", i), "quick")
				h.waitTurns("main", 2*i+2)
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}

// A turn a stopped gateway left running on a worker, awaited by the next
// one, is stopped by /stop like a running one: recorded stopped, not run
// again.
func TestStopAwaitedTurn(t *testing.T) {
	h, turn := startOnWorker(t, "a long question", nil)
	h.stop()
	next := rerunWorker()
	h.restart(func(o *Options) { o.Runner = next })
	next.waitAwaiting(t, 1)
	h.post(testChat, "m2", "/stop")
	h.wantAwaitedStopped(t, next, turn)
}

// A /stop that comes while a restarted gateway reads the batch of a turn
// it is about to await (the turn still runs on its worker) stops that turn
// as a running one: recorded stopped, the chat told "Stopped.", not
// "Nothing is running." with the turn running on.
func TestStopAwaitedTurnWhileRead(t *testing.T) {
	h, turn := startOnWorker(t, "a long question", nil)
	h.stop()
	next := rerunWorker()
	reading, posted := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.hooks.awaitRead = func(string) {
		once.Do(func() {
			close(reading)
			<-posted
		})
	}
	h.restart(func(o *Options) { o.Runner = next })
	select {
	case <-reading:
	case <-time.After(20 * time.Second):
		t.Fatal("the restarted gateway never read the awaited turn's batch")
	}
	h.post(testChat, "m2", "/stop")
	close(posted)
	h.wantAwaitedStopped(t, next, turn)
}

// A /stop that comes right after a restart, before the folder's worker
// gets to the turn it awaits (the turn still runs on its worker), stops
// that turn: the worker is told to stop it, it is recorded stopped and the
// chat told "Stopped.", not "Nothing is running." with the turn running
// on. The adapters start before the folders' workers do. So too when the
// runner has no outcome of the turn to give (agent.ErrNoOutcome: a remote
// runner without a record of it): a stopped turn is not run again.
func TestStopAwaitedTurnBeforeItsAwait(t *testing.T) {
	for _, noOutcome := range []bool{false, true} {
		t.Run(fmt.Sprintf("no outcome %v", noOutcome), func(t *testing.T) {
			h, turn := startOnWorker(t, "a long question", nil)
			h.stop()
			next := rerunWorker()
			next.noOutcome = noOutcome
			taking, posted := make(chan struct{}), make(chan struct{})
			var once sync.Once
			h.hooks.awaitStart = func(string) {
				once.Do(func() {
					close(taking)
					<-posted
				})
			}
			h.restart(func(o *Options) { o.Runner = next })
			select {
			case <-taking:
			case <-time.After(20 * time.Second):
				t.Fatal("the restarted gateway's worker never took the turn to await")
			}
			h.post(testChat, "m2", "/stop")
			close(posted)
			h.wantAwaitedStopped(t, next, turn)
			if !noOutcome {
				next.mu.Lock()
				stops := next.stops
				next.mu.Unlock()
				if !slices.Equal(stops, []string{turn}) {
					t.Errorf("turns stopped on their worker: %q; want the awaited %s", stops, turn)
				}
			}
		})
	}
}

// A /stop that came while a restarted gateway read the turn it is about to
// await, whose read then failed (here a table of the real database file
// renamed away for that read: its batch's, or its session's), still stops
// the turn when the read is tried again: it is recorded stopped and the
// chat told "Stopped.", not awaited as if nobody had stopped it.
func TestStopAwaitedTurnSurvivesFailedRead(t *testing.T) {
	for _, tc := range []struct{ name, table string }{
		{"batch", "notices"}, // StartedBatch reads the folder's notices with the batch
		{"session", "sessions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, turn := startOnWorker(t, "a long question", nil)
			h.stop()
			db, err := sql.Open("sqlite3", filepath.Join(h.dir, "switchboard.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			next := rerunWorker()
			reads := make(chan int, 2)
			var n int
			h.hooks.awaitRead = func(string) {
				n++
				switch n {
				case 1: // the stop comes, then the read fails
					h.post(testChat, "m2", "/stop")
					if _, err := db.Exec(`ALTER TABLE ` + tc.table + ` RENAME TO gone`); err != nil {
						t.Error(err)
					}
				case 2: // the next try reads
					if _, err := db.Exec(`ALTER TABLE gone RENAME TO ` + tc.table); err != nil {
						t.Error(err)
					}
				}
				reads <- n
			}
			h.restart(func(o *Options) { o.Runner = next })
			for want := 1; want <= 2; want++ {
				select {
				case <-reads:
				case <-time.After(20 * time.Second):
					t.Fatalf("the restarted gateway never read the awaited turn (try %d)", want)
				}
			}
			h.wantAwaitedStopped(t, next, turn)
		})
	}
}

// A turn a restarted gateway was about to await whose batch is no longer
// there to read (its rows settled meanwhile) is no longer stoppable: its
// Stop button says it has ended, rather than "Stopping." for a turn that
// nothing runs or records.
func TestAwaitedTurnGoneBeforeReadNotStoppable(t *testing.T) {
	h, turn := startOnWorker(t, "a long question", nil)
	h.stop()
	next := rerunWorker()
	reading, settled := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.hooks.awaitRead = func(string) {
		once.Do(func() {
			close(reading)
			<-settled
		})
	}
	h.restart(func(o *Options) { o.Runner = next })
	select {
	case <-reading:
	case <-time.After(20 * time.Second):
		t.Fatal("the restarted gateway never read the awaited turn's batch")
	}
	if _, err := h.st.RecoverTurn(context.Background(), turn); err != nil {
		close(settled)
		t.Fatal(err)
	}
	close(settled)
	if sent := texts(h.waitSent(testChat, 1)); !slices.Equal(sent, []string{"rerun"}) {
		t.Fatalf("sent %q; want the batch run again", sent)
	}
	answer, err := h.g.host("test").Press(context.Background(), adapters.Press{Chat: testChat, Sender: "test:user/ann", Data: stopPressPrefix + turn})
	if err != nil || answer != stopGone {
		t.Errorf("Stop pressed for the turn no longer awaited: %q, %v; want %q", answer, err, stopGone)
	}
}

// A message that interrupts (mid_turn: interrupt) a turn a stopped gateway
// left running on a worker, awaited by the next one, does as it does to a
// running turn: the awaited turn is recorded stopped and its batch runs
// again with the new message as one new turn (it was recorded stopped with
// its batch consumed, so its question was never answered).
func TestInterruptAwaitedTurn(t *testing.T) {
	h, turn := startOnWorker(t, "a long question", func(o *Options) { o.MidTurn = MidTurnInterrupt })
	h.stop()
	next := &workerRunner{release: make(chan struct{}), awaiting: map[string]bool{}, folderOf: map[string]string{}}
	next.answer = func(string) (agent.Result, error) { return agent.Result{Reply: "both answered"}, nil }
	h.restart(func(o *Options) { o.Runner = next })
	next.waitAwaiting(t, 1)
	h.post(testChat, "m2", "and another thing")
	if sent := texts(h.waitSent(testChat, 1)); !slices.Equal(sent, []string{"both answered"}) {
		t.Fatalf("sent %q; want only the new turn's reply", sent)
	}
	ts := h.waitTurns("main", 2)
	if ts[0].Status != store.TurnStopped || ts[0].ID != turn || !strings.HasPrefix(ts[0].Error, "interrupted") {
		t.Fatalf("turns %+v; want the awaited turn recorded stopped, interrupted", ts)
	}
	runs := next.started()
	if len(runs) != 1 || !strings.Contains(runs[0].Prompt, "a long question") || !strings.Contains(runs[0].Prompt, "and another thing") {
		t.Fatalf("turns run after the interrupt: %d; want one whose prompt has both messages: %+v", len(runs), runs)
	}
	testwait.For(t, 10*time.Second, "no pending work", func() bool { return len(h.pending()) == 0 })
}

// /stop while a turn is prepared (its attachments downloading, before its
// agent runs) stops it: the download ends, the agent never runs, the turn
// is recorded stopped and the chat told so, not "Nothing is running.";
// the chat's next message runs as usual.
func TestStopDuringPreparation(t *testing.T) {
	dir := t.TempDir()
	ra := newRich(0)
	ra.stalled = make(chan string, 1)
	h := richHarness(t, ra, stoppableAgent(t, dir), func(o *Options) {
		o.Agent.Output = agent.OutputClaudeStream
		o.Agent.ResumeArgs = []string{"--resume", "{session}"}
		o.Agent.Timeout = time.Minute
	})
	h.deliver(adapters.Inbound{Chat: testChat, ID: "m1", Text: "look at this", Verb: adapters.VerbMention,
		Attachments: []adapters.Attachment{{Name: "big.bin", Size: 8, Ref: "stall"}}})
	select {
	case <-ra.stalled:
	case <-time.After(20 * time.Second):
		t.Fatal("the attachment's download never started")
	}
	h.post(testChat, "m2", "/stop")
	if sent := texts(h.waitSent(testChat, 1)); !slices.Equal(sent, []string{stopStopped}) {
		t.Fatalf("sent %q; want %q", sent, stopStopped)
	}
	if ts := h.waitTurns("main", 1); ts[0].Status != store.TurnStopped {
		t.Fatalf("turns %+v; want one, stopped", ts)
	}
	testwait.For(t, 10*time.Second, "no pending work", func() bool { return len(h.pending()) == 0 })
	if _, err := os.Stat(filepath.Join(dir, "prompt-1")); err == nil {
		t.Fatal("the agent ran for a turn stopped while it was prepared")
	}
	h.post(testChat, "m3", "and now?")
	if sent := texts(h.waitSent(testChat, 2)); sent[1] != "reply 1" {
		t.Fatalf("sent %q; want the next message answered", sent)
	}
	if prompt := turnFile(t, dir, "prompt", 1); strings.Contains(prompt, "look at this") || !strings.Contains(prompt, "and now?") {
		t.Errorf("the next prompt:\n%s\nwant the new message, not the stopped one", prompt)
	}
}
