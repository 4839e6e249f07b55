package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"switchboard/internal/testwait"
	"switchboard/remote"
)

// worker is one `switchboard worker` process.
type worker struct {
	t   testing.TB
	cmd *exec.Cmd
	procLog
	exited chan struct{}
}

// startWorker runs `switchboard worker` with dir's config and its own data
// directory dir/<name>, with credentials that `switchboard nats worker add
// <name>` minted in its data directory the first time, and waits until it
// pulls turns. env adds variables to its environment.
func startWorker(t testing.TB, dir, name, natsURL string, slots int, env ...string) *worker {
	t.Helper()
	creds := workerCreds(t, dir, name, natsURL)
	w := &worker{t: t, exited: make(chan struct{})}
	w.cmd = exec.Command(switchboardBinary(t), "--config", "switchboard.yaml", "--data-dir", filepath.Join(dir, name),
		"worker", "--nats", natsURL, "--creds", creds, "--slots", fmt.Sprint(slots))
	w.cmd.Dir = dir
	w.cmd.Env = append(os.Environ(), env...) // nothing of the gateway's: the turn's env comes with the job
	stderr, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.read(stderr)
		_ = w.cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-w.exited:
		case <-time.After(10 * time.Second):
			_ = w.cmd.Process.Kill()
			<-w.exited
		}
		if t.Failed() {
			t.Logf("worker %s log:\n%s", name, w.logText())
		}
	})
	testwait.For(t, 20*time.Second, "worker "+name+" pulling turns", func() bool {
		select {
		case <-w.exited:
			t.Fatalf("worker %s exited at start:\n%s", name, w.logText())
		default:
		}
		return len(w.records("worker pulling turns", "", "")) > 0
	})
	return w
}

// workerCreds mints worker name's credentials with the CLI beside the
// gateway of dir (registered in its data directory) into dir/<name>, the
// worker's data directory, and waits until the server at natsURL accepts
// them (it reloads its users every 2 s).
func workerCreds(t testing.TB, dir, name, natsURL string) string {
	t.Helper()
	path := filepath.Join(dir, name, "nats.creds")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	mintWorkerCreds(t, dir, name)
	c, err := remote.ReadCreds(path)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.Options("")
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "worker "+name+"'s credentials accepted", func() bool {
		nc, err := nats.Connect(natsURL, append(opts, nats.NoReconnect())...)
		if err != nil {
			return false
		}
		nc.Close()
		return true
	})
	return path
}

// mintWorkerCreds runs `switchboard nats worker add name` beside the
// gateway of dir, into dir/<name>/nats.creds (the worker's data directory),
// and returns that path at once: the running gateway has not loaded them
// yet.
func mintWorkerCreds(t testing.TB, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name, "nats.creds")
	if _, err := runCLI(switchboardBinary(t), dir, "nats", "worker", "add", name, "--out", path); err != nil {
		t.Fatal(err)
	}
	return path
}

// natsE2E is a gateway whose turns run on workers through the embedded
// NATS server, with rooms r0..r(rooms-1) each routed to its own group; the
// agent is the demo agent (answering over MCP HTTP with its turn's token),
// except that the first turn whose prompt holds SLOWME hangs.
func natsE2E(t testing.TB, rooms int, timeout string) (dir string, g *gw, natsURL string) {
	var routes strings.Builder
	var groups []string
	for r := range rooms {
		groups = append(groups, fmt.Sprintf("g%d", r))
		fmt.Fprintf(&routes, "  - {match: {platform: web, room: r%d}, target: g%d}\n", r, r)
	}
	script := fmt.Sprintf(`if grep -q SLOWME "$out/prompt-$n" && mkdir "$E2E_OUT/slowed" 2>/dev/null; then sleep 120; fi
exec %q demo-agent < "$out/prompt-$n"`, switchboardBinary(t))
	dir = newE2E(t, e2eConfig{agent: script, groups: groups, routes: routes.String(), timeout: timeout, maxConcurrent: 16,
		agentExtra: "  runner: nats\n",
		extra:      "nats: {embedded: true, listen: \"127.0.0.1:0\"}\nmcp: {listen: \"127.0.0.1:0\"}\n"})
	g = startGW(t, dir)
	natsURL = embeddedNATSURL(t, g)
	return dir, g, natsURL
}

// embeddedNATSURL is the client URL of the NATS server embedded in g, from
// its log.
func embeddedNATSURL(t testing.TB, g *gw) string {
	t.Helper()
	rec := g.findLog("embedded nats server listening")
	url, _ := rec["url"].(string)
	if url == "" {
		t.Fatalf("no embedded nats server in the gateway's log:\n%s", g.logText())
	}
	return url
}

