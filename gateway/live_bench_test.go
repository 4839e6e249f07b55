package gateway

import (
	"fmt"
	"testing"

	"switchboard/adapters"
	"switchboard/adapters/markdown"
	"switchboard/agent"
)

// BenchmarkLiveView2000Deltas: what the gateway does for a Telegram live
// reply of a 2,000-delta answer (about 60,000 characters, so 15 parts of
// Telegram's 4,096), with an update after every delta (the worst case of
// stream_interval): the text so far is split as its final would be, each
// part measured by its rendering (Telegram's measure renders it as HTML
// and as plain text), and the current part rendered for the update. Each
// update's cost must not grow with the parts already settled.
func BenchmarkLiveView2000Deltas(b *testing.B) {
	measure := func(src string) int {
		return max(adapters.UTF16Len(markdown.HTMLText(markdown.TelegramHTML(src))), adapters.UTF16Len(markdown.Plain(src)))
	}
	deltas := make([]string, 2000)
	for i := range deltas {
		deltas[i] = fmt.Sprintf("word %d of a **long** answer, ", i)
		if i%20 == 19 {
			deltas[i] += "\n\n"
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		l := newBenchLive(adapters.Limits{MaxText: 4096, Measure: measure})
		for _, d := range deltas {
			l.onEvent(agent.Event{Kind: agent.EventText, Text: d})
			settle, show := l.view()
			if settle != "" {
				l.parts = append(l.parts, livePart{text: settle})
			}
			_ = markdown.TelegramHTML(markdown.Partial(show)) // the adapter's update
		}
		if len(l.parts) < 10 {
			b.Fatalf("%d parts settled; want the answer across many", len(l.parts))
		}
	}
}

func newBenchLive(lim adapters.Limits) *liveTurn {
	return &liveTurn{lim: memoLimits(lim), kick: make(chan struct{}, 1)}
}
