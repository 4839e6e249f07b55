package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/internal/testagent"
)

// codexEvents reads a file of testdata/codex-json: what Codex 0.169.0
// printed against a fake Responses API.
func codexEvents(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "codex-json", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const codexThread = "01a2129f-59a9-7943-91d0-9f60986dd305" // of fresh.jsonl and resumed.jsonl

func TestRunCodexJSON(t *testing.T) {
	t.Parallel()
	runOutputCases(t, OutputCodexJSON, []outputCase{
		{
			name:      "a fresh session: a command, then the answer",
			stdout:    codexEvents(t, "fresh.jsonl"),
			wantReply: "Hello Ann.\n\nThe answer is 42.", wantSessID: codexThread,
		},
		{
			name:      "a resumed session reports its thread again",
			stdout:    codexEvents(t, "resumed.jsonl"),
			wantReply: "Hello Ann.\n\nThe answer is 42.", wantSessID: codexThread,
		},
		{
			name: "the last agent message is the reply",
			stdout: `{"type":"thread.started","thread_id":"th-2"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Let me look."}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"  Found it. \n"}}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}
`,
			wantReply: "Found it.", wantSessID: "th-2",
		},
		{
			name: "a turn without an agent message has no reply",
			stdout: `{"type":"thread.started","thread_id":"th-3"}
{"type":"turn.started"}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}
`,
			wantReply: "", wantSessID: "th-3",
		},
		{
			name: "an error event before turn.completed is a notice, not a failure",
			stdout: `{"type":"thread.started","thread_id":"th-4"}
{"type":"error","message":"Reconnecting... 1/5"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}
`,
			wantReply: "done", wantSessID: "th-4",
		},
		{
			name:       "turn.failed, even with exit status 0",
			stdout:     codexEvents(t, "turn-failed.jsonl"),
			wantSessID: "01a2129f-8e24-7752-b5ed-41a1528e2dc3",
			wantErr:    "agent reported an error: the fake refuses this",
		},
		{
			name:       "an error event and no turn.completed",
			stdout:     `{"type":"thread.started","thread_id":"th-5"}` + "\n" + `{"type":"error","message":"stream disconnected before completion"}` + "\n",
			wantSessID: "th-5",
			wantErr:    "agent reported an error: stream disconnected before completion",
		},
		{
			name:       "events without turn.completed",
			stdout:     `{"type":"thread.started","thread_id":"th-6"}` + "\n" + `{"type":"turn.started"}` + "\n",
			wantSessID: "th-6",
			wantErr:    `agent output is not Codex JSON events (output: codex-json): no turn.completed event; stdout begins "{\"type\":\"thread.started\"`,
		},
		{
			name:       "plain text (codex exec without --json)",
			stdout:     "Hello Ann.\n",
			wantSessID: "old",
			wantErr:    `agent output is not Codex JSON events (output: codex-json): no line holds a JSON event; stdout begins "Hello Ann."; run codex exec with --json or set agent.output to text`,
		},
		{
			name:       "empty stdout",
			stdout:     "",
			wantSessID: "old",
			wantErr:    "agent output is not Codex JSON events (output: codex-json): no line holds a JSON event",
		},
	})
}

// A Codex run that exits non-zero is described by what it reported: the
// failed turn's message, or its "Error: " line on stderr, not the
// backtrace or warnings after it.
func TestRunCodexJSONExitError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	failedOut := write("failed.jsonl", codexEvents(t, "turn-failed.jsonl"))
	warning := write("warning", "WARNING: proceeding, even though we could not create PATH aliases\n")
	lost := write("lost", codexEvents(t, "resume-lost.stderr")+"\nStack backtrace:\n   0: <unknown>\n   1: <unknown>\n")
	tests := []struct {
		name, body, wantErr string
	}{
		{"the failed turn's message", `cat "$1"; cat "$2" >&2; exit 1`,
			"agent exited with status 1: the fake refuses this"},
		{"a session Codex does not have", `cat "$3" >&2; exit 1`,
			"agent exited with status 1: Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2129d-8fde-74c0-825e-000000000000 (code -32600)"},
		{"otherwise the last stderr line", `echo 'something odd' >&2; exit 2`,
			"agent exited with status 2: something odd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spec := Spec{Command: testagent.Script(t, tt.body, failedOut, warning, lost), Output: OutputCodexJSON}
			_, err := runAgent(t, spec, Input{SessionID: "old"})
			if !errors.Is(err, ErrFailed) || err.Error() != tt.wantErr {
				t.Fatalf("err = %v\nwant ErrFailed %q", err, tt.wantErr)
			}
		})
	}
}

