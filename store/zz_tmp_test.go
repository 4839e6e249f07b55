package store
import ("context";"fmt";"math/rand/v2";"testing";"switchboard/adapters")
func BenchmarkZZBatch(b *testing.B) {
	for _, bs := range []int{1, 10, 32, 100, 256} {
	b.Run(fmt.Sprint(bs), func(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	for b.Loop() {
		ms := make([]*Message, bs)
		for j := range ms {
			ms[j] = &Message{ChatJID: adapters.JID(fmt.Sprintf("web:room%d", n%16)), ID: adapters.MessageID(fmt.Sprint(n)), Sender: "web:user/ann", Text: benchText(r, 12)}
			n++
		}
		if _, err := s.InsertMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
	})
	}
}
