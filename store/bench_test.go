package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
)

var benchWords = strings.Fields(`deploy release incident review lunch meeting budget design
	database migration search index latency outage rollback feature customer ticket
	invoice schedule holiday report draft merge branch build test flaky queue worker`)

// benchText is n words from benchWords, for the insert benchmarks.
func benchText(r *rand.Rand, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = benchWords[r.IntN(len(benchWords))]
	}
	return strings.Join(ws, " ")
}

func BenchmarkInsertMessage(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		m := &Message{ChatJID: adapters.JID(fmt.Sprintf("web:room%d", i%16)), ID: adapters.MessageID(fmt.Sprint(i)), Sender: "web:user/ann", Text: benchText(r, 12)}
		if _, err := s.InsertMessage(ctx, m); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkInsertMessagesBatch100(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		ms := make([]*Message, 100)
		for j := range ms {
			ms[j] = &Message{ChatJID: adapters.JID(fmt.Sprintf("web:room%d", n%16)), ID: adapters.MessageID(fmt.Sprint(n)), Sender: "web:user/ann", Text: benchText(r, 12)}
			n++
		}
		if _, err := s.InsertMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "msgs/s")
}

// searchCorpus stores n messages whose words follow a Zipf distribution over
// a 20,000-word vocabulary, like natural text: a few words are everywhere,
// most are rare. benchWords take ranks 3..32, from very common to common.
func searchCorpus(b *testing.B, s *Store, n int) {
	r := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(r, 1.07, 2, 20_000)
	word := func() string {
		k := int(zipf.Uint64())
		if k >= 3 && k < 3+len(benchWords) {
			return benchWords[k-3]
		}
		return fmt.Sprintf("w%d", k)
	}
	ctx := context.Background()
	for start := 0; start < n; start += 500 {
		ms := make([]*Message, 0, 500)
		for id := start; id < min(start+500, n); id++ {
			ws := make([]string, 8+r.IntN(25))
			for i := range ws {
				ws[i] = word()
			}
			ms = append(ms, &Message{ChatJID: adapters.JID(fmt.Sprintf("slack:T1/channel/C%d", id%20)), ID: adapters.MessageID(fmt.Sprint(id)),
				Sender: adapters.JID(fmt.Sprintf("slack:T1/user/U%d", id%50)), Text: strings.Join(ws, " "), Time: time.UnixMilli(int64(id))})
		}
		if _, err := s.InsertMessages(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSearch runs typical queries against 10,000 stored messages. The
// cost grows with the number of matching rows (bm25 scores every match);
// the hits metric is the count a limit of 200 returns.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	const total = 10_000
	searchCorpus(b, s, total)
	queries := []struct {
		name string
		q    string
		o    SearchOptions
	}{
		{"very_common_term", "deploy", SearchOptions{}},
		{"term", "merge", SearchOptions{}},
		{"and", "incident AND rollback", SearchOptions{}},
		{"phrase_in_chats", `"search index"`, SearchOptions{ChatJIDs: []adapters.JID{"slack:T1/channel/C1", "slack:T1/channel/C2"}}},
		{"prefix_since_sender", "w123*", SearchOptions{Since: time.UnixMilli(total / 2), Sender: "slack:T1/user/U7", Limit: 50}},
		{"rare_term", "w1000 OR w1500", SearchOptions{}},
	}
	for _, q := range queries {
		hits, err := s.Search(ctx, q.q, SearchOptions{ChatJIDs: q.o.ChatJIDs, Sender: q.o.Sender, Since: q.o.Since, Limit: MaxSearchLimit})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(q.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Search(ctx, q.q, q.o); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(hits)), "hits")
		})
	}
}

// BenchmarkEnqueueMessages measures the group commit's store half: messages
// with one work row each, stored by EnqueueMessages in transactions of
// batch messages, over 16 chats (as gateway BenchmarkDeliver sends them).
// The cost of a transaction's commit is shared by its messages, so the
// per-message figure falls as batches grow.
func BenchmarkEnqueueMessages(b *testing.B) {
	for _, batch := range []int{1, 16, 32, 64, 128} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b)
			b.ReportAllocs()
			n := 0
			cpu0 := cpuTime()
			for b.Loop() {
				es := make([]Enqueue, batch)
				for j := range es {
					chat := adapters.JID(fmt.Sprintf("test:room/%d", n%16))
					es[j] = Enqueue{Message: &Message{ChatJID: chat, ID: adapters.MessageID(fmt.Sprint(n)), Sender: "test:user/ann",
						Text: "deploy the release after the incident review", Verb: adapters.VerbMention},
						Work: []WorkItem{{Folder: "main", ChatJID: chat, Mode: "trigger", Trigger: TriggerMessage}}}
					n++
				}
				if err := s.EnqueueMessages(ctx, es); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)/1e3, "us/msg")
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/1e3, "cpu-us/msg")
		})
	}
}