// answeredOnce waits until each of messages msg-0… posted round-robin in
// rooms r0… is answered, then checks that each was answered exactly once.
func answeredOnce(t testing.TB, g *gw, rooms, messages int, within time.Duration) {
	t.Helper()
	testwait.For(t, within, "every message answered", func() bool {
		for k := range messages {
			if quoted(g, fmt.Sprintf("r%d", k%rooms), fmt.Sprintf("msg-%d", k)) == 0 {
				return false
			}
		}
		return true
	})
	for k := range messages {
		if n := quoted(g, fmt.Sprintf("r%d", k%rooms), fmt.Sprintf("msg-%d", k)); n != 1 {
			t.Errorf("msg-%d answered %d times; want once", k, n)
		}
	}
}

// quoted counts the bot's messages in room that quote text (the demo agent
// quotes each message it answers: "text").
func quoted(g *gw, room, text string) int {
	n := 0
	for _, m := range g.botMessages(room) {
		n += strings.Count(m.Text, fmt.Sprintf("%q", text))
	}
	return n
}

// TestE2EWorkers: 100 messages over 20 groups, with every turn run by one
// of two `switchboard worker` processes (separate data directories) pulling
// from the gateway's embedded NATS JetStream, are all answered once, by
// both workers, which status and the admin page list with their slots;
// then a worker killed with SIGKILL in the middle of a turn costs that turn
// one attempt, recorded as soon as the worker stops reporting (long before
// agent.timeout): it is retried on the other worker and answered once.
func TestE2EWorkers(t *testing.T) {
	t.Parallel()
	const rooms, messages = 20, 100
	dir, g, url := natsE2E(t, rooms, "60s")
	w1 := startWorker(t, dir, "w1", url, 2)
	w2 := startWorker(t, dir, "w2", url, 2)
	// status lists both workers with their slots.
	out := g.mustCLI("status", "--nats", url)
	if n := strings.Count(out, "/2 slots busy"); n != 2 {
		t.Errorf("status lists %d workers with 2 slots; want 2:\n%s", n, out)
	}
	// So does the admin page.
	resp, err := g.http.Get("http://" + g.adminAddr + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, id := range []string{"w1", "w2"} { // the names their credentials were minted for
		if row := fmt.Sprintf(">%s</td>", id); !strings.Contains(string(page), row) {
			t.Errorf("the admin page lists no worker %s:\n%s", row, page)
		}
	}

	for k := range messages {
		g.mustPost(fmt.Sprintf("r%d", k%rooms), fmt.Sprintf("u%d", k), fmt.Sprintf("msg-%d", k))
	}
	answeredOnce(t, g, rooms, messages, 40*time.Second)
	n1, n2 := len(w1.records("turn done", "", "")), len(w2.records("turn done", "", ""))
	t.Logf("turns: w1 %d, w2 %d", n1, n2)
	if n1 == 0 || n2 == 0 {
		t.Errorf("turns ran on w1: %d, w2: %d; want both workers used", n1, n2)
	}

	// Kill -9 the worker running a turn.
	g.mustPost("r0", "slow", "SLOWME please")
	slowed := filepath.Join(dir, "out", "slowed")
	testwait.For(t, 20*time.Second, "the slow turn to start on a worker", func() bool {
		_, err := os.Stat(slowed)
		return err == nil
	})
	var turn string
	testwait.For(t, 10*time.Second, "the slow turn's id", func() bool {
		for n := turnCount(dir, "g0"); n > 0; n-- {
			if strings.Contains(turnFile(t, dir, "g0", "prompt", n), "SLOWME") {
				turn = turnEnv(t, dir, "g0", n)["SWITCHBOARD_TURN_ID"]
				return turn != ""
			}
		}
		return false
	})
	victim, survivor := w1, w2
	if len(w2.records("turn starting", "turn", turn)) > 0 {
		victim, survivor = w2, w1
	}
	if len(victim.records("turn starting", "turn", turn)) == 0 {
		t.Fatalf("no worker logged the start of turn %s", turn)
	}
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.exited
	testwait.For(t, 45*time.Second, "the slow message answered after the worker died", func() bool {
		return quoted(g, "r0", "SLOWME please") > 0
	})
	if n := quoted(g, "r0", "SLOWME please"); n != 1 {
		t.Errorf("the slow message was answered %d times; want once", n)
	}
	if len(survivor.records("turn done", "", "")) == 0 {
		t.Errorf("the surviving worker ran no turn")
	}
	// The lost turn was recorded as a failed attempt (its token revoked
	// with it) and the batch ran again as a new turn.
	failed := false
	for _, r := range g.records("turn failed", "turn", turn) {
		failed = failed || strings.Contains(fmt.Sprint(r["err"]), "stopped reporting")
	}
	if !failed {
		t.Errorf("turn %s on the killed worker was not recorded as failed when its worker stopped reporting", turn)
	}
}

// TestE2EWorkerFolders: a turn on a worker works on a copy of the group
// folder, seen in the sandbox at the gateway's path; the file it writes
// appears in the gateway's folder, and the next turn, on the other worker,
// sees it there; neither worker writes the gateway's folder itself (they
// share this machine's filesystem).
func TestE2EWorkerFolders(t *testing.T) {
	t.Parallel()
	script := fmt.Sprintf(`cat notes.txt > "$out/seen-$n" 2>/dev/null
ls -A > "$out/ls-$n"
echo "note $n" >> notes.txt
exec %q demo-agent < "$out/prompt-$n"`, switchboardBinary(t))
	dir := newE2E(t, e2eConfig{agent: script, groups: []string{"g0"}, routes: "  - {match: {platform: web, room: r0}, target: g0}\n",
		agentExtra: "  runner: nats\n",
		extra:      "nats: {embedded: true, listen: \"127.0.0.1:0\"}\nmcp: {listen: \"127.0.0.1:0\"}\n"})
	g := startGW(t, dir)
	url := embeddedNATSURL(t, g)
	folder := filepath.Join(dir, "data", "groups", "g0")
	if err := os.WriteFile(filepath.Join(folder, ".env"), []byte("GATEWAY_ONLY=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	workers := map[string]*worker{"w1": startWorker(t, dir, "w1", url, 1), "w2": startWorker(t, dir, "w2", url, 1)}

	g.mustPost("r0", "ann", "first")
	// The answer goes out through MCP during the turn; the folder's
	// changes come with the turn's result.
	testwait.For(t, 30*time.Second, "turn 1's file in the gateway's folder", func() bool {
		got, _ := os.ReadFile(filepath.Join(folder, "notes.txt"))
		return string(got) == "note 1\n"
	})
	if cwd := strings.TrimSpace(turnFile(t, dir, "g0", "cwd", 1)); cwd != folder {
		t.Errorf("the sandboxed agent ran in %s; want the gateway's path %s", cwd, folder)
	}
	if ls := turnFile(t, dir, "g0", "ls", 1); strings.Contains(ls, ".env") {
		t.Errorf("the agent saw the gateway's .env:\n%s", ls)
	}
	turn := turnEnv(t, dir, "g0", 1)["SWITCHBOARD_TURN_ID"]
	first, other := "", ""
	testwait.For(t, 10*time.Second, "a worker's log of turn "+turn, func() bool {
		for name, w := range workers {
			if len(w.records("turn done", "turn", turn)) > 0 {
				first = name
			} else {
				other = name
			}
		}
		return first != ""
	})
	copies, _ := filepath.Glob(filepath.Join(dir, first, "folders", "*", "notes.txt"))
	if len(copies) != 1 {
		t.Fatalf("worker %s's copies holding notes.txt: %v; want the folder's one copy", first, copies)
	}
	if got, _ := os.ReadFile(copies[0]); string(got) != "note 1\n" {
		t.Errorf("worker %s's copy of the folder holds notes.txt %q; want the turn's write there", first, got)
	}
	// The next turn runs on the other worker.
	w := workers[first]
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-w.exited
	g.mustPost("r0", "ann", "second")
	testwait.For(t, 30*time.Second, "turn 2's file in the gateway's folder", func() bool {
		got, _ := os.ReadFile(filepath.Join(folder, "notes.txt"))
		return string(got) == "note 1\nnote 2\n"
	})
	if seen := turnFile(t, dir, "g0", "seen", 2); seen != "note 1\n" {
		t.Errorf("turn 2 on worker %s saw notes.txt %q; want turn 1's from worker %s", other, seen, first)
	}
	if len(workers[other].records("turn done", "turn", turnEnv(t, dir, "g0", 2)["SWITCHBOARD_TURN_ID"])) == 0 {
		t.Errorf("turn 2 did not run on worker %s", other)
	}
	if quoted(g, "r0", "second") != 1 {
		t.Errorf("the second message was answered %d times; want once", quoted(g, "r0", "second"))
	}
	if got, _ := os.ReadFile(filepath.Join(folder, ".env")); string(got) != "GATEWAY_ONLY=1\n" {
		t.Errorf("the gateway's .env: %q; want untouched", got)
	}
}

// TestE2EStaleWorkerFenced: a worker that stops reporting in the middle of
// a turn (SIGSTOP: a partition as the gateway sees it) loses that turn; it
// is retried on the other worker, whose folder changes are applied. When
// the stopped worker comes back and its agent finishes, its outcome is
// dropped (nothing is answered twice) and its folder upload, made on the
// version before the retry's, is refused: the gateway's folder keeps what
// the retry wrote.
func TestE2EStaleWorkerFenced(t *testing.T) {
	t.Parallel()
	// Every turn writes its number into owner.txt; the first holds until
	// the test releases it.
	script := fmt.Sprintf(`echo "turn $n" > owner.txt
if [ "$n" = 1 ]; then touch "$E2E_OUT/held"; while [ ! -e "$E2E_OUT/release" ]; do sleep 0.05; done; fi
exec %q demo-agent < "$out/prompt-$n"`, switchboardBinary(t))
	dir := newE2E(t, e2eConfig{agent: script, groups: []string{"g0"}, routes: "  - {match: {platform: web, room: r0}, target: g0}\n",
		timeout: "90s", agentExtra: "  runner: nats\n",
		extra: "nats: {embedded: true, listen: \"127.0.0.1:0\"}\nmcp: {listen: \"127.0.0.1:0\"}\n"})
	g := startGW(t, dir)
	url := embeddedNATSURL(t, g)
	folder := filepath.Join(dir, "data", "groups", "g0")
	workers := []*worker{startWorker(t, dir, "w1", url, 1), startWorker(t, dir, "w2", url, 1)}

	g.mustPost("r0", "ann", "hold on")
	testwait.For(t, 30*time.Second, "turn 1 holding on a worker", func() bool {
		_, err := os.Stat(filepath.Join(dir, "out", "held"))
		return err == nil
	})
	turn1 := turnEnv(t, dir, "g0", 1)["SWITCHBOARD_TURN_ID"]
	var stale *worker
	testwait.For(t, 10*time.Second, "the worker running turn "+turn1, func() bool {
		for _, w := range workers {
			if len(w.records("turn starting", "turn", turn1)) > 0 {
				stale = w
			}
		}
		return stale != nil
	})
	staleID := fmt.Sprint(stale.records("turn starting", "turn", turn1)[0]["worker"])
	if err := stale.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// The gateway gives the turn up when the worker stops reporting (15 s)
	// and retries it on the other worker, which writes owner.txt.
	testwait.For(t, 60*time.Second, "the retry's owner.txt in the gateway's folder", func() bool {
		got, _ := os.ReadFile(filepath.Join(folder, "owner.txt"))
		return string(got) == "turn 2\n"
	})
	if len(g.records("turn failed", "turn", turn1)) == 0 && !strings.Contains(g.logText(), "stopped reporting") {
		t.Errorf("turn %s was not failed for its stopped worker:\n%s", turn1, g.logText())
	}
	// The stopped worker comes back, and its agent finishes.
	if err := os.WriteFile(filepath.Join(dir, "out", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := stale.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 60*time.Second, "the stale upload refused", func() bool {
		return len(g.records("stale folder upload refused", "turn", turn1)) > 0
	})
	if r := g.records("stale folder upload refused", "turn", turn1)[0]; fmt.Sprint(r["worker"]) != staleID {
		t.Errorf("refused upload %v; want it from the stale worker %s", r, staleID)
	}
	if got, _ := os.ReadFile(filepath.Join(folder, "owner.txt")); string(got) != "turn 2\n" {
		t.Errorf("the gateway's owner.txt is %q after the stale upload; want the retry's \"turn 2\\n\"", got)
	}
	if n := quoted(g, "r0", "hold on"); n != 1 {
		t.Errorf("the message was answered %d times; want once", n)
	}
}

// TestE2EWorkerStartedRightAfterAdd: a worker started at once after
// `switchboard nats worker add`, before the running gateway loaded its
// credentials (it looks every 2 s), waits for them instead of exiting with
// "authorization violation", and then runs turns.
func TestE2EWorkerStartedRightAfterAdd(t *testing.T) {
	dir, g, natsURL := natsE2E(t, 1, "60s")
	mintWorkerCreds(t, dir, "w1")
	startWorker(t, dir, "w1", natsURL, 1) // fails if the worker exits at start
	g.mustPost("r0", "ann", "msg-0")
	answeredOnce(t, g, 1, 1, 60*time.Second)
}