// turn.completed's usage is kept (Codex reports the thread's running total).
func TestCodexUsage(t *testing.T) {
	got := readCodexEvents([]byte(codexEvents(t, "fresh.jsonl"))).Usage
	if want := (CodexUsage{InputTokens: 20, CachedInputTokens: 6, OutputTokens: 10}); got != want {
		t.Errorf("usage %+v, want %+v", got, want)
	}
}

// TestRunCodexJSONUsage: the tokens of turn.completed (recorded from
// Codex 0.169) are the turn's usage, marked as the thread's running
// total; input excludes the cached tokens. A resumed thread's figures
// minus the earlier turn's are this turn's. No cost: Codex prints none.
func TestRunCodexJSONUsage(t *testing.T) {
	t.Parallel()
	fresh := Usage{InputTokens: 14, CacheReadTokens: 6, OutputTokens: 10, SessionTotal: true}
	for _, tt := range []struct {
		file string
		want Usage
	}{
		{"fresh.jsonl", fresh},
		{"resumed.jsonl", Usage{InputTokens: 28, CacheReadTokens: 12, OutputTokens: 20, SessionTotal: true}},
		{"turn-failed.jsonl", Usage{}},
	} {
		res, _ := runAgent(t, Spec{Command: printingAgent(t, codexEvents(t, tt.file)), Output: OutputCodexJSON}, Input{})
		if res.Usage != tt.want {
			t.Errorf("%s: usage %+v, want %+v", tt.file, res.Usage, tt.want)
		}
	}
	resumed := Usage{InputTokens: 28, CacheReadTokens: 12, OutputTokens: 20, SessionTotal: true}
	if got := resumed.TokensSince(fresh); got != fresh {
		t.Errorf("resumed thread's tokens since the first turn = %+v, want %+v", got, fresh)
	}
	if got := fresh.TokensSince(resumed); got != fresh {
		t.Errorf("totals below the earlier turns' (a new thread) = %+v, want them as they are", got)
	}
}

func TestPriceCharge(t *testing.T) {
	t.Parallel()
	u := Usage{InputTokens: 1_000_000, CacheCreationTokens: 1_000_000, CacheReadTokens: 2_000_000, OutputTokens: 500_000}
	p := Price{InputPerMTok: 1.25, CachedInputPerMTok: 0.125, OutputPerMTok: 10}
	if got := p.Charge(u).CostUSD; got != 2.5+0.25+5 {
		t.Errorf("cost %v, want 7.75", got)
	}
	if got := (Price{InputPerMTok: 1, OutputPerMTok: 2}).Charge(u).CostUSD; got != 2+2+1 {
		t.Errorf("cost without a cached price %v, want cache reads at the input price: 5", got)
	}
	if got := p.Charge(Usage{CostUSD: 0.5, InputTokens: 1e6}).CostUSD; got != 0.5 {
		t.Errorf("a reported cost was replaced: %v", got)
	}
	if got := (Price{}).Charge(u).CostUSD; got != 0 {
		t.Errorf("no price charged %v", got)
	}
}

// A Codex turn whose events outgrow the stdout kept (its commands' output
// is in them) still gives its reply, thread and usage: Run reads every
// event line as it comes, not the stdout it keeps.
func TestRunCodexJSONPastMaxOutput(t *testing.T) {
	t.Parallel()
	out := `{"type":"thread.started","thread_id":"th-big"}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"cat big","aggregated_output":"` + strings.Repeat("x", 5000) + `","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Read it."}}
{"type":"turn.completed","usage":{"input_tokens":7,"cached_input_tokens":0,"output_tokens":3}}
`
	res, err := runAgent(t, Spec{Command: printingAgent(t, out), Output: OutputCodexJSON, MaxOutput: 1000}, Input{})
	if err != nil || res.Reply != "Read it." || res.SessionID != "th-big" || res.Usage.InputTokens != 7 || !res.Truncated {
		t.Fatalf("res %+v err %v; want the reply, thread and usage of every event, stdout truncated", res, err)
	}
}
