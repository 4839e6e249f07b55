package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testagent"
	"switchboard/internal/testmetrics"
	"switchboard/internal/testwait"
	"switchboard/ops"
	"switchboard/routing"
	"switchboard/store"
)

// countFile counts the lines an agent appended to a file (one per run).
func countFile(t testing.TB, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

func TestTurnReplyGoesToTheChat(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	h.post(testChat, "m1", "hello")
	sent := h.waitSent(testChat, 1)
	if sent[0].Text != "reply 1" || sent[0].ReplyTo != "m1" || sent[0].Key == "" {
		t.Fatalf("sent %+v; want reply 1 answering m1 with a key", sent[0])
	}
	// The reply is stored as the bot's message, after the user's.
	var ms []store.Message
	testwait.For(t, 5*time.Second, "reply stored", func() bool {
		var err error
		ms, err = h.st.MessagesAfter(context.Background(), testChat, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(ms) >= 2
	})
	if len(ms) != 2 || !ms[1].FromBot || ms[1].Text != "reply 1" || ms[1].ID != sent[0].ID {
		t.Fatalf("stored %+v; want the user's message and the bot's reply under its platform id", ms)
	}
	env := rec.env(t, 1)
	want := map[string]string{"SWITCHBOARD_FOLDER": "main", "SWITCHBOARD_TIER": "1", "SWITCHBOARD_CHAT_JID": testChat,
		"SWITCHBOARD_TRIGGER": "message", "SWITCHBOARD_TOPIC": "", "SWITCHBOARD_TASK_ID": "", "SWITCHBOARD_SESSION_ID": "",
		"SWITCHBOARD_MCP_SOCKET": filepath.Join(h.dir, "ipc", "main", "mcp.sock")}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
	if len(h.pending()) != 0 {
		t.Errorf("work left after the turn: %v", h.pending())
	}
}

// A failed turn is retried at most twice; the chat hears about it once
// (rate-limited) and once more when the gateway gives up; the batch is then
// dropped and later messages run normally.
func TestFailedTurnRetriedTwiceThenGivenUp(t *testing.T) {
	for _, tc := range []struct {
		name, body, reason string
		timeout            time.Duration
	}{
		{"timeout", "exec sleep 30", "the agent timed out", 300 * time.Millisecond},
		{"crash", "echo boom >&2; exit 3", "the agent failed with exit status 3", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runs := filepath.Join(t.TempDir(), "runs")
			good := filepath.Join(t.TempDir(), "good")
			agent := testagent.Script(t, `echo run >> "$1"; if [ -e "$2" ]; then cat >/dev/null; echo fine; exit 0; fi; `+tc.body, runs, good)
			h := newHarness(t, harnessConfig{agent: agent, modify: func(o *Options) { o.Agent.Timeout = tc.timeout }})
			h.post(testChat, "m1", "hello")
			sent := h.waitSent(testChat, 2)
			testwait.For(t, 10*time.Second, "three failed turns recorded", func() bool { return len(h.turns("main")) >= 3 })
			if n := countFile(t, runs); n != 3 {
				t.Errorf("agent ran %d times; want 3 (two retries)", n)
			}
			if !strings.Contains(sent[0].Text, tc.reason) || !strings.Contains(sent[0].Text, "Retrying") {
				t.Errorf("first notice %q; want it to say %q and that it retries", sent[0].Text, tc.reason)
			}
			if !strings.Contains(sent[1].Text, "after 3 attempts") {
				t.Errorf("final notice %q; want it to say it gave up after 3 attempts", sent[1].Text)
			}
			for i, tr := range h.turns("main") {
				if tr.Status != "failed" || tr.Attempt != i+1 || tr.Error == "" {
					t.Errorf("turn %d: %+v; want failed attempt %d with an error", i, tr, i+1)
				}
			}
			if len(h.pending()) != 0 {
				t.Fatalf("batch still pending after giving up: %v", h.pending())
			}
			// The folder is not stuck: the next message is answered.
			if err := os.WriteFile(good, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			h.post(testChat, "m2", "again")
			if got := h.waitSent(testChat, 3)[2].Text; got != "fine" {
				t.Errorf("reply after recovery %q", got)
			}
			if len(h.fa.sentTo(testChat)) != 3 {
				t.Errorf("sent %d messages; want two notices and one reply", len(h.fa.sentTo(testChat)))
			}
		})
	}
}

// The "Retrying" notice is sent at most once per chat in noticeEvery; the
// notice that the gateway gave up always is. Replies to a chat go out in
// order, so a notice that should not exist would show before the final one.
func TestFailureNoticeOncePerWindow(t *testing.T) {
	clk := newFakeClock()
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "cat >/dev/null; exit 3"), modify: func(o *Options) { o.Now = clk.Now }})
	want := func(texts ...string) {
		t.Helper()
		sent := h.waitSent(testChat, len(texts))
		for i, w := range texts {
			if !strings.Contains(sent[i].Text, w) {
				t.Fatalf("message %d to the chat is %q; want it to say %q", i, sent[i].Text, w)
			}
		}
	}
	h.post(testChat, "m1", "hello")
	want("Retrying", "after 3 attempts")
	h.post(testChat, "m2", "again, within the window")
	want("Retrying", "after 3 attempts", "after 3 attempts")
	clk.Advance(noticeEvery)
	h.post(testChat, "m3", "again, a window later")
	want("Retrying", "after 3 attempts", "after 3 attempts", "Retrying", "after 3 attempts")
	testwait.For(t, 10*time.Second, "nine failed turns recorded", func() bool { return len(h.turns("main")) == 9 })
	if n := len(h.fa.sentTo(testChat)); n != 5 {
		t.Errorf("the chat got %d messages; want 5 notices", n)
	}
}

