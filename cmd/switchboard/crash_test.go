package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
)

// The crash test's agent takes 30 ms and answers "ack" followed by the ids of
// the messages of its batch, so every reply says which messages it answers.
const ackAgent = `sleep 0.03
echo "ack $(grep -o '<message seq="[0-9]*" id="[^"]*"' "$out/prompt-$n" | sed 's/.*id="//; s/"$//' | tr '\n' ' ')"`

const (
	crashRooms    = 8
	crashMessages = 1000
)

func crashRoom(k int) string { return fmt.Sprintf("r%d", k%crashRooms) }

// TestE2ECrashRecovery kills the gateway with SIGKILL at random points while
// 1,000 messages are posted concurrently to 8 rooms (4 folders) and turns
// run, restarts it each time, and then checks CONTRACT §8's promises: every
// message that got a 202 is stored exactly once, every chat gets its turn
// after the restart, every stored message is answered by exactly one reply
// (a web chat reply shows only once stored, so one a crash cut short is
// sent after the restart, and never twice), and no reply is delivered twice.
func TestE2ECrashRecovery(t *testing.T) {
	t.Parallel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>7))

	var routes strings.Builder
	var groups []string
	for f := range 4 {
		groups = append(groups, fmt.Sprintf("f%d", f))
	}
	for r := range crashRooms {
		fmt.Fprintf(&routes, "  - {match: {platform: web, room: r%d}, target: f%d}\n", r, r%4)
	}
	dir := newE2E(t, e2eConfig{agent: ackAgent, groups: groups, routes: routes.String()})

	g, acked := crashPhases(t, rng, dir, crashMessages, 3)
	if len(acked) != crashMessages {
		t.Fatalf("%d of %d messages acknowledged after the last, uninterrupted phase", len(acked), crashMessages)
	}
	// One more message per room after the last restart: its batch belongs to
	// an uninterrupted run, so its reply is delivered; and a chat's batches
	// run in order, so once it is answered the room has no work left. (That
	// the room's last message is the bot's is not enough: a batch holds at
	// most 100 messages, and the reply to an earlier one can come last.)
	closers := map[string]string{}
	for r := range crashRooms {
		room := fmt.Sprintf("r%d", r)
		closers[room] = g.mustPost(room, "closer", "last one")
	}
	testwait.For(t, 60*time.Second, "every room's closing message answered", func() bool {
		for room, id := range closers {
			answered := false
			for _, m := range g.botMessages(room) {
				answered = answered || slices.Contains(strings.Fields(m.Text), id)
			}
			if !answered {
				return false
			}
		}
		return true
	})

	// Through the API: every acknowledged message stored once; no message
	// answered by two delivered replies.
	answered := map[string]int{}
	stored := map[string]int{}
	for r := range crashRooms {
		for _, m := range g.messages(fmt.Sprintf("r%d", r)) {
			if !m.FromBot {
				stored[m.ID]++
				continue
			}
			ids, ok := strings.CutPrefix(m.Text, "ack ")
			if !ok {
				t.Errorf("bot message %q is not an agent reply", m.Text)
				continue
			}
			for _, id := range strings.Fields(ids) {
				answered[id]++
			}
		}
	}
	for k := range acked {
		if id := fmt.Sprintf("w-c%d", k); stored[id] != 1 {
			t.Errorf("acknowledged message %s stored %d times", id, stored[id])
		}
	}
	for id, n := range answered {
		if n > 1 {
			t.Errorf("message %s answered by %d delivered replies", id, n)
		}
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatalf("final stop: %v", err)
	}

	// Through the store: every stored message consumed by exactly one turn
	// whose reply was delivered or, if a crash cut its delivery, failed and
	// not resent; nothing left pending.
	st := openStore(t, dir)
	ctx := context.Background()
	if p, err := st.PendingFolders(ctx); err != nil || len(p) != 0 {
		t.Fatalf("work pending after the final stop: %v %v", p, err)
	}
	inReplies := map[string]int{}
	failed := 0
	for r := range crashRooms {
		items, err := st.Outbox(ctx, adapters.JID("web:"+fmt.Sprintf("r%d", r)), 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			switch it.Status {
			case "sent":
			case "failed":
				failed++
				t.Errorf("outbox item %s failed: %s (a web reply is sent again after a crash)", it.Key, it.Error)
			default:
				t.Errorf("outbox item %s still %s", it.Key, it.Status)
			}
			for _, id := range strings.Fields(strings.TrimPrefix(it.Text, "ack ")) {
				inReplies[id]++
			}
		}
	}
	for id := range stored {
		if inReplies[id] != 1 {
			t.Errorf("message %s is in %d replies; want exactly 1", id, inReplies[id])
		}
	}
	t.Logf("%d messages stored, %d replies failed", len(stored), failed)
}

// postConcurrently posts messages ks from 8 clients and returns those that
// got a 202. With killAt > 0 the gateway gets SIGKILL right after the
// killAt-th 202; the posts after it fail.
func postConcurrently(t *testing.T, g *gw, ks []int, killAt int) []int {
	var (
		mu     sync.Mutex
		acked  []int
		next   atomic.Int64
		count  atomic.Int64
		wg     sync.WaitGroup
		killed atomic.Bool
	)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ks) || killed.Load() {
					return
				}
				k := ks[i]
				status, _, err := g.post(context.Background(), crashRoom(k), fmt.Sprintf("user%d", k%5), fmt.Sprintf("message %d", k), fmt.Sprintf("c%d", k))
				if err != nil || status != http.StatusAccepted {
					if g.alive() && err == nil {
						t.Errorf("post %d: status %d", k, status)
					}
					continue
				}
				mu.Lock()
				acked = append(acked, k)
				mu.Unlock()
				if killAt > 0 && int(count.Add(1)) == killAt {
					killed.Store(true)
					g.kill()
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(acked)
	return acked
}

// crashPhases posts messages 0..total-1 concurrently to the gateway of
// dir (postConcurrently), SIGKILLing it after a random number of
// acknowledgements in each of the first kills phases and restarting it,
// then posts what is left once more, uninterrupted. It returns the last
// gateway, running, and the messages acknowledged (202) in any phase.
func crashPhases(t *testing.T, rng *rand.Rand, dir string, total, kills int) (*gw, map[int]bool) {
	t.Helper()
	acked := map[int]bool{}
	remaining := make([]int, total)
	for i := range remaining {
		remaining[i] = i
	}
	for phase := 0; ; phase++ {
		g := startGW(t, dir)
		killAt := 0
		if phase < kills {
			killAt = 1 + rng.IntN(max(1, len(remaining)/2))
		}
		got := postConcurrently(t, g, remaining, killAt)
		for _, k := range got {
			acked[k] = true
		}
		var left []int
		for _, k := range remaining {
			if !acked[k] {
				left = append(left, k)
			}
		}
		t.Logf("phase %d: kill after %d acks; %d acked, %d left", phase, killAt, len(got), len(left))
		remaining = left
		if phase >= kills {
			return g, acked
		}
		if killAt > 0 {
			testwait.For(t, 10*time.Second, "the killed gateway to exit", func() bool { return !g.alive() })
		}
	}
}
