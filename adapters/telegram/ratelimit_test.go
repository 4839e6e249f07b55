package telegram

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// The pacer forgets the chats whose slot has passed as it goes, however
// few or many: memory follows the chats it still paces, not every chat
// the bot ever wrote to.
func TestPacerForgetsPassedSlots(t *testing.T) {
	p := newPacer(Options{PerChat: -1, PerGroup: -1, Global: -1}) // every slot passed as soon as it is set
	for i := range 5000 {
		if err := p.wait(context.Background(), lane{chat: int64(i + 1)}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(p.next); n > 10 {
		t.Errorf("the pacer holds %d chats after 5000 chats each sent once, none of them paced; want the few still paced", n)
	}
}

// BenchmarkPacerWait is the cost of one wait that waits for nothing (a
// chat's first message, no global pace) while the pacer paces n other
// chats whose slots are all ahead (an hour apart): flat in n.
func BenchmarkPacerWait(b *testing.B) {
	for _, n := range []int{1_000, 20_000, 100_000} {
		b.Run(fmt.Sprintf("chats=%d", n), func(b *testing.B) {
			p := newPacer(Options{PerChat: time.Hour, Global: -1})
			ctx := context.Background()
			for i := range n {
				if err := p.wait(ctx, lane{chat: int64(i + 1)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := p.wait(ctx, lane{chat: int64(n + i + 1)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