func TestFailedTurnSucceedsOnRetry(t *testing.T) {
	dir := t.TempDir()
	flag := filepath.Join(t.TempDir(), "failed")
	agent := testagent.Script(t, `cat > "$1/prompt-$(ls "$1" | wc -l)"; if [ ! -e "$2" ]; then touch "$2"; exit 1; fi; echo answered`, dir, flag)
	h := newHarness(t, harnessConfig{agent: agent})
	h.post(testChat, "m1", "hello")
	sent := h.waitSent(testChat, 2)
	if !strings.Contains(sent[0].Text, "Retrying") || sent[1].Text != "answered" {
		t.Fatalf("sent %q, %q; want a notice, then the answer", sent[0].Text, sent[1].Text)
	}
	ts := h.turns("main")
	if len(ts) != 2 || ts[0].Status != "failed" || ts[1].Status != "succeeded" || ts[1].Attempt != 2 {
		t.Fatalf("turns %+v", ts)
	}
	for i := range 2 {
		b, _ := os.ReadFile(filepath.Join(dir, "prompt-"+strconv.Itoa(i)))
		if !strings.Contains(string(b), `id="m1"`) {
			t.Errorf("attempt %d prompt lacks the message:\n%s", i+1, b)
		}
	}
}

// Messages that arrive while a turn runs go together into the next turn.
func TestMessagesDuringTurnBatchIntoNext(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	rec := newRecorder(t, `while [ ! -e "`+release+`" ]; do sleep 0.01; done`)
	h := newHarness(t, harnessConfig{agent: rec.argv})
	h.post(testChat, "m1", "first")
	testwait.Count(t, 10*time.Second, "turns started", 1, func() int { return len(rec.prompts(t)) })
	for i := 2; i <= 5; i++ {
		h.post(testChat, fmt.Sprintf("m%d", i), fmt.Sprintf("msg %d", i))
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitSent(testChat, 2)
	ps := rec.prompts(t)
	if len(ps) != 2 {
		t.Fatalf("%d turns; want 2", len(ps))
	}
	if strings.Count(ps[0], "<message ") != 1 {
		t.Errorf("first prompt has %d messages:\n%s", strings.Count(ps[0], "<message "), ps[0])
	}
	if strings.Count(ps[1], "<message ") != 4 {
		t.Errorf("second prompt has %d messages; want the 4 that arrived during the first turn:\n%s", strings.Count(ps[1], "<message "), ps[1])
	}
	for i := 2; i <= 5; i++ {
		if !strings.Contains(ps[1], fmt.Sprintf(`id="m%d"`, i)) {
			t.Errorf("second prompt lacks m%d", i)
		}
	}
}

// One turn at a time per folder, at most MaxConcurrent in all.
func TestTurnConcurrencyLimits(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log")
	agent := testagent.Script(t, `cat >/dev/null; echo "start $SWITCHBOARD_FOLDER $(date +%s%N)" >> "$1"; sleep 0.1; echo "end $SWITCHBOARD_FOLDER $(date +%s%N)" >> "$1"; echo ok`, log)
	var routes []routing.Route
	folders := []string{"f1", "f2", "f3", "f4"}
	for _, f := range folders {
		routes = append(routes, routing.Route{Match: map[string]string{"chat_jid": "test:" + f + "/*"}, Target: groups.Folder(f)})
	}
	h := newHarness(t, harnessConfig{agent: agent, groups: folders, routes: routes, modify: func(o *Options) { o.MaxConcurrent = 2 }})
	for round := range 3 {
		for _, f := range folders {
			for c := range 2 { // two chats per folder: separate batches
				h.post(fmt.Sprintf("test:%s/%d", f, c), fmt.Sprintf("r%d", round), "hi")
			}
		}
	}
	total := 0
	testwait.For(t, 30*time.Second, "all messages answered", func() bool {
		total = 0
		for _, f := range folders {
			for c := range 2 {
				total += len(h.fa.sentTo(fmt.Sprintf("test:%s/%d", f, c)))
			}
		}
		return len(h.pending()) == 0 && total > 0 && countFile(t, log) == 2*totalTurns(h, folders)
	})
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		at    int64
		start bool
		f     string
	}
	var evs []ev
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var kind, f string
		var at int64
		if _, err := fmt.Sscan(line, &kind, &f, &at); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		evs = append(evs, ev{at, kind == "start", f})
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		if !a.start { // an end at the same instant comes first
			return -1
		}
		return 1
	})
	running, maxRunning := 0, 0
	per := map[string]int{}
	for _, e := range evs {
		if e.start {
			running++
			per[e.f]++
			if per[e.f] > 1 {
				t.Errorf("folder %s ran two turns at once", e.f)
			}
		} else {
			running--
			per[e.f]--
		}
		maxRunning = max(maxRunning, running)
	}
	if maxRunning > 2 {
		t.Errorf("%d turns ran at once; max_concurrent is 2", maxRunning)
	}
	if maxRunning < 2 {
		t.Errorf("turns never overlapped; the limit of 2 should allow two folders at once")
	}
}

