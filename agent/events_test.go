package agent

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/internal/testagent"
)

// streamFixture reads a file of testdata/claude-stream: what Claude Code
// 2.1.332 printed with --output-format stream-json --verbose
// --include-partial-messages against a fake Messages API (see the README
// there).
func streamFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude-stream", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// eventLog collects a turn's events.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// brief is an event in one line: kind, then what it carries.
func brief(e Event) string {
	switch e.Kind {
	case EventText, EventReplace:
		return fmt.Sprintf("%s %q", e.Kind, e.Text)
	case EventToolStart:
		return fmt.Sprintf("%s %s %s %q", e.Kind, e.Tool, e.ToolID, e.Summary)
	case EventToolEnd:
		return fmt.Sprintf("%s %s %s", e.Kind, e.Tool, e.ToolID)
	}
	return fmt.Sprintf("%s %q session=%s error=%v", e.Kind, e.Text, e.SessionID, e.IsError)
}

func briefs(es []Event) []string {
	var out []string
	for _, e := range es {
		out = append(out, brief(e))
	}
	return out
}

// shown is what a live reply built from the events shows: text events
// appended, replace events replacing.
func shown(es []Event) string {
	var b strings.Builder
	for _, e := range es {
		switch e.Kind {
		case EventText:
			b.WriteString(e.Text)
		case EventReplace:
			b.Reset()
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// runEvents runs an agent printing stdout with output and returns its
// events, result and error.
func runEvents(t *testing.T, output Output, stdout string, spec Spec) ([]Event, Result, error) {
	t.Helper()
	var log eventLog
	spec.Command, spec.Output = printingAgent(t, stdout), output
	res, err := runAgent(t, spec, Input{SessionID: "old", OnEvent: log.add})
	return log.all(), res, err
}

const longAnswer = "Here is a longer answer, streamed in many small pieces so that a live reply can grow. " +
	"First, the gateway reads each text delta as it arrives. Second, it coalesces them. " +
	"Third, the platform shows the text so far. Finally, the result carries the whole answer."

// The recorded turns of Claude Code give these events, and the live reply
// they make is the final reply when the result comes.
func TestRunClaudeStreamEvents(t *testing.T) {
	t.Parallel()
	const retried = "This answer came whole, after the stream broke."
	tests := []struct {
		fixture, reply, session string
		shown                   string   // what the events add up to before the result, when not the reply
		want                    []string // the events; nil: check only the text they add up to
		wantErr                 string
	}{
		{
			fixture: "long.jsonl", reply: longAnswer, session: "45dac748-2507-4353-89b3-baacaf087851",
		},
		{
			// The live reply shows the text before the tool call too; the
			// reply is the last message's.
			fixture: "tool.jsonl", reply: "The command printed: hi from bash", session: "9dd51978-a1bc-42bb-99f2-5ce4112206a7",
			shown: "Let me run that.\n\nThe command printed: hi from bash",
			want: []string{
				`text "Let me run "`, `text "that."`,
				`tool_start Bash toolu_01 "echo hi from bash"`,
				`tool_end Bash toolu_01`,
				`text "\n\nThe command printed: "`, `text "hi from bash"`,
				`result "The command printed: hi from bash" session=9dd51978-a1bc-42bb-99f2-5ce4112206a7 error=false`,
			},
		},
		{
			// The first stream ended with no block complete: Claude Code
			// abandoned its blocks and streamed the answer again.
			fixture: "retry.jsonl", reply: retried, session: "778aa0c8-7a0d-4ee6-96a4-871c5e2b3e2e",
			want: []string{
				`text "This answer came "`, `text "whole, after the "`, `text "stream broke."`,
				`replace ""`,
				`text "This answer came "`, `text "whole, after the "`, `text "stream broke."`,
				`result "` + retried + `" session=778aa0c8-7a0d-4ee6-96a4-871c5e2b3e2e error=false`,
			},
		},
		{
			// The stream brought no event: the non-streamed retry's text
			// arrives whole in the assistant message.
			fixture: "whole.jsonl", reply: retried, session: "3bf2f1cb-edf1-47b7-99b7-7c6ea6c67fa6",
			want: []string{
				`replace "` + retried + `"`,
				`result "` + retried + `" session=3bf2f1cb-edf1-47b7-99b7-7c6ea6c67fa6 error=false`,
			},
		},
		{
			// A 400: the synthetic API-error message is not reply text.
			fixture: "fail.jsonl", session: "e7b70a1d-f530-4fd1-9bda-d360dc3def0d",
			want:    []string{`result "" session=e7b70a1d-f530-4fd1-9bda-d360dc3def0d error=true`},
			wantErr: "agent reported an error: API Error: 400 the fake refuses this prompt",
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			stdout := streamFixture(t, tt.fixture)
			events, res, err := runEvents(t, OutputClaudeStream, stdout, Spec{})
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (!errors.Is(err, ErrFailed) || err.Error() != tt.wantErr) {
				t.Fatalf("err = %v, want ErrFailed %q", err, tt.wantErr)
			}
			if tt.want != nil && !slices.Equal(briefs(events), tt.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(briefs(events), "\n"), strings.Join(tt.want, "\n"))
			}
			if res.Reply != tt.reply || res.SessionID != tt.session {
				t.Errorf("reply %q, session %q; want %q, %q", res.Reply, res.SessionID, tt.reply, tt.session)
			}
			last := events[len(events)-1]
			if last.Kind != EventResult || last.Text != res.Reply || last.Usage != res.Usage || last.SessionID != tt.session {
				t.Errorf("last event %+v; want the result: reply %q, usage %+v", last, res.Reply, res.Usage)
			}
			if got, want := shown(events), cmp.Or(tt.shown, tt.reply); got != want {
				t.Errorf("the events add up to %q before the result, want %q", got, want)
			}
			for _, e := range events {
				if strings.Contains(e.Text, "API Error") {
					t.Errorf("event %s shows the synthetic API error message as reply text", brief(e))
				}
			}
		})
	}
}

// A long answer streams in many deltas; the Result is what claude-json
// gives for the same turn (testdata/claude-stream/long.json: the same
// prompt, --output-format json), but for the time the API took.
func TestRunClaudeStreamResultMatchesClaudeJSON(t *testing.T) {
	t.Parallel()
	events, stream, err := runEvents(t, OutputClaudeStream, streamFixture(t, "long.jsonl"), Spec{})
	if err != nil {
		t.Fatal(err)
	}
	_, whole, err := runEvents(t, OutputClaudeJSON, streamFixture(t, "long.json"), Spec{})
	if err != nil {
		t.Fatal(err)
	}
	texts := 0
	for _, e := range events {
		if e.Kind == EventText {
			texts++
		}
	}
	if texts < 10 {
		t.Errorf("%d text events, want the answer in many deltas: %q", texts, briefs(events))
	}
	want := Usage{CostUSD: 0.016656, SessionCost: 0.016656, InputTokens: 1234, OutputTokens: 56, CacheCreationTokens: 2000,
		CacheReadTokens: 3000, NumTurns: 1, APIDuration: 13 * time.Millisecond}
	if stream.Usage != want {
		t.Errorf("claude-stream usage %+v, want %+v", stream.Usage, want)
	}
	whole.Usage.APIDuration = stream.Usage.APIDuration
	if stream.Reply != whole.Reply || stream.Usage != whole.Usage {
		t.Errorf("claude-stream: reply %q, usage %+v; claude-json of the same turn: %q, %+v", stream.Reply, stream.Usage, whole.Reply, whole.Usage)
	}
}

// Lines that are not stream-json events are skipped, never fatal: log
// lines, broken JSON, invalid UTF-8, a line longer than MaxOutput (which
// also cut what is kept of stdout: the result is read all the same), a
// subagent's text (parent_tool_use_id) and a synthetic API-error message.
func TestRunClaudeStreamSkipsWhatIsNotTheReply(t *testing.T) {
	t.Parallel()
	lines := strings.SplitAfter(streamFixture(t, "tool.jsonl"), "\n")
	garbage := []string{
		"starting up\n", "{not json\n", "\xff\xfe\n", `{"type":"stream_event"}` + "\n", `[1,2]` + "\n",
		`{"type":"stream_event","event":{"delta":{"text":"SUBAGENT","type":"text_delta"},"index":0,"type":"content_block_delta"},"parent_tool_use_id":"toolu_sub"}` + "\n",
		`{"type":"assistant","message":{"id":"msg_err","model":"<synthetic>","content":[{"type":"text","text":"API Error: 529 overloaded"}]},"is_api_error_message":true}` + "\n",
		`{"type":"x","pad":"` + strings.Repeat("y", 20000) + `"}` + "\n",
	}
	var out strings.Builder
	for i, l := range lines {
		out.WriteString(l)
		if i < len(garbage) {
			out.WriteString(garbage[i])
		}
	}
	clean, _, err := runEvents(t, OutputClaudeStream, streamFixture(t, "tool.jsonl"), Spec{})
	if err != nil {
		t.Fatal(err)
	}
	events, res, err := runEvents(t, OutputClaudeStream, out.String(), Spec{MaxOutput: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Reply != "The command printed: hi from bash" || res.Usage.CostUSD != 0.033312 {
		t.Errorf("result %+v; want stdout cut at MaxOutput and the reply and usage read all the same", res)
	}
	if !slices.Equal(briefs(events), briefs(clean)) {
		t.Errorf("events with garbage lines:\n%s\nwithout:\n%s", strings.Join(briefs(events), "\n"), strings.Join(briefs(clean), "\n"))
	}
}

// Synthetic stream-json cases the recordings do not show.
func TestRunClaudeStreamCases(t *testing.T) {
	t.Parallel()
	const (
		start  = `{"type":"stream_event","event":{"type":"message_start","message":{"id":"%s"}}}` + "\n"
		text   = `{"type":"stream_event","event":{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%q}}}` + "\n"
		whole  = `{"type":"assistant","message":{"id":"%s","content":[{"type":"text","text":%q}]}}` + "\n"
		result = `{"type":"result","subtype":"success","is_error":false,"result":%q,"session_id":"s-1","total_cost_usd":0.5}` + "\n"
	)
	tests := []struct {
		name, stdout string
		want         []string
	}{
		{
			// The stream broke after a few deltas; the non-streamed retry
			// (another message id) brought the whole text.
			name: "non-streamed retry after some deltas",
			stdout: fmt.Sprintf(start, "m1") + fmt.Sprintf(text, 0, "Hel") + fmt.Sprintf(text, 0, "lo wo") +
				fmt.Sprintf(whole, "m2", "Hello world, whole.") + fmt.Sprintf(result, "Hello world, whole."),
			want: []string{`text "Hel"`, `text "lo wo"`, `replace "Hello world, whole."`, `result "Hello world, whole." session=s-1 error=false`},
		},
		{
			name: "an assistant message that differs from its deltas replaces them",
			stdout: fmt.Sprintf(start, "m1") + fmt.Sprintf(text, 0, "First.") + fmt.Sprintf(whole, "m1", "First.") +
				fmt.Sprintf(start, "m2") + fmt.Sprintf(text, 0, "Seco") + fmt.Sprintf(whole, "m2", "Second, corrected.") +
				fmt.Sprintf(result, "Second, corrected."),
			want: []string{`text "First."`, `text "\n\nSeco"`, `replace "First.\n\nSecond, corrected."`, `result "Second, corrected." session=s-1 error=false`},
		},
		{
			// The text of abandoned blocks goes at once, not when the
			// retry (which may be minutes away) starts.
			name: "abandoned blocks leave the live reply when Claude Code gives them up",
			stdout: fmt.Sprintf(start, "m1") + fmt.Sprintf(text, 0, "First.") + fmt.Sprintf(whole, "m1", "First.") + fmt.Sprintf(text, 1, "Second hal") +
				`{"type":"stream_event","event":{"type":"message_stop"},"abandoned_blocks":{"api_message_id":"m1","from_block_index":1}}` + "\n" +
				`{"type":"system","subtype":"api_retry","attempt":1}` + "\n" + fmt.Sprintf(result, "First."),
			want: []string{`text "First."`, `text "\n\nSecond hal"`, `replace "First."`, `result "First." session=s-1 error=false`},
		},
		{
			name: "a second result starts a new answer",
			stdout: fmt.Sprintf(start, "m1") + fmt.Sprintf(text, 0, "One.") + fmt.Sprintf(result, "One.") +
				fmt.Sprintf(start, "m2") + fmt.Sprintf(text, 0, "Two.") + fmt.Sprintf(result, "Two."),
			want: []string{`text "One."`, `result "One." session=s-1 error=false`, `text "Two."`, `result "Two." session=s-1 error=false`},
		},
		{
			name: "a tool whose result never came ends with the next message",
			stdout: fmt.Sprintf(start, "m1") +
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/etc/hosts"}}]}}` + "\n" +
				fmt.Sprintf(start, "m2") + fmt.Sprintf(text, 0, "Done.") + fmt.Sprintf(result, "Done."),
			want: []string{`tool_start Read t1 "/etc/hosts"`, `tool_end Read t1`, `text "Done."`, `result "Done." session=s-1 error=false`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			events, res, err := runEvents(t, OutputClaudeStream, tt.stdout, Spec{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(briefs(events), tt.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(briefs(events), "\n"), strings.Join(tt.want, "\n"))
			}
			if last := events[len(events)-1]; res.Reply != last.Text || res.SessionID != "s-1" || res.Usage.CostUSD != 0.5 {
				t.Errorf("result %+v; want the last result's reply %q, session s-1 and cost 0.5", res, last.Text)
			}
		})
	}
}

func TestRunClaudeStreamNotStreamJSON(t *testing.T) {
	t.Parallel()
	_, res, err := runEvents(t, OutputClaudeStream, "Hello, I am plain text\n", Spec{})
	want := `agent output is not Claude Code stream-json (output: claude-stream): no result event; stdout begins "Hello, I am plain text"`
	if !errors.Is(err, ErrFailed) || !strings.HasPrefix(err.Error(), want) || res.Reply != "" {
		t.Fatalf("reply %q, err %v; want ErrFailed %q…", res.Reply, err, want)
	}
	// A run that exits non-zero is described by its result's error.
	spec := Spec{Command: testagent.Script(t, `cat "$1"; exit 1`, filepath.Join("testdata", "claude-stream", "fail.jsonl")), Output: OutputClaudeStream}
	if _, err := runAgent(t, spec, Input{}); errString(err) != "agent exited with status 1: API Error: 400 the fake refuses this prompt" {
		t.Errorf("err = %v; want the API error the result reported", err)
	}
	// Without OnEvent the result is read all the same.
	spec = Spec{Command: printingAgent(t, streamFixture(t, "tool.jsonl")), Output: OutputClaudeStream}
	if res, err := runAgent(t, spec, Input{}); err != nil || res.Reply != "The command printed: hi from bash" || res.Usage.NumTurns != 2 {
		t.Errorf("without OnEvent: reply %q, usage %+v, err %v", res.Reply, res.Usage, err)
	}
}

// A tool call's summary never shows a secret: credentials in the command,
// nor the value of an environment variable the agent was given.
func TestRunClaudeStreamToolSummaryHidesSecrets(t *testing.T) {
	const secret = "hunter2-env-value-77"
	t.Setenv("SB_TEST_AGENT_SECRET", secret)
	tool := func(id, name, input string) string {
		return `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}}` + "\n"
	}
	stdout := tool("t1", "Bash", `{"command":"curl -H 'Authorization: Bearer abcdef123456' https://user:pw@example.com/x?token=zz9"}`) +
		tool("t2", "Bash", `{"command":"export API_KEY=sk-live-0123456789abcdef; echo `+secret+`"}`) +
		tool("t3", "Bash", `{"command":"for i in 1 2 3; do\n  echo line $i\ndone && `+strings.Repeat("long ", 30)+`"}`) +
		tool("t4", "mcp__x__login", `{"password":"p4ss","user":"ann"}`) +
		`{"type":"result","is_error":false,"result":"ok","session_id":"s"}` + "\n"
	events, _, err := runEvents(t, OutputClaudeStream, stdout, Spec{Env: []string{"SB_TEST_AGENT_SECRET"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.Kind == EventToolStart {
			got = append(got, e.Summary)
		}
	}
	want := []string{
		`curl -H 'Authorization: Bearer …' https://…@example.com/x?token=…`,
		`export API_KEY=…; echo …`,
		`for i in 1 2 3; do echo line $i done && long long long long long long long long…`,
		`ann`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("summaries:\n%q\nwant:\n%q", got, want)
	}
	for _, s := range got {
		if len([]rune(s)) > maxSummary || strings.Contains(s, "\n") {
			t.Errorf("summary %q is over %d characters or more than a line", s, maxSummary)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	tests := []struct{ input, want string }{
		{`{"file_path":"/srv/app/main.go","old_string":"a","new_string":"b"}`, "/srv/app/main.go"},
		{`{"pattern":"TODO","path":"src"}`, "src"},
		{`{"url":"https://example.com/docs?api_key=abc123","prompt":"summarize"}`, "https://example.com/docs?api_key=…"},
		{`{"query":"go 1.26 release notes"}`, "go 1.26 release notes"},
		{`{"command":["git","push","--token","ghp_abcdefghijklmnop1234"]}`, "git push --token …"},
		{`{"command":"aws s3 ls --secret-access-key=wJalrXUtnFEMI/K7MDENG"}`, "aws s3 ls --secret-access-key=…"},
		{`{"command":"echo 0123456789abcdef0123456789abcdef0123"}`, "echo …"},
		{`{"command":"curl -H 'X-Api-Key: k-123' example.com"}`, "curl -H 'X-Api-Key: …' example.com"},
		// curl's (and wget's, httpie's) user:password.
		{`{"command":"curl -u admin:hunter2 https://api.example.com/x"}`, "curl -u … https://api.example.com/x"},
		{`{"command":"curl --user 'admin:hunter2' https://api"}`, "curl --user … https://api"},
		{`{"command":"curl --user=admin:hunter2 https://api"}`, "curl --user=… https://api"},
		{`{"command":"curl -uadmin:hunter2 https://api"}`, "curl -u… https://api"},
		{`{"command":"wget --http-password=hunter2 https://x"}`, "wget --http-password=… https://x"},
		{`{"command":"sort -u names.txt"}`, "sort -u names.txt"},
		{`{"command":"ps -u root"}`, "ps -u root"},
		{`{"command":"curl --url=https://example.com/x"}`, "curl --url=https://example.com/x"},
		{`{"token":"t0k3n","secret":"s"}`, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := summarize([]byte(tt.input), nil); got != tt.want {
			t.Errorf("summarize(%s) = %q, want %q", tt.input, got, tt.want)
		}
	}
}

// Codex's recorded runs give the same kinds of events.
func TestRunCodexJSONEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		want    []string
		wantErr bool
	}{
		{"fresh.jsonl", []string{
			`tool_start shell item_1 "echo hi from a command"`, `tool_end shell item_1`,
			`text "Hello Ann.\n\nThe answer is 42."`,
			`result "Hello Ann.\n\nThe answer is 42." session=` + codexThread + ` error=false`,
		}, false},
		{"turn-failed.jsonl", []string{`result "" session=01a2129f-8e24-7752-b5ed-41a1528e2dc3 error=true`}, true},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			events, res, err := runEvents(t, OutputCodexJSON, codexEvents(t, tt.fixture), Spec{})
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if !slices.Equal(briefs(events), tt.want) {
				t.Errorf("events:\n%s\nwant:\n%s", strings.Join(briefs(events), "\n"), strings.Join(tt.want, "\n"))
			}
			if last := events[len(events)-1]; !tt.wantErr && (last.Usage != res.Usage || res.Usage.IsZero()) {
				t.Errorf("result event's usage %+v, want the turn's %+v", last.Usage, res.Usage)
			}
		})
	}
}

func TestRunCodexJSONEventsSeparateMessages(t *testing.T) {
	t.Parallel()
	stdout := `{"type":"thread.started","thread_id":"th-2"}
garbage
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Let me look."}}
{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"switchboard","tool":"send","arguments":{"chat_jid":"web:side","text":"hi"},"status":"in_progress"}}
{"type":"item.started","item":{"id":"item_2","type":"web_search","query":"weather"}}
{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"switchboard","tool":"send","status":"completed"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"Found it."}}
{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}
`
	events, res, err := runEvents(t, OutputCodexJSON, stdout, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`text "Let me look."`,
		`tool_start mcp__switchboard__send item_1 "web:side"`,
		`tool_start web_search item_2 "weather"`,
		`tool_end mcp__switchboard__send item_1`,
		`text "\n\nFound it."`,
		`tool_end web_search item_2`,
		`result "Found it." session=th-2 error=false`,
	}
	if !slices.Equal(briefs(events), want) || res.Reply != "Found it." {
		t.Errorf("reply %q, events:\n%s\nwant:\n%s", res.Reply, strings.Join(briefs(events), "\n"), strings.Join(want, "\n"))
	}
}

// A text agent's stdout lines are text events; its usage trailer is not
// reply text.
func TestRunTextEvents(t *testing.T) {
	t.Parallel()
	stdout := "Hello\n\nworld\n" + `{"switchboard_usage": {"cost_usd": 0.25}}` + "\n"
	events, res, err := runEvents(t, OutputText, stdout, Spec{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`text "Hello\n"`, `text "\n"`, `text "world\n"`, `result "Hello\n\nworld" session=old error=false`}
	if !slices.Equal(briefs(events), want) || events[len(events)-1].Usage.CostUSD != 0.25 || res.Reply != "Hello\n\nworld" {
		t.Errorf("reply %q, events:\n%s\nwant:\n%s", res.Reply, strings.Join(briefs(events), "\n"), strings.Join(want, "\n"))
	}
	events, _, err = runEvents(t, OutputNone, stdout, Spec{})
	if err != nil || len(events) != 0 {
		t.Errorf("output none: events %q, err %v; want none", briefs(events), err)
	}
}

// Events arrive while the agent runs, not when it exits: the agent prints
// part of its stream, then waits until the test has seen an event from it
// before it prints the rest and exits. Were events only delivered at the
// end, the turn would time out.
func TestRunEventsArriveWhileTheAgentRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		output  Output
		stdout  string
		firstAt int // lines printed before the agent waits
	}{
		{OutputClaudeStream, streamFixture(t, "long.jsonl"), 8},
		{OutputCodexJSON, codexEvents(t, "fresh.jsonl"), 4},
		{OutputText, "one\ntwo\nthree\n", 1},
	} {
		t.Run(string(tc.output), func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "stdout")
			if err := os.WriteFile(file, []byte(tc.stdout), 0o644); err != nil {
				t.Fatal(err)
			}
			gate := testagent.NewGate(t, 10*time.Second)
			body := `head -n "$3" "$1"; read -r go < "$2"; tail -n +$(($3 + 1)) "$1"; echo "$go" >&2`
			cmd := testagent.Script(t, body, file, gate.Path, fmt.Sprint(tc.firstAt))
			var log eventLog
			onEvent := func(e Event) {
				log.add(e)
				gate.Seen()
			}
			res, err := Run(t.Context(), Spec{Command: cmd, Output: tc.output, Timeout: 20 * time.Second}, Input{OnEvent: onEvent})
			if err != nil {
				t.Fatalf("%v (stderr %q)", err, res.Stderr)
			}
			if err := gate.Wait(); err != nil {
				t.Fatal(err)
			}
			events := log.all()
			if strings.TrimSpace(res.Stderr) != "released" || len(events) < 2 || events[len(events)-1].Kind != EventResult {
				t.Errorf("stderr %q, events %q; want the agent released by the first event, then the rest and the result", res.Stderr, briefs(events))
			}
		})
	}
}
