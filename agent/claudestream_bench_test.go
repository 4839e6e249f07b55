package agent

import (
	"encoding/json"
	"fmt"
	"testing"
)

// BenchmarkClaudeStreamDeltas reads a 2,000-delta answer (one text block,
// deltas of a few words, as Claude Code streams them): the parser's cost
// per answer must grow with its length, not with its square.
func BenchmarkClaudeStreamDeltas(b *testing.B) {
	const deltas = 2000
	lines := [][]byte{
		[]byte(`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1"}}}`),
		[]byte(`{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}}`),
	}
	for i := range deltas {
		d, _ := json.Marshal(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": fmt.Sprintf("word %d of a long answer, ", i)}}})
		lines = append(lines, d)
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		s := newClaudeStream(func(e Event) { n += len(e.Text) }, nil)
		for _, l := range lines {
			s.line(l)
		}
		if n == 0 {
			b.Fatal("no text")
		}
	}
}
