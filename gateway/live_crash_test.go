package gateway

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// platformChat is one chat of a platform that outlives the gateways
// talking to it: a crashed gateway and the next one see the same messages.
type platformChat struct {
	mu   sync.Mutex
	n    int
	msgs []platformMsg
}

type platformMsg struct {
	id, text string
	deleted  bool
}

// showing is what the chat shows from the bot, in order.
func (c *platformChat) showing() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if !m.deleted {
			out = append(out, m.text)
		}
	}
	return out
}

// chatAdapter is one gateway's connection to platformChat: it sends,
// edits and deletes messages there (the edit fallback's live replies).
type chatAdapter struct {
	*fakeAdapter
	chat *platformChat
	max  int
}

func (a *chatAdapter) Limits() adapters.Limits { return adapters.Limits{MaxText: a.max} }

func (a *chatAdapter) Send(ctx context.Context, m adapters.Outbound) (adapters.MessageID, error) {
	a.chat.mu.Lock()
	defer a.chat.mu.Unlock()
	a.chat.n++
	id := fmt.Sprintf("p-%d", a.chat.n)
	a.chat.msgs = append(a.chat.msgs, platformMsg{id: id, text: m.Text})
	return adapters.MessageID(id), nil
}

func (a *chatAdapter) find(id adapters.MessageID) *platformMsg {
	for i := range a.chat.msgs {
		if a.chat.msgs[i].id == string(id) && !a.chat.msgs[i].deleted {
			return &a.chat.msgs[i]
		}
	}
	return nil
}

func (a *chatAdapter) Edit(ctx context.Context, ref adapters.MessageRef, text string) error {
	a.chat.mu.Lock()
	defer a.chat.mu.Unlock()
	m := a.find(ref.ID)
	if m == nil {
		return fmt.Errorf("edit %s: %w", ref.ID, adapters.ErrPermanent)
	}
	m.text = text
	return nil
}

func (a *chatAdapter) Delete(ctx context.Context, ref adapters.MessageRef) error {
	a.chat.mu.Lock()
	defer a.chat.mu.Unlock()
	m := a.find(ref.ID)
	if m == nil {
		return fmt.Errorf("delete %s: %w", ref.ID, adapters.ErrPermanent)
	}
	m.deleted = true
	return nil
}

// crashHarness runs a live-streaming gateway on chat and stops it for good
// at step of a final's delivery, as a crash (kill -9) would: the store as
// it was committed then is copied, and that gateway never goes on (it is
// let go when the test ends). restart starts the next gateway on the copy.
type crashHarness struct {
	t       *testing.T
	h       *harness
	chat    *platformChat
	snap    string
	crashed chan struct{}
	max     int
}

func newCrashHarness(t *testing.T, argv []string, max int, step liveStep) *crashHarness {
	c := &crashHarness{t: t, chat: &platformChat{}, snap: filepath.Join(t.TempDir(), "crashed.db"), crashed: make(chan struct{}), max: max}
	ca := &chatAdapter{fakeAdapter: newFakeAdapter("test"), chat: c.chat, max: max}
	c.h = newHarness(t, harnessConfig{agent: argv, noStart: true, modify: func(o *Options) {
		o.Agent.Output = "claude-stream"
		o.Adapters = []adapters.Adapter{ca}
		o.Streams = map[string]Stream{"test": {Mode: StreamEdit, Interval: 10 * time.Millisecond}}
		o.DrainTimeout = time.Second // the crashed turn, still running, is let go
	}})
	c.h.fa = ca.fakeAdapter
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the harness stops
	var once sync.Once
	c.h.g.live.crashAt = func(s liveStep) {
		if s != step {
			return
		}
		once.Do(func() {
			c.crashNow()
			<-release
		})
	}
	c.h.start()
	return c
}

// crashNow copies the store as a crash now would leave it; the test keeps
// the gateway from doing anything more in the chat.
func (c *crashHarness) crashNow() {
	if err := c.h.st.Backup(context.Background(), c.snap); err != nil {
		c.t.Error(err)
	}
	close(c.crashed)
}

// restart starts a gateway on the store the crash left, connected to the
// same chat, and returns that store.
func (c *crashHarness) restart(argv ...string) *store.Store {
	t := c.t
	select {
	case <-c.crashed:
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway never reached the crash point")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, c.snap)
	if err != nil {
		t.Fatal(err)
	}
	ca := &chatAdapter{fakeAdapter: newFakeAdapter("test"), chat: c.chat, max: c.max}
	opt := c.h.opt
	opt.Store, opt.Adapters, opt.DataDir = st, []adapters.Adapter{ca}, t.TempDir()
	if argv != nil {
		opt.Agent.Command = argv
	}
	g, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		st.Close()
	})
	return st
}

