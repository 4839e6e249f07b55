package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// cleanupAdapter is a platform as the start-up cleanup sees it: it can
// edit, and delete or end a live reply when told to; it records what it
// was asked, and refuses the first calls as a platform still connecting.
type cleanupAdapter struct {
	*fakeAdapter
	deleter, ender bool
	notYet         int // the first calls fail as transient

	cmu   sync.Mutex
	calls []string
}

func (a *cleanupAdapter) called(s string) error {
	a.cmu.Lock()
	defer a.cmu.Unlock()
	if a.notYet > 0 {
		a.notYet--
		return errors.New("not connected yet")
	}
	a.calls = append(a.calls, s)
	return nil
}

func (a *cleanupAdapter) log() []string {
	a.cmu.Lock()
	defer a.cmu.Unlock()
	return slices.Clone(a.calls)
}

func (a *cleanupAdapter) Edit(ctx context.Context, m adapters.MessageRef, text string) error {
	return a.called("edit " + string(m.ID) + "=" + text)
}

func (a *cleanupAdapter) SendButtons(ctx context.Context, m adapters.Outbound, b []adapters.Button) (adapters.MessageID, error) {
	return "", a.called("send buttons")
}

func (a *cleanupAdapter) EditButtons(ctx context.Context, m adapters.MessageRef, text string, b []adapters.Button) error {
	return a.called(fmt.Sprintf("buttons %s=%s/%d", m.ID, text, len(b)))
}

func (a *cleanupAdapter) Delete(ctx context.Context, m adapters.MessageRef) error {
	if !a.deleter {
		return adapters.Unsupported(a.name, "delete")
	}
	return a.called("delete " + string(m.ID))
}

func (a *cleanupAdapter) EndLive(ctx context.Context, m adapters.MessageRef, mode adapters.LiveMode) error {
	if !a.ender {
		return nil
	}
	return a.called("end " + string(m.ID) + " " + string(mode))
}

// A live reply a killed gateway left showing is cleaned up at the next
// start, by what the platform can do: deleted, else edited to the
// interrupted marker; a stream is ended first; a draft is left to vanish.
// Cleaned up, it is no longer recorded; a platform still connecting is
// tried again.
func TestLiveLeftoversCleanedAtStart(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mode           adapters.LiveMode
		deleter, ender bool
		want           []string
	}{
		{"edit, deleter", adapters.LiveEdit, true, false, []string{"delete m7"}},
		{"edit, no deleter", adapters.LiveEdit, false, false, []string{"edit m7=" + liveInterrupted}},
		{"edit with buttons, no deleter", adapters.LiveEditButtons, false, false, []string{"buttons m7=" + liveInterrupted + "/0"}},
		{"stream", adapters.LiveStream, true, true, []string{"end m7 stream", "delete m7"}},
		{"draft", adapters.LiveDraft, true, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca := &cleanupAdapter{fakeAdapter: newFakeAdapter("test"), deleter: tc.deleter, ender: tc.ender, notYet: 2}
			h := newHarness(t, harnessConfig{agent: []string{"true"}, noStart: true, modify: func(o *Options) {
				o.Adapters = []adapters.Adapter{ca}
			}})
			h.fa = ca.fakeAdapter
			ctx := context.Background()
			if err := h.st.SaveLiveShown(ctx, store.LiveShown{TurnID: "t-1", Chat: testChat, ID: "m7", Mode: tc.mode}); err != nil {
				t.Fatal(err)
			}
			h.start()
			testwait.For(t, 10*time.Second, "the leftover forgotten", func() bool {
				left, err := h.st.LiveLeftovers(ctx)
				return err == nil && len(left) == 0
			})
			if got := ca.log(); !slices.Equal(got, tc.want) {
				t.Errorf("the platform was asked %q; want %q", got, tc.want)
			}
		})
	}
}

// While a turn streams in edit mode, where its live reply shows is
// recorded; once the final is its last edit, it no longer is.
func TestLiveReplyRecordedWhileShown(t *testing.T) {
	la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
	argv, gate := streamAgent(t, toolFixture, 19, 0)
	h := liveHarness(t, la, argv, Stream{Mode: StreamEdit, Interval: 10 * time.Millisecond})
	h.post(testChat, "m1", "@bot run it")
	sent := h.waitSent(testChat, 1)
	ctx := context.Background()
	testwait.For(t, 10*time.Second, "the live message recorded", func() bool {
		left, err := h.st.LiveLeftovers(ctx)
		return err == nil && len(left) == 1 && left[0].ID == sent[0].ID && left[0].Mode == adapters.LiveEdit && left[0].Chat == testChat
	})
	openGate(t, gate)
	testwait.For(t, 20*time.Second, "the final edit", func() bool {
		_, _, e, _, _ := la.snapshot()
		return len(e) > 0 && e[len(e)-1] == string(sent[0].ID)+"="+toolReply
	})
	testwait.For(t, 10*time.Second, "the record dropped", func() bool {
		left, err := h.st.LiveLeftovers(ctx)
		return err == nil && len(left) == 0
	})
}

// A live reply whose turn ends without its final is finished with the
// text so far and the reason's marker; a stopped turn (/stop, issue 32)
// passes liveEndStopped and the chat reads "… (stopped)".
func TestLiveSettleMarkers(t *testing.T) {
	for _, tc := range []struct {
		why  liveEnd
		want string
	}{
		{liveEndStopped, "Half a sent … (stopped)"},
		{liveEndFailed, "Half a sent … (failed)"},
		{liveEndTimedOut, "Half a sent … (timed out)"},
	} {
		la := &liveAdapter{fakeAdapter: newFakeAdapter("test"), native: true}
		lr, err := la.StartLive(context.Background(), adapters.Outbound{Chat: testChat}, "t-1")
		if err != nil {
			t.Fatal(err)
		}
		l := &liveTurn{lr: lr, out: adapters.Outbound{Chat: testChat}, text: []byte("Half a sent"), shown: true, log: slog.New(slog.DiscardHandler)}
		l.settle(context.Background(), tc.why)
		if _, f, _, _, _ := la.snapshot(); !slices.Equal(f, []string{tc.want}) {
			t.Errorf("%s: the live reply ended as %q; want %q", tc.why, f, tc.want)
		}
	}
}
