package remote

import (
	"testing"
	"time"

	"switchboard/agent"
	"switchboard/agent/runnertest"
)

// remote.Runner passes the runner conformance suite: each case gets its
// own embedded NATS server, a worker (its agent.env allowing the suite's
// variable; a short drain, so that a cancelled turn's agent does not
// outlive the case by long) and a Runner that sends the spec's command.
func TestRemoteConformance(t *testing.T) {
	runnertest.Run(t, func(t *testing.T) agent.Runner {
		nc := natsConn(t)
		runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1, Drain: time.Second, AllowEnv: []string{runnertest.AllowedEnv},
			Prepare: func(command []string) (agent.Spec, error) { return agent.Spec{Command: command}, nil }})
		r, err := NewRunner(t.Context(), nc, RunnerOptions{StateDir: t.TempDir(), Check: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		return r
	})
}
