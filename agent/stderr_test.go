package agent

import (
	"strings"
	"testing"

	"switchboard/internal/testagent"
)

// A failed turn's recorded error (the log, `switchboard status`) quoted
// only the last stderr line. Node prints "Node.js v22..." after the error
// and its stack, so an operator saw that and nothing of why. The error now
// quotes the last few meaningful lines: stack frames, bare markers ("^")
// and the version trailer are left out, and secrets are redacted.
func TestRunFailureQuotesLastMeaningfulStderrLines(t *testing.T) {
	t.Setenv("S5_TEST_API_KEY", "k3y-value-of-the-operator")
	body := `cat >&2 <<'TRACE'
/app/agent.js:12
    throw new Error("model refused: " + process.env.S5_TEST_API_KEY)
    ^

Error: upstream said 401 for key k3y-value-of-the-operator (Authorization: Bearer abcdef123456)
    at callModel (/app/agent.js:12:11)
    at main (/app/agent.js:30:3)
    at node:internal/main/run_main_module:28:49

Node.js v22.11.0
TRACE
exit 1`
	_, err := runAgent(t, Spec{Command: testagent.Script(t, body), Env: []string{"S5_TEST_API_KEY"}}, Input{})
	msg := errString(err)
	want := `agent exited with status 1: /app/agent.js:12 ⏎ throw new Error("model refused: " + process.env.S5_TEST_API_KEY) ⏎ Error: upstream said 401 for key … (Authorization: Bearer …`
	if msg != want {
		t.Errorf("err = %q\nwant  %q", msg, want)
	}
	for _, leak := range []string{"k3y-value-of-the-operator", "abcdef123456"} {
		if strings.Contains(msg, leak) {
			t.Errorf("err quotes the secret %q: %s", leak, msg)
		}
	}
}

// Many long lines on stderr: the error keeps the last few, each whole,
// within detailMax bytes.
func TestRunFailureStderrLinesBounded(t *testing.T) {
	t.Parallel()
	body := `i=0; while [ $i -lt 50 ]; do echo "retrying request $i: connection reset by peer, will try again shortly with exponential backoff and jitter, as configured for this upstream" >&2; i=$((i+1)); done
echo 'Error: gave up after 50 attempts' >&2; exit 2`
	_, err := runAgent(t, Spec{Command: testagent.Script(t, body)}, Input{})
	msg := errString(err)
	const prefix = "agent exited with status 2: "
	if !strings.HasPrefix(msg, prefix) || !strings.HasSuffix(msg, " ⏎ Error: gave up after 50 attempts") {
		t.Fatalf("err = %q; want the last lines", msg)
	}
	detail := strings.TrimPrefix(msg, prefix)
	parts := strings.Split(detail, " ⏎ ")
	if len(detail) > detailMax || len(parts) < 3 {
		t.Errorf("detail has %d bytes in %d lines, want ≤ %d bytes and several lines: %q", len(detail), len(parts), detailMax, detail)
	}
	for _, p := range parts[:len(parts)-1] {
		if !strings.HasPrefix(p, "retrying request 4") || !strings.HasSuffix(p, "as configured for this upstream") {
			t.Errorf("line %q is not a whole line from the end of stderr", p)
		}
	}
}
