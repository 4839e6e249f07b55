package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/telegram"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/routing"
)

// longStreamAgent streams reply in deltas of a few lines each, waits for
// the gate file before the last few, and ends with reply as its result.
func longStreamAgent(t *testing.T, reply string) (argv []string, gate string) {
	t.Helper()
	dir := t.TempDir()
	var head, tail strings.Builder
	lines := strings.SplitAfter(reply, "\n")
	for i := 0; i < len(lines); i += 8 {
		ev, _ := json.Marshal(map[string]any{"type": "stream_event", "session_id": "s-long",
			"event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": strings.Join(lines[i:min(i+8, len(lines))], "")}}})
		w := &head
		if i >= len(lines)-16 {
			w = &tail
		}
		fmt.Fprintf(w, "%s\n", ev)
	}
	res, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": reply, "session_id": "s-long"})
	fmt.Fprintf(&tail, "%s\n", res)
	for name, body := range map[string]string{"head": head.String(), "tail": tail.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gate = filepath.Join(dir, "go")
	return testagent.Script(t, fmt.Sprintf(`cat >/dev/null
while read -r l; do printf '%%s\n' "$l"; sleep 0.02; done < %q
while [ ! -e %q ]; do sleep 0.01; done
cat %q`, filepath.Join(dir, "head"), gate, filepath.Join(dir, "tail"))), gate
}

// A reply three times Telegram's length limit, streamed into a group (a
// live reply edited in place): once the text passes the limit, the part
// that fits becomes a message of its own and the reply goes on in a new
// message while the turn still runs; at the end the chat holds the reply
// whole, in order, each part once, as a final of that text is split, and
// the store holds each part once.
func TestLiveReplyContinuesPastTheLimitTelegram(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 3*4096; i++ {
		fmt.Fprintf(&b, "Line %03d of the long answer, with a few more words to fill it.\n", i)
	}
	reply := strings.TrimSpace(b.String())
	argv, gate := longStreamAgent(t, reply)
	fake := telegramtest.New(t)
	tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
		PerChat: 10 * time.Millisecond, PerGroup: 10 * time.Millisecond, Global: -1})
	chat := adapters.JID("telegram:group/1001234")
	h := newHarness(t, harnessConfig{agent: argv, routes: []routing.Route{{Match: map[string]string{"platform": "telegram"}, Target: "main"}},
		modify: func(o *Options) {
			o.Agent.Output = "claude-stream"
			o.Adapters = append(o.Adapters, tg)
			o.Streams = map[string]Stream{"telegram": {Mode: StreamNative, Interval: 20 * time.Millisecond}}
		}})
	parts := adapters.SplitRendered(reply, tg.Limits().MaxText, tg.Limits().Measure)
	if len(parts) < 3 {
		t.Fatalf("the reply makes %d parts; want 3 or more", len(parts))
	}
	msg, _ := fake.UserMessage(telegramtest.GroupID, "tell me everything", true, 0, 0)
	fake.Push("message", msg)
	showing := func() []telegramtest.Msg {
		var out []telegramtest.Msg
		for _, m := range fake.Messages(telegramtest.GroupID) {
			if m.FromBot && !m.Deleted {
				out = append(out, m)
			}
		}
		return out
	}
	testwait.For(t, 30*time.Second, "the first part finished and the reply going on in a second message, mid-turn", func() bool {
		s := showing()
		return len(s) >= 2 && s[0].Text == parts[0] && s[1].Text != ""
	})
	openGate(t, gate)
	testwait.For(t, 30*time.Second, "the whole reply", func() bool {
		s := showing()
		return len(s) == len(parts) && s[len(s)-1].Text == parts[len(parts)-1]
	})
	h.stop()
	s := showing()
	for i, p := range parts {
		if i >= len(s) || s[i].Text != p {
			t.Errorf("message %d of %d does not read as part %d of the reply", i+1, len(s), i+1)
		}
	}
	if len(s) != len(parts) {
		t.Errorf("the chat shows %d messages from the bot; want the %d parts, each once", len(s), len(parts))
	}
	bots := h.botMessages(chat)
	if len(bots) != len(parts) {
		t.Fatalf("stored %d bot messages; want the %d parts, each once", len(bots), len(parts))
	}
	for i, m := range bots {
		if m.Text != parts[i] || i < len(s) && m.ID != adapters.MessageID(fmt.Sprint(s[i].ID)) {
			t.Errorf("stored part %d: %q under %s; want part %d under the id of message %d", i+1, m.Text[:min(len(m.Text), 40)], m.ID, i+1, i+1)
		}
	}
}

// The gateway paces a live reply, not the platform: with the agent writing
// a delta every few milliseconds, the real Telegram adapter (a group: one
// message edited in place, its own pacing off) gets at most one request
// per stream interval, and the final still reads the whole reply.
func TestLiveReplyAtMostOneUpdatePerIntervalTelegram(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "word%d\n", i)
	}
	reply := strings.TrimSpace(b.String())
	argv, gate := longStreamAgent(t, reply) // 8 lines a delta, one every 20 ms
	openGate(t, gate)
	fake := telegramtest.New(t)
	tg := telegram.New(telegram.Options{Token: telegramtest.Token, APIURL: fake.URL(), PollTimeout: 2 * time.Second,
		PerChat: -1, PerGroup: -1, Global: -1})
	const interval = 100 * time.Millisecond
	newHarness(t, harnessConfig{agent: argv, routes: []routing.Route{{Match: map[string]string{"platform": "telegram"}, Target: "main"}},
		modify: func(o *Options) {
			o.Agent.Output = "claude-stream"
			o.Adapters = append(o.Adapters, tg)
			o.Streams = map[string]Stream{"telegram": {Mode: StreamNative, Interval: interval}}
		}})
	msg, _ := fake.UserMessage(telegramtest.GroupID, "count", true, 0, 0)
	fake.Push("message", msg)
	testwait.For(t, 30*time.Second, "the final", func() bool {
		for _, m := range fake.Messages(telegramtest.GroupID) {
			if m.FromBot && m.Text == reply {
				return true
			}
		}
		return false
	})
	var calls []telegramtest.Call
	for _, method := range []string{"sendMessage", "editMessageText"} {
		calls = append(calls, fake.Calls(method)...)
	}
	slices.SortFunc(calls, func(a, b telegramtest.Call) int { return a.At.Compare(b.At) })
	if len(calls) < 3 {
		t.Fatalf("%d requests for the live reply; want it to grow over several updates", len(calls))
	}
	// The last request is the final (the outbox's, not paced by the
	// interval); every update before it is one interval after the last.
	for i := 1; i < len(calls)-1; i++ {
		if gap := calls[i].At.Sub(calls[i-1].At); gap < interval-10*time.Millisecond {
			t.Errorf("requests %d and %d for the live reply %s apart; want at most one per %s", i, i+1, gap, interval)
		}
	}
}
