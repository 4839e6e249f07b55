package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testwait"
)

// TestE2ETelegramKilledMidBatch: the fake Telegram hands the gateway a
// batch of 120 updates, and the gateway is killed (SIGKILL) while it is
// storing them and the first turns run. The offset is committed only
// after an update is stored (CONTRACT §13), so after the restart the rest
// come again: every message is stored once, and every one is answered by
// exactly one reply, except one whose reply a crash cut short while it was
// handed to Telegram (at most once: failed, never resent).
func TestE2ETelegramKilledMidBatch(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t)
	const chat = "telegram:user/7" // a private chat: paced one message a second, not one per 3 s
	dir := newE2E(t, e2eConfig{agent: ackAgent,
		adapters: "  telegram: {enabled: true, token: \"" + telegramtest.Token + "\", api_url: \"" + tg.URL() + "\"}\n",
		routes:   "  - {match: {chat_jid: \"" + chat + "\"}, target: main}\n"})
	const total = 120
	ids := map[string]bool{}
	for k := range total {
		msg, id := tg.UserMessage(telegramtest.UserID, "question "+strconv.Itoa(k), true, 0, 0)
		tg.Push("message", msg)
		ids[strconv.Itoa(id)] = true
	}
	g := startGW(t, dir)
	st := openStore(t, dir)
	stored := func() []string {
		ms, err := st.MessagesAfter(context.Background(), adapters.JID(chat), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			if !m.FromBot {
				out = append(out, string(m.ID))
			}
		}
		return out
	}
	testwait.For(t, 20*time.Second, "part of the batch stored", func() bool { return len(stored()) >= 20 })
	g.kill()
	t.Logf("killed with %d of %d stored", len(stored()), total)

	g = startGW(t, dir)
	answers := func() map[string]int {
		n := map[string]int{}
		for _, m := range tg.Messages(telegramtest.UserID) {
			if rest, ok := strings.CutPrefix(m.Text, "ack "); m.FromBot && ok {
				for _, id := range strings.Fields(rest) {
					n[id]++
				}
			}
		}
		return n
	}
	lost := func() map[string]bool {
		out := map[string]bool{}
		items, err := st.Outbox(context.Background(), adapters.JID(chat), 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Status == "failed" {
				for _, id := range strings.Fields(strings.TrimPrefix(it.Text, "ack ")) {
					out[id] = true
				}
			}
		}
		return out
	}
	testwait.For(t, 60*time.Second, "every message answered or its reply failed", func() bool {
		a, l := answers(), lost()
		for id := range ids {
			if a[id] == 0 && !l[id] {
				return false
			}
		}
		return true
	})
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, id := range stored() {
		seen[id]++
	}
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("message %s stored %d times", id, seen[id])
		}
	}
	for id, n := range answers() {
		if n > 1 {
			t.Errorf("message %s answered %d times", id, n)
		}
	}
	if l := lost(); len(l) > 0 {
		t.Logf("%d messages whose reply a crash cut short mid-delivery", len(l))
	}
}
