package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// OutputCodexJSON: stdout is the JSONL event stream of `codex exec --json`
// (an addition to the contract's text | claude-json | none). The session is
// thread.started's thread_id, the reply the text of the last completed
// agent_message item; turn.failed (or an error event with no
// turn.completed after it) fails the turn with its message. The events
// Codex 0.169 prints are in testdata/codex-json.
const OutputCodexJSON Output = "codex-json"

// CodexUsage is turn.completed's usage. Codex 0.169 reports the running
// total of the whole thread there: a resumed session's figures include its
// earlier turns (the thread's previous report must be subtracted to get one
// turn's). input_tokens counts the cached ones too; output_tokens the
// reasoning ones.
type CodexUsage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
}

// usage is u as a thread's running total of tokens (Checked; no cost:
// agent.price sets one). Input excludes cache reads, as Usage has it.
func (u CodexUsage) usage() Usage {
	if u == (CodexUsage{}) {
		return Usage{}
	}
	in := u.InputTokens
	if in >= u.CachedInputTokens {
		in -= u.CachedInputTokens
	}
	return Usage{InputTokens: in, OutputTokens: u.OutputTokens, CacheReadTokens: u.CachedInputTokens,
		CacheCreationTokens: u.CacheWriteInputTokens, SessionTotal: true}.Checked()
}

// codexRun is what one `codex exec --json` printed.
type codexRun struct {
	ThreadID  string
	Reply     string // the last agent_message's text
	Completed bool   // a turn.completed event came
	Failure   string // turn.failed's message, or the last error event's without turn.completed
	Usage     CodexUsage
	Events    int // JSON event lines read
}

// codexEvent is the part of one event line that Run reads.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"` // type "error"
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"` // type "turn.failed"
	Item *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"`
	Usage *CodexUsage `json:"usage"`
}

// readCodexEvents reads the event lines of out; lines that are not JSON
// objects are skipped.
func readCodexEvents(out []byte) codexRun {
	var r codexRun
	lastError := ""
	for _, line := range bytes.Split(out, []byte("\n")) {
		line = bytes.TrimSpace(line)
		var ev codexEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Type == "" {
			continue
		}
		r.Events++
		switch ev.Type {
		case "thread.started":
			r.ThreadID = ev.ThreadID
		case "item.completed":
			// Items of type "error" are warnings (an unknown model's
			// metadata, …); the turn goes on.
			if ev.Item != nil && ev.Item.Type == "agent_message" {
				r.Reply = ev.Item.Text
			}
		case "turn.completed":
			r.Completed = true
			lastError = ""
			if ev.Usage != nil {
				r.Usage = *ev.Usage
			}
		case "turn.failed":
			r.Failure = "turn failed"
			if ev.Error != nil && ev.Error.Message != "" {
				r.Failure = ev.Error.Message
			}
		case "error":
			lastError = ev.Message
		}
	}
	if r.Failure == "" && lastError != "" && !r.Completed {
		r.Failure = lastError
	}
	r.Failure = codexMessage(r.Failure)
	return r
}

// codexMessage unwraps a model API's error body that Codex passes on as
// its message (`{"error":{"message":"…"}}`).
func codexMessage(s string) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if strings.HasPrefix(s, "{") && json.Unmarshal([]byte(s), &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	return s
}

// parseCodexJSON reads a finished (exit status 0) `codex exec --json` run.
// The returned codexRun carries what was decoded, also on error.
func parseCodexJSON(out []byte, truncated bool) (codexRun, error) {
	r := readCodexEvents(out)
	switch {
	case r.Failure != "":
		return r, failed(nil, "agent reported an error: %s", clip(r.Failure))
	case r.Completed:
		return r, nil
	}
	why := "no turn.completed event"
	if r.Events == 0 {
		why = "no line holds a JSON event"
	}
	if truncated {
		why = fmt.Sprintf("%s (stdout was cut at %d bytes)", why, len(out))
	}
	return r, failed(nil, "agent output is not Codex JSON events (output: codex-json): %s; stdout begins %q; run codex exec with --json or set agent.output to text",
		why, clip(string(bytes.TrimSpace(out))))
}

// codexFailureDetail is what a Codex run that exited non-zero said about
// it: the failed turn's message from its events, else its last "Error: "
// line on stderr (a backtrace may follow it), else "".
func codexFailureDetail(stdout, stderr []byte) string {
	if f := readCodexEvents(stdout).Failure; f != "" {
		return clip(f)
	}
	lines := strings.Split(strings.ToValidUTF8(string(stderr), "\uFFFD"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, "Error: ") {
			return clip(l)
		}
	}
	return ""
}