func totalTurns(h *harness, folders []string) int {
	n := 0
	for _, f := range folders {
		n += len(h.turns(groups.Folder(f)))
	}
	return n
}

// Shutdown lets a running turn finish, delivers its reply, then returns.
func TestShutdownDrainsRunningTurn(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	rec := newRecorder(t, `while [ ! -e "`+release+`" ]; do sleep 0.01; done`)
	h := newHarness(t, harnessConfig{agent: rec.argv})
	h.post(testChat, "m1", "hello")
	testwait.Count(t, 10*time.Second, "turns started", 1, func() int { return len(rec.prompts(t)) })
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	// Intake stops first; the turn is still running then.
	select {
	case <-h.fa.stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("intake did not stop")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run did not return")
	}
	if s := h.fa.sentTo(testChat); len(s) != 1 || s[0].Text != "reply 1" {
		t.Fatalf("sent %+v; want the drained turn's reply delivered before Run returned", s)
	}
	if ts := h.turns("main"); len(ts) != 1 || ts[0].Status != "succeeded" {
		t.Fatalf("turns %+v", ts)
	}
	if len(h.pending()) != 0 {
		t.Fatal("work left after a drained turn")
	}
}

// A turn still running at the drain deadline is stopped and its batch stays
// pending, unconsumed and without a counted attempt, for the next start.
func TestShutdownDeadlineLeavesBatchPending(t *testing.T) {
	rec := newRecorder(t, `if [ "$(ls "`+"$out"+`" | grep -c '^prompt-')" = 1 ]; then exec sleep 30; fi`)
	h := newHarness(t, harnessConfig{agent: rec.argv, modify: func(o *Options) { o.DrainTimeout = 100 * time.Millisecond }})
	h.post(testChat, "m1", "hello")
	testwait.Count(t, 10*time.Second, "turns started", 1, func() int { return len(rec.prompts(t)) })
	start := time.Now()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("shutdown took %s", d)
	}
	if len(h.turns("main")) != 0 || len(h.fa.sentTo(testChat)) != 0 {
		t.Fatalf("an interrupted turn was recorded or answered: %+v", h.turns("main"))
	}
	if p := h.pending(); !slices.Equal(p, []groups.Folder{"main"}) {
		t.Fatalf("pending %v; want main's batch kept", p)
	}
	h.restart(nil)
	if got := h.waitSent(testChat, 1)[0].Text; got != "reply 2" {
		t.Fatalf("after restart sent %q", got)
	}
	if ts := h.turns("main"); len(ts) != 1 || ts[0].Attempt != 1 {
		t.Fatalf("turns after restart %+v; want one first attempt", ts)
	}
}

