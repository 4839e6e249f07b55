package agent_test

import (
	"testing"

	"switchboard/agent"
	"switchboard/agent/runnertest"
)

// agent.Local passes the runner conformance suite.
func TestLocalConformance(t *testing.T) {
	runnertest.Run(t, func(*testing.T) agent.Runner { return agent.Local{} })
}
