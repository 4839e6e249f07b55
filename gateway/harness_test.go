package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/agent"
	"switchboard/groups"
	"switchboard/internal/testwait"
	"switchboard/routing"
	"switchboard/store"
)

// fakeAdapter is a platform that records what the gateway sends. fail, when
// set, decides the outcome of each Send attempt (attempt counts from 1 per
// outbox key); a nil error means the message was posted.
type fakeAdapter struct {
	name    string
	ready   chan struct{}
	stopped chan struct{} // closed when Run returns (intake stopped)

	mu       sync.Mutex
	deliver  adapters.DeliverFunc // the host's Deliver
	sent     []sentMsg
	tries    []sentMsg // every Send call, successful or not
	attempts map[string]int
	fail     func(m adapters.Outbound, attempt int) error
	ids      atomic.Int64
}

type sentMsg struct {
	adapters.Outbound
	At time.Time
	ID adapters.MessageID
}

func newFakeAdapter(name string) *fakeAdapter {
	return &fakeAdapter{name: name, ready: make(chan struct{}), stopped: make(chan struct{}), attempts: map[string]int{}}
}

func (f *fakeAdapter) Name() string { return f.name }

func (f *fakeAdapter) Run(ctx context.Context, host adapters.Host) error {
	deliver := host.Deliver
	f.mu.Lock()
	f.deliver = deliver
	f.mu.Unlock()
	close(f.ready)
	<-ctx.Done()
	close(f.stopped)
	return nil
}

func (f *fakeAdapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.attempts[m.Key]++
	f.tries = append(f.tries, sentMsg{Outbound: m, At: time.Now()})
	if f.fail != nil {
		if err := f.fail(m, f.attempts[m.Key]); err != nil {
			return "", err
		}
	}
	id := adapters.MessageID(fmt.Sprintf("out-%d", f.ids.Add(1)))
	f.sent = append(f.sent, sentMsg{Outbound: m, At: time.Now(), ID: id})
	return id, nil
}

func (f *fakeAdapter) setFail(fn func(m adapters.Outbound, attempt int) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fn
}

// sentTo returns what was posted to chat, in order.
func (f *fakeAdapter) sentTo(chat string) []sentMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sentMsg
	for _, s := range f.sent {
		if string(s.Chat) == chat {
			out = append(out, s)
		}
	}
	return out
}

// triesOf returns the Send calls for an outbox key.
func (f *fakeAdapter) triesOf(key string) []sentMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sentMsg
	for _, s := range f.tries {
		if s.Key == key {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeAdapter) attemptsOf(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[key]
}

// harness is a gateway running in this process on a real store in a temp
// dir, with a fake "test" platform and real agent subprocesses.
type harness struct {
	t      testing.TB
	opt    Options
	hooks  testHooks
	dir    string
	st     *store.Store
	g      *Gateway
	fa     *fakeAdapter
	cancel context.CancelFunc
	done   chan error
	runErr error
}

type harnessConfig struct {
	agent   []string // argv; required
	routes  []routing.Route
	groups  []string
	modify  func(*Options)
	hooks   testHooks // set on every gateway the harness starts
	noStart bool
}

const testChat = "test:room/1"

// newHarness opens a store, seeds groups (root, main + cfg.groups) and routes
// (default: every "test" chat triggers main), and starts the gateway.
func newHarness(t testing.TB, cfg harnessConfig) *harness {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(dir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, dir: dir, st: st, fa: newFakeAdapter("test")}
	t.Cleanup(func() { h.stop(); st.Close() })
	for _, f := range append([]string{"root", "main"}, cfg.groups...) {
		if _, err := st.EnsureGroup(ctx, groups.Folder(f)); err != nil {
			t.Fatal(err)
		}
	}
	routes := cfg.routes
	if routes == nil {
		routes = []routing.Route{{Match: map[string]string{"platform": "test"}, Target: "main"}}
	}
	for _, r := range routes {
		if _, err := st.AddRoute(ctx, r.Normalize()); err != nil {
			t.Fatal(err)
		}
	}
	opt := Options{
		Store: st, Adapters: []adapters.Adapter{h.fa}, DataDir: dir, Operator: "root", Exe: "switchboard",
		Agent:     agent.Spec{Command: cfg.agent, Output: "text", Timeout: 10 * time.Second},
		EngageTTL: time.Minute, MaxConcurrent: 4, PollInterval: 50 * time.Millisecond,
		RetryDelays: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, DrainTimeout: 10 * time.Second,
	}
	if cfg.modify != nil {
		cfg.modify(&opt)
	}
	h.opt, h.hooks = opt, cfg.hooks
	h.g, err = New(opt)
	if err != nil {
		t.Fatal(err)
	}
	h.g.hooks = cfg.hooks
	if !cfg.noStart {
		h.start()
	}
	return h
}

func (h *harness) start() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.g.Run(ctx) }()
	select {
	case <-h.fa.ready:
	case err := <-h.done:
		h.t.Fatalf("gateway stopped at start: %v", err)
	case <-time.After(10 * time.Second):
		h.t.Fatal("gateway did not start")
	}
}