// Observed messages are context for the folder's next turn in that chat,
// never a turn of their own; they are shown once.
func TestObservedContext(t *testing.T) {
	rec := newRecorder(t, "")
	obs := "test:obs/1"
	h := newHarness(t, harnessConfig{agent: rec.argv, routes: []routing.Route{
		{Match: map[string]string{"chat_jid": "test:obs/*"}, Target: "main", Mode: routing.Observe},
		{Match: map[string]string{"platform": "test"}, Target: "main"},
	}})
	h.post(obs, "o1", "context one")
	h.post(obs, "o2", "context two")
	h.post(testChat, "m1", "elsewhere") // a turn in another chat must not take them
	h.waitSent(testChat, 1)
	ctx := context.Background()
	if _, err := h.g.intake.inject(ctx, ops.InjectRequest{Chat: adapters.JID(obs), Text: "now answer"}); err != nil {
		t.Fatal(err)
	}
	h.waitSent(obs, 1)
	if _, err := h.g.intake.inject(ctx, ops.InjectRequest{Chat: adapters.JID(obs), Text: "again"}); err != nil {
		t.Fatal(err)
	}
	h.waitSent(obs, 2)
	ps := rec.prompts(t)
	if len(ps) != 3 {
		t.Fatalf("%d turns; want 3 (observed messages run none)", len(ps))
	}
	if strings.Contains(ps[0], "<observed>") {
		t.Errorf("the other chat's turn got the observed context:\n%s", ps[0])
	}
	obsPart, msgPart, _ := strings.Cut(ps[1], "<messages>")
	if !strings.Contains(obsPart, "<observed>") || !strings.Contains(obsPart, "context one") || !strings.Contains(obsPart, "context two") {
		t.Errorf("inject turn lacks the observed context:\n%s", ps[1])
	}
	if !strings.Contains(msgPart, "now answer") || strings.Contains(msgPart, "context") || !strings.Contains(ps[1], `trigger="inject"`) {
		t.Errorf("inject turn messages:\n%s", ps[1])
	}
	if strings.Contains(ps[2], "<observed>") {
		t.Errorf("observed context shown twice:\n%s", ps[2])
	}
}

// After the bot replied in a chat, follow-ups there trigger the folder even
// on an observe route, for engage_ttl; once that has passed since the bot
// last spoke, they are context again.
func TestEngagementTriggersObserveRoute(t *testing.T) {
	clk := newFakeClock()
	rec := newRecorder(t, "")
	obs := "test:obs/1"
	h := newHarness(t, harnessConfig{agent: rec.argv, modify: func(o *Options) { o.Now = clk.Now }, routes: []routing.Route{
		{Match: map[string]string{"chat_jid": "test:obs/*"}, Target: "main", Mode: routing.Observe},
	}})
	ttl := h.opt.EngageTTL
	// botSpoke waits until the nth message of the chat is the bot's stored
	// reply: a user sees it only then, and the engagement starts before.
	botSpoke := func(n int) {
		t.Helper()
		h.waitSent(obs, n/2)
		testwait.For(t, 10*time.Second, "bot reply stored", func() bool {
			ms, err := h.st.MessagesAfter(context.Background(), adapters.JID(obs), 0, 10)
			return err == nil && len(ms) == n && ms[n-1].FromBot
		})
	}
	followUp := func(id string) {
		t.Helper()
		if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: adapters.JID(obs), ID: adapters.MessageID(id), Sender: "test:user/bob",
			Text: "follow-up " + id, Verb: adapters.VerbMessage}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.g.intake.inject(context.Background(), ops.InjectRequest{Chat: adapters.JID(obs), Text: "say hi"}); err != nil {
		t.Fatal(err)
	}
	botSpoke(2)
	clk.Advance(ttl - time.Second)
	followUp("f1")
	botSpoke(4)
	ps := rec.prompts(t)
	if len(ps) != 2 || !strings.Contains(ps[1], `trigger="message"`) || !strings.Contains(ps[1], "follow-up f1") {
		t.Fatalf("prompts %q", ps)
	}
	// The reply to f1 engaged the chat again, from the clock's now.
	clk.Advance(ttl + time.Second)
	followUp("f2")
	if p := h.pending(); len(p) != 0 {
		t.Fatalf("follow-up after the engagement expired queued a turn: %v", p)
	}
}

