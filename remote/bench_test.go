package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"switchboard/agent"
)

// BenchmarkRemoteTurn measures what the remote runner adds to a turn, with
// an agent that does nothing (/bin/true, unsandboxed), so that the figures
// are the dispatch's: agent.Local against a Runner and one in-process
// Worker on the embedded server (publish to the worker's subject, fetch,
// the taken note, the result). Reports p50 and p99 of Run.
//
//	go test -run '^$' -bench RemoteTurn -benchtime 300x ./remote/
func BenchmarkRemoteTurn(b *testing.B) {
	run := func(b *testing.B, r agent.Runner, spec agent.Spec) {
		dir := filepath.Join(b.TempDir(), "groups", "main")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := range b.N {
			in := agent.Input{Dir: dir, Prompt: "hi", TurnID: agent.TurnID(fmt.Sprintf("b-%d", i))}
			start := time.Now()
			if _, err := r.Run(b.Context(), spec, in); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
	}
	spec := agent.Spec{Command: []string{"/bin/true"}, Timeout: 20 * time.Second}
	b.Run("local", func(b *testing.B) { run(b, agent.Local{}, spec) })
	b.Run("remote", func(b *testing.B) {
		nc := natsConn(b)
		w, err := NewWorker(b.Context(), workerConn(b, nc, "w1"), WorkerOptions{ID: "w1", Slots: 1, Prepare: func([]string) (agent.Spec, error) {
			return agent.Spec{Command: []string{"/bin/true"}}, nil
		}, Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		defer func() { cancel(); <-done }()
		r, err := NewRunner(b.Context(), nc, RunnerOptions{Command: []string{"unused"}})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		run(b, r, spec)
	})
}