// restart stops the gateway and starts a new one on the same store, with a
// new fake adapter and the options changed by modify.
func (h *harness) restart(modify func(*Options)) {
	h.t.Helper()
	h.stop()
	h.fa = newFakeAdapter("test")
	opt := h.opt
	opt.Adapters = []adapters.Adapter{h.fa}
	if modify != nil {
		modify(&opt)
	}
	g, err := New(opt)
	if err != nil {
		h.t.Fatal(err)
	}
	g.hooks = h.hooks
	h.g = g
	h.start()
}

// stop cancels Run and waits for it; it is idempotent.
func (h *harness) stop() error {
	if h.cancel == nil {
		return h.runErr
	}
	h.cancel()
	select {
	case h.runErr = <-h.done:
	case <-time.After(60 * time.Second):
		h.t.Error("gateway did not stop")
	}
	h.cancel = nil
	return h.runErr
}

// post delivers a user message (a mention) to chat and returns its seq.
func (h *harness) post(chat, id, text string) int64 {
	h.t.Helper()
	seq, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: adapters.JID(chat), ID: adapters.MessageID(id),
		Sender: "test:user/ann", SenderName: "Ann", Text: text, Verb: adapters.VerbMention})
	if err != nil {
		h.t.Fatal(err)
	}
	return seq
}

// botMessages are the bot's messages stored in chat, oldest first.
func (h *harness) botMessages(chat adapters.JID) []store.Message {
	h.t.Helper()
	ms, err := h.st.MessagesAfter(context.Background(), chat, 0, 100)
	if err != nil {
		h.t.Fatal(err)
	}
	var bots []store.Message
	for _, m := range ms {
		if m.FromBot {
			bots = append(bots, m)
		}
	}
	return bots
}

// waitSent waits until chat received n messages and returns them.
func (h *harness) waitSent(chat string, n int) []sentMsg {
	h.t.Helper()
	testwait.For(h.t, 20*time.Second, fmt.Sprintf("%d messages sent to %s", n, chat), func() bool { return len(h.fa.sentTo(chat)) >= n })
	return h.fa.sentTo(chat)
}

// turns returns folder's turn records, oldest first.
func (h *harness) turns(folder groups.Folder) []store.Turn {
	h.t.Helper()
	ts, err := h.st.Turns(context.Background(), folder, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	slices.Reverse(ts)
	return ts
}

func (h *harness) pending() []groups.Folder {
	h.t.Helper()
	fs, err := h.st.PendingFolders(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return fs
}

// recorder is an agent that writes each prompt and environment to a
// directory, one file per turn, in the order turns ran, and replies
// "reply N" (N counts its runs). Extra shell code runs before the reply.
type recorder struct {
	dir  string
	argv []string
}

func newRecorder(t testing.TB, extra string) *recorder {
	t.Helper()
	dir := t.TempDir()
	script := `out="` + dir + `"
n=$(ls "$out" | grep -c '^prompt-' )
n=$((n+1))
env | grep '^SWITCHBOARD_' | sort > "$out/env-tmp-$$"
cat > "$out/prompt-tmp-$$"
pwd -P > "$out/cwd-$n"
mv "$out/env-tmp-$$" "$out/env-$n"
mv "$out/prompt-tmp-$$" "$out/prompt-$n"
` + extra + `
echo "reply $n"`
	path := filepath.Join(t.TempDir(), "agent.sh")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return &recorder{dir: dir, argv: []string{"/bin/sh", path}}
}

// prompts returns the prompts recorded so far, in turn order.
func (r *recorder) prompts(t testing.TB) []string {
	t.Helper()
	var out []string
	for i := 1; ; i++ {
		b, err := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("prompt-%d", i)))
		if errors.Is(err, os.ErrNotExist) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
}

// env returns the SWITCHBOARD_* environment of turn n (from 1).
func (r *recorder) env(t testing.TB, n int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, fmt.Sprintf("env-%d", n)))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// fakeClock is the gateway's Options.Now in tests that move time on
// instead of sleeping.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Now()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