func TestUnroutedMessageStoredWithoutTurn(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv, routes: []routing.Route{{Match: map[string]string{"chat_jid": testChat}, Target: "main"}}})
	h.post("test:nowhere/1", "u1", "anyone?")
	h.post("test:nowhere/1", "u1", "anyone?") // a redelivery is not counted again
	if h.g.intake.unroutedCount() != 1 {
		t.Errorf("unrouted = %d", h.g.intake.unroutedCount())
	}
	// An operator sees the count on /metrics.
	if v := testmetrics.Value(t, scrape(t, h.g), `switchboard_unrouted_messages_total{platform="test"}`); v != 1 {
		t.Errorf("switchboard_unrouted_messages_total = %v, want 1", v)
	}
	if len(h.pending()) != 0 {
		t.Fatal("an unrouted message queued work")
	}
	if _, err := h.st.MessageByID(context.Background(), "test:nowhere/1", "u1"); err != nil {
		t.Fatalf("unrouted message not stored: %v", err)
	}
}

// A redelivered message (same chat and id) is stored once and runs once.
func TestRedeliveryStoredAndRunOnce(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	s1 := h.post(testChat, "m1", "hello")
	s2 := h.post(testChat, "m1", "hello")
	if s1 != s2 {
		t.Fatalf("redelivery got seq %d, first %d", s2, s1)
	}
	// Same id in another chat is another message.
	if s3 := h.post("test:room/2", "m1", "hello"); s3 == s1 {
		t.Fatal("same platform id in another chat was taken as a duplicate")
	}
	h.waitSent(testChat, 1)
	h.waitSent("test:room/2", 1)
	if n := len(rec.prompts(t)); n != 2 {
		t.Fatalf("%d turns; want 2", n)
	}
}

// Many concurrent deliveries over several folders: every message is stored
// once, gets exactly one turn, and no wake-up is lost between a worker
// finding no work and exiting.
func TestConcurrentDeliveriesAllRunOnce(t *testing.T) {
	agent := testagent.Script(t, `cat >/dev/null; echo ok`)
	folders := []string{"f1", "f2", "f3"}
	var routes []routing.Route
	for _, f := range folders {
		routes = append(routes, routing.Route{Match: map[string]string{"chat_jid": "test:" + f + "/*"}, Target: groups.Folder(f)})
	}
	h := newHarness(t, harnessConfig{agent: agent, groups: folders, routes: routes})
	const n = 300
	var wg sync.WaitGroup
	seqs := make([]int64, n)
	for w := range 12 {
		wg.Go(func() {
			for i := w; i < n; i += 12 {
				chat := fmt.Sprintf("test:%s/%d", folders[i%3], i%2)
				// Every message is delivered twice, concurrently with others.
				for range 2 {
					seq, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: adapters.JID(chat), ID: adapters.MessageID(strconv.Itoa(i)),
						Sender: "test:user/ann", Text: "hi", Verb: adapters.VerbMention})
					if err != nil {
						t.Error(err)
						return
					}
					if seqs[i] != 0 && seqs[i] != seq {
						t.Errorf("message %d: seq %d then %d", i, seqs[i], seq)
					}
					seqs[i] = seq
				}
			}
		})
	}
	wg.Wait()
	var consumed int
	testwait.For(t, 30*time.Second, "every message consumed by a turn", func() bool {
		if len(h.pending()) != 0 {
			return false
		}
		if err := h.st.Read().QueryRow(`SELECT COALESCE(sum(messages), 0) FROM turns WHERE status = 'succeeded'`).Scan(&consumed); err != nil {
			t.Fatal(err)
		}
		return consumed >= n
	})
	if consumed != n {
		t.Fatalf("turns consumed %d messages; want %d", consumed, n)
	}
	var stored int
	if err := h.st.Read().QueryRow(`SELECT count(*) FROM messages WHERE from_bot = 0`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != n {
		t.Fatalf("stored %d user messages; want %d", stored, n)
	}
}