// waitReply waits until the reply row of the chat is settled and its live
// records are gone, and returns the row.
func waitReply(t *testing.T, st *store.Store) store.OutboxItem {
	t.Helper()
	var reply store.OutboxItem
	testwait.For(t, 20*time.Second, "the reply settled", func() bool {
		items, err := st.Outbox(context.Background(), testChat, 10)
		if err != nil {
			return false
		}
		for _, it := range items {
			if it.Kind == store.OutboxReply && (it.Status == store.OutboxSent || it.Status == store.OutboxFailed) {
				reply = it
				left, err := st.LiveOf(context.Background(), strings.TrimSuffix(it.Key, "/reply"))
				return err == nil && len(left) == 0
			}
		}
		return false
	})
	return reply
}

// A gateway killed at any step of delivering a final through its live
// reply (live_resume.go lists them): after the next start the chat shows
// the final once and nothing else of the bot's, and the reply is recorded
// delivered (no delivery-failed notice for the agent's next prompt).
func TestLiveFinalOnceWhereverTheCrash(t *testing.T) {
	for _, step := range []liveStep{liveStepQueued, liveStepClaimed, liveStepFinished, liveStepSent} {
		t.Run(string(step), func(t *testing.T) {
			t.Parallel()
			argv, gate := streamAgent(t, toolFixture, 19, 0)
			c := newCrashHarness(t, argv, 0, step)
			c.h.post(testChat, "m1", "@bot run it")
			testwait.For(t, 20*time.Second, "the live reply recorded", func() bool {
				left, err := c.h.st.LiveLeftovers(context.Background())
				return err == nil && len(left) == 1
			})
			openGate(t, gate)
			st := c.restart()
			reply := waitReply(t, st)
			if reply.Status != store.OutboxSent {
				t.Errorf("the reply is %s (%s); want it delivered", reply.Status, reply.Error)
			}
			if got := c.chat.showing(); !slices.Equal(got, []string{toolReply}) {
				t.Errorf("the chat shows %q; want the final %q once", got, toolReply)
			}
		})
	}
}

// A gateway killed mid-turn after its live reply finished parts of a long
// reply as messages of their own: the turn runs again, and its reply does
// not repeat them. A run again that writes the same reply adds only the
// parts after them; one that writes a different reply leaves them as they
// are and its reply follows them, from its first part that differs. The
// half-written message the crash left is removed either way.
func TestLiveRunAgainSkipsPartsDelivered(t *testing.T) {
	const max = 200
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "Line %03d of the long answer.\n", i)
	}
	reply := strings.TrimSpace(b.String())
	parts := adapters.SplitRendered(reply, max, nil)
	var d strings.Builder
	d.WriteString(parts[0])
	for i := range 20 {
		fmt.Fprintf(&d, "\nAnother line %03d, said otherwise.", i)
	}
	other := d.String()
	if o := adapters.SplitRendered(other, max, nil); o[0] != parts[0] || o[1] == parts[1] {
		t.Fatalf("the other reply's parts %q do not begin as the reply's and then differ", o[:2])
	}
	for _, tc := range []struct {
		name  string
		again string // the reply of the run again
	}{{"same reply", reply}, {"other reply", other}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argv, _ := longStreamAgent(t, reply) // its gate never opens: the crash comes first
			c := newCrashHarness(t, argv, max, "")
			c.h.post(testChat, "m1", "@bot tell me everything")
			// The agent streams all but its last 16 lines, then waits: the
			// crash comes once the live reply shows all of that, its
			// settled parts finished as messages of their own.
			lines := strings.SplitAfter(reply, "\n")
			head, _ := adapters.LiveParts(strings.TrimSpace(strings.Join(lines[:len(lines)-16], "")), adapters.Limits{MaxText: max})
			var delivered []string
			testwait.For(t, 20*time.Second, "parts finished mid-turn and the reply going on", func() bool {
				left, err := c.h.st.LiveLeftovers(context.Background())
				delivered = nil
				showing := false
				for _, l := range left {
					if l.State == store.LivePart {
						delivered = append(delivered, l.Text)
					}
					showing = showing || l.State == store.LiveShowing
				}
				chat := c.chat.showing()
				return err == nil && len(delivered) == len(head)-1 && showing && len(chat) == len(head) && chat[len(chat)-1] == head[len(head)-1]
			})
			c.crashNow()
			again, gate := longStreamAgent(t, tc.again)
			openGate(t, gate)
			st := c.restart(again...)
			if r := waitReply(t, st); r.Status != store.OutboxSent {
				t.Fatalf("the reply is %s (%s); want it delivered", r.Status, r.Error)
			}
			want := slices.Clone(delivered)
			if tc.again == reply {
				want = append(want, parts[len(delivered):]...)
			} else {
				want = append(want, adapters.SplitRendered(other, max, nil)[1:]...)
			}
			if got := c.chat.showing(); !slices.Equal(got, want) {
				t.Errorf("the chat shows %d messages:\n%q\nwant %d:\n%q", len(got), got, len(want), want)
			}
		})
	}
}
