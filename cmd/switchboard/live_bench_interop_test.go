//go:build interop && linux

package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testwait"
)

// benchDeltas is the length of one benchmark turn's answer: 100 deltas,
// one every liveDeltaEvery (2 s of streaming).
const benchDeltas = 100

// BenchmarkLiveReply: the real Claude Code (claude-stream) answers in a
// Telegram chat of the fake Bot API while the fake Messages API streams
// benchDeltas text deltas, one every 20 ms; Telegram's stream settings
// are the defaults (native, stream_interval 1s). For every delta it takes
// the time from the fake API flushing it to the first Bot API request
// that carries its text (a draft, an edit or the final), and reports the
// p50 and p99 over all deltas, the median time from the last delta to the
// request carrying the final (final-ms), and the live reply's Bot API requests
// (sendMessageDraft, sendMessage, editMessageText, deleteMessage) per
// 1,000 deltas; with the turn run by the gateway (local) and by a
// `switchboard worker` over the embedded NATS (nats), in a private chat
// (drafts) and a group (edits, which Telegram's pacing spaces 3 s apart).
// One iteration is one turn. Run (docs/operating.md, "Live replies"):
//
//	GOFLAGS=-tags=sqlite_fts5,interop CGO_ENABLED=1 go test ./cmd/switchboard -run '^$' -bench BenchmarkLiveReply -benchtime 3x
func BenchmarkLiveReply(b *testing.B) {
	for _, runner := range []string{"local", "nats"} {
		b.Run(runner, func(b *testing.B) {
			api := newLiveModel(b, benchDeltas)
			tg := telegramtest.New(b)
			agentExtra, extra := "", ""
			if runner == "nats" {
				agentExtra, extra = "  runner: nats\n", "nats: {embedded: true, listen: \"127.0.0.1:0\"}\n"
			}
			dir, env := claudeLive(b, api.srv.URL,
				fmt.Sprintf("  telegram: {enabled: true, token: %q, api_url: %q}\n", telegramtest.Token, tg.URL()),
				"  - {match: {platform: telegram}, target: main}\n", agentExtra, extra)
			g := startGW(b, dir, env...)
			if runner == "nats" {
				startWorker(b, dir, "w1", embeddedNATSURL(b, g), 1, env...)
			}
			turns := 0 // a benchmark function runs more than once: each turn's words its own
			for _, c := range []struct {
				name    string
				chat    int64
				mention bool
			}{{"private", telegramtest.UserID, false}, {"group", telegramtest.GroupID, true}} {
				b.Run(c.name, func(b *testing.B) {
					var lat, fin []time.Duration
					calls, deltas := 0, 0
					for range b.N {
						turns++
						tag := fmt.Sprintf("%s%s%d", runner[:1], c.name[:1], turns)
						l, f, n := benchTurn(b, api, tg, c.chat, c.mention, tag)
						lat, fin = append(lat, l...), append(fin, f)
						calls += n
						deltas += benchDeltas
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2])/float64(time.Millisecond), "p50-ms")
					b.ReportMetric(float64(lat[len(lat)*99/100])/float64(time.Millisecond), "p99-ms")
					b.ReportMetric(float64(calls)*1000/float64(deltas), "calls/1000deltas")
					slices.Sort(fin)
					b.ReportMetric(float64(fin[len(fin)/2])/float64(time.Millisecond), "final-ms")
				})
			}
		})
	}
}

// benchTurn runs one turn answering "long <tag>" in chat and returns each
// delta's latency, the time from the last delta to the request carrying
// the final, and the live reply's Bot API requests to chat.
func benchTurn(b *testing.B, api *liveModel, tg *telegramtest.Server, chat int64, mention bool, tag string) ([]time.Duration, time.Duration, int) {
	b.Helper()
	live := []string{"sendMessageDraft", "sendMessage", "editMessageText", "deleteMessage"}
	before := map[string]int{}
	for _, m := range live {
		before[m] = len(callsTo(tg, m, chat))
	}
	final := liveAnswer(tag, benchDeltas)
	msg, _ := tg.UserMessage(chat, "long "+tag, mention, 0, 0)
	tg.Push("message", msg)
	testwait.For(b, claudeTurnWithin, "the final "+tag, func() bool {
		return slices.ContainsFunc(tg.Messages(chat), func(m telegramtest.Msg) bool { return m.FromBot && m.Text == final })
	})
	var got []telegramtest.Call
	for _, m := range live {
		got = append(got, callsTo(tg, m, chat)[before[m]:]...)
	}
	slices.SortFunc(got, func(x, y telegramtest.Call) int { return x.At.Compare(y.At) })
	var lat []time.Duration
	for i := range benchDeltas {
		word := liveWord(tag, i)
		sent, ok := api.sentAt(word)
		at := slices.IndexFunc(got, func(c telegramtest.Call) bool { return strings.Contains(c.Params["text"], word) })
		if !ok || at < 0 {
			b.Fatalf("delta %s: sent %v, in no Bot API request", word, ok)
		}
		lat = append(lat, got[at].At.Sub(sent))
	}
	last, _ := api.sentAt(liveWord(tag, benchDeltas-1))
	at := slices.IndexFunc(got, func(c telegramtest.Call) bool { return c.Params["text"] == final })
	if at < 0 {
		b.Fatalf("no Bot API request carried the final %q", tag)
	}
	return lat, got[at].At.Sub(last), len(got)
}