// A bad message in a group commit fails alone; the others are stored.
func TestGroupCommitIsolatesFailure(t *testing.T) {
	h := newHarness(t, harnessConfig{agent: testagent.Script(t, "echo ok"), noStart: true})
	ctx := context.Background()
	var reqs []*commitReq
	for i := range 5 {
		r := &commitReq{ctx: ctx, done: make(chan struct{}),
			msg:  store.Message{ChatJID: testChat, ID: adapters.MessageID(fmt.Sprint("g", i)), Sender: "test:user/ann", Text: "hi", Verb: "mention"},
			work: []store.WorkItem{{Folder: "main", ChatJID: testChat, Mode: "observe", Trigger: store.TriggerMessage}}}
		if i == 2 {
			r.work[0].Folder = "" // the store refuses this work item
		}
		reqs = append(reqs, r)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	reqs = append(reqs, &commitReq{ctx: cancelled, done: make(chan struct{}), msg: store.Message{ChatJID: testChat, ID: "gone", Text: "x"}})
	h.g.intake.commits.commitBatch(reqs)
	for i, r := range reqs {
		<-r.done
		wantErr := i == 2 || i == 5
		if (r.err != nil) != wantErr {
			t.Errorf("request %d: err %v", i, r.err)
		}
		if !wantErr && (!r.inserted || r.msg.Seq == 0) {
			t.Errorf("request %d not stored: %+v", i, r)
		}
	}
	var n int
	if err := h.st.Read().QueryRow(`SELECT count(*) FROM messages`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Fatalf("%d messages stored; want the 4 good ones", n)
	}
}

// A chat whose batch waits for its retry does not hold up the folder's
// other chats.
func TestRetryWaitDoesNotBlockOtherChats(t *testing.T) {
	agent := testagent.Script(t, `cat >/dev/null; if [ "$SWITCHBOARD_CHAT_JID" = test:bad/1 ]; then exit 3; fi; echo ok`)
	h := newHarness(t, harnessConfig{agent: agent, modify: func(o *Options) { o.RetryDelays = []time.Duration{time.Hour} }})
	h.post("test:bad/1", "b1", "fails")
	h.waitSent("test:bad/1", 1) // the "Retrying" notice
	h.post(testChat, "m1", "hello")
	if got := h.waitSent(testChat, 1)[0].Text; got != "ok" {
		t.Fatalf("other chat got %q", got)
	}
	h.post("test:bad/1", "b2", "more")
	h.post(testChat, "m2", "hello again")
	h.waitSent(testChat, 2)
	if ts := h.turns("main"); len(ts) != 3 {
		t.Fatalf("turns %+v; want the failed one and two for the other chat", ts)
	}
}

// Messages that arrive while a folder waits for a free turn slot
// (max_concurrent) join the turn it is waiting to run.
func TestMessagesWhileWaitingForSlotJoinTheTurn(t *testing.T) {
	release := filepath.Join(t.TempDir(), "release")
	agent := testagent.Script(t, `n=$(grep -c '<message ' ); if [ "$SWITCHBOARD_FOLDER" = f1 ]; then while [ ! -e "$1" ]; do sleep 0.01; done; fi; echo "$n"`, release)
	waiting := make(chan string, 8)
	h := newHarness(t, harnessConfig{agent: agent, groups: []string{"f1", "f2"}, modify: func(o *Options) { o.MaxConcurrent = 1 },
		hooks: testHooks{slotWait: func(folder groups.Folder) {
			select {
			case waiting <- string(folder):
			default:
			}
		}},
		routes: []routing.Route{
			{Match: map[string]string{"chat_jid": "test:f1/*"}, Target: "f1"},
			{Match: map[string]string{"chat_jid": "test:f2/*"}, Target: "f2"},
		}})
	h.post("test:f1/a", "a1", "hold the slot")
	testwait.For(t, 10*time.Second, "f1's turn to start", func() bool {
		id, _ := h.g.active.running("f1")
		return id != ""
	})
	h.post("test:f2/b", "b0", "waiting")
	// f2's worker has loaded its one-message batch and waits for the slot.
	select {
	case f := <-waiting:
		if f != "f2" {
			t.Fatalf("%s waited for a slot; want f2", f)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("f2's worker never waited for the turn slot")
	}
	for i := 1; i < 5; i++ {
		h.post("test:f2/b", fmt.Sprint("b", i), "waiting")
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := h.waitSent("test:f2/b", 1)[0].Text; got != "5" {
		t.Fatalf("f2's turn had %s messages; want all 5 that arrived while it waited for the slot", got)
	}
}

// The bot's own message echoed back by the platform is stored but never
// triggers a turn, not even as a mention on a trigger route.
func TestBotEchoStoredWithoutTurn(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	ctx := context.Background()
	if _, err := h.g.Deliver(ctx, adapters.Inbound{Chat: testChat, ID: "echo1", Sender: "test:user/bot",
		Text: "my own reply", Verb: adapters.VerbMention, FromBot: true}); err != nil {
		t.Fatal(err)
	}
	m, err := h.st.MessageByID(ctx, testChat, "echo1")
	if err != nil || !m.FromBot {
		t.Fatalf("echo stored as %+v, %v; want a bot message", m, err)
	}
	if p := h.pending(); len(p) != 0 {
		t.Fatalf("the echo queued a turn for %v", p)
	}
	if h.g.intake.unroutedCount() != 0 {
		t.Errorf("the echo was counted as unrouted")
	}
	// The next user message runs alone: the echo is not part of its batch.
	h.post(testChat, "m1", "hello")
	h.waitSent(testChat, 1)
	if ps := rec.prompts(t); len(ps) != 1 || strings.Contains(ps[0], "echo1") {
		t.Fatalf("prompts %q; want one turn without the echo", ps)
	}
}

// A message in a thread or forum topic is answered in that topic: the turn
// sees the topic (env and prompt) and its reply carries it.
func TestReplyGoesToTheTopic(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv})
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: testChat, ID: "t1", Sender: "test:user/ann",
		Text: "in the thread", Topic: "thread-9", Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
	sent := h.waitSent(testChat, 1)
	if sent[0].Topic != "thread-9" || sent[0].ReplyTo != "t1" {
		t.Fatalf("reply sent with topic %q reply_to %q; want thread-9, t1", sent[0].Topic, sent[0].ReplyTo)
	}
	if got := rec.env(t, 1)["SWITCHBOARD_TOPIC"]; got != "thread-9" {
		t.Errorf("SWITCHBOARD_TOPIC = %q", got)
	}
	if p := rec.prompts(t)[0]; !strings.Contains(p, `<turn folder="main" tier="1" chat="`+testChat+`" topic="thread-9"`) {
		t.Errorf("prompt header lacks the topic:\n%s", p)
	}
}

// A mention engages the folder too: with a mention-only trigger route and an
// observe route behind it, follow-ups in that chat/topic trigger even when
// the bot said nothing (output: none).
func TestMentionEngagesFolder(t *testing.T) {
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv, modify: func(o *Options) { o.Agent.Output = "none" },
		routes: []routing.Route{
			{Match: map[string]string{"platform": "test", "verb": "mention"}, Target: "main"},
			{Match: map[string]string{"platform": "test"}, Target: "main", Mode: routing.Observe},
		}})
	deliver := func(id, topic string, verb adapters.Verb) {
		t.Helper()
		if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: testChat, ID: adapters.MessageID(id), Sender: "test:user/ann",
			Text: id, Topic: topic, Verb: verb}); err != nil {
			t.Fatal(err)
		}
	}
	deliver("other", "t2", adapters.VerbMessage) // not engaged: observed only
	if p := h.pending(); len(p) != 0 {
		t.Fatalf("a plain message on an observe route queued a turn: %v", p)
	}
	deliver("m1", "t1", adapters.VerbMention)
	testwait.Count(t, 10*time.Second, "turns (the mention's)", 1, func() int { return len(rec.prompts(t)) })
	deliver("f1", "t1", adapters.VerbMessage)
	testwait.Count(t, 10*time.Second, "turns (with the follow-up's)", 2, func() int { return len(rec.prompts(t)) })
	if p := rec.prompts(t)[1]; !strings.Contains(p, `id="f1"`) || !strings.Contains(p, `trigger="message"`) {
		t.Fatalf("second turn:\n%s", p)
	}
}

// A chat routed for mentions only: a follow-up without a mention matches no
// route, yet while the bot is engaged there (engage_ttl) it reaches the
// chat's owner; another topic, or the same one after engage_ttl, stays
// unrouted.
func TestEngagedFollowUpOnMentionOnlyRoute(t *testing.T) {
	clk := newFakeClock()
	rec := newRecorder(t, "")
	h := newHarness(t, harnessConfig{agent: rec.argv, modify: func(o *Options) { o.Agent.Output = "none"; o.Now = clk.Now },
		routes: []routing.Route{
			{Match: map[string]string{"platform": "test", "verb": "mention"}, Target: "main"},
		}})
	deliver := func(id, topic string, verb adapters.Verb) {
		t.Helper()
		if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: testChat, ID: adapters.MessageID(id), Sender: "test:user/ann",
			Text: id, Topic: topic, Verb: verb}); err != nil {
			t.Fatal(err)
		}
	}
	deliver("m1", "t1", adapters.VerbMention)
	testwait.Count(t, 10*time.Second, "turns (the mention's)", 1, func() int { return len(rec.prompts(t)) })
	deliver("f1", "t1", adapters.VerbMessage)
	testwait.Count(t, 10*time.Second, "turns (with the follow-up's)", 2, func() int { return len(rec.prompts(t)) })
	if p := rec.prompts(t)[1]; !strings.Contains(p, `id="f1"`) || !strings.Contains(p, `trigger="message"`) {
		t.Fatalf("second turn:\n%s", p)
	}
	testwait.For(t, 10*time.Second, "the follow-up's turn to finish", func() bool { return len(h.pending()) == 0 })
	unrouted := h.g.intake.unroutedCount()
	deliver("other", "t2", adapters.VerbMessage) // not engaged in t2
	clk.Advance(h.opt.EngageTTL + time.Second)
	deliver("late", "t1", adapters.VerbMessage) // the engagement is over
	if p := h.pending(); len(p) != 0 {
		t.Errorf("unengaged plain messages queued turns: %v", p)
	}
	if n := h.g.intake.unroutedCount() - unrouted; n != 2 {
		t.Errorf("%d more unrouted messages, want 2", n)
	}
}

// A failing scheduled turn tells its chat too (CONTRACT §8: the chat gets a
// notice), although the turn answers no message of the chat.
func TestFailedTaskTurnNotifiesChat(t *testing.T) {
	agent := testagent.Script(t, `cat >/dev/null; echo boom >&2; exit 3`)
	h := newHarness(t, harnessConfig{agent: agent})
	if _, err := h.st.Enqueue(context.Background(), store.WorkItem{Folder: "main", ChatJID: testChat, Mode: "trigger",
		Trigger: store.TriggerTask, Prompt: "nightly report", TaskID: 7}); err != nil {
		t.Fatal(err)
	}
	h.g.workers.kick("main")
	sent := h.waitSent(testChat, 2)
	if !strings.Contains(sent[0].Text, "the agent failed with exit status 3") || !strings.Contains(sent[1].Text, "after 3 attempts") {
		t.Errorf("notices %q, %q; want a retry notice and a final one", sent[0].Text, sent[1].Text)
	}
}

// An agent program that is gone when the turn runs (uninstalled after
// start-up): the chat hears that the agent could not start, never that it
// crashed; the turn's recorded error keeps the detail.
func TestAgentProgramGone(t *testing.T) {
	t.Parallel()
	program := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(program, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessConfig{agent: []string{program}, noStart: true})
	if err := os.Remove(program); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.post(testChat, "m1", "hello")
	sent := h.waitSent(testChat, 1)
	if want := "Sorry, something went wrong (the agent could not start). Retrying."; sent[0].Text != want {
		t.Errorf("notice %q; want %q", sent[0].Text, want)
	}
	testwait.For(t, 10*time.Second, "the failed turn recorded", func() bool { return len(h.turns("main")) >= 1 })
	if tr := h.turns("main")[0]; !strings.Contains(tr.Error, "no such file or directory") || !strings.Contains(tr.Error, program) {
		t.Errorf("recorded error %q; want the detail (the program and why it did not start)", tr.Error)
	}
}
