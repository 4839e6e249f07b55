package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
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
	Events    int    // JSON event lines read
	lastError string // the last error event's message since turn.completed
}

// codexEvent is the part of one event line that Run reads.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"` // type "error"
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"` // type "turn.failed"
	Item  *codexItem  `json:"item"`
	Usage *CodexUsage `json:"usage"`
}

// codexItem is an item.started or item.completed event's item: an
// agent_message's text, or what a tool call (command_execution,
// mcp_tool_call, web_search) does.
type codexItem struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Command   json.RawMessage `json:"command"` // a string, or argv
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Query     string          `json:"query"`
}

// decodeCodexEvent decodes one line of output; ok is false for a line
// that is not a JSON event (skipped).
func decodeCodexEvent(line []byte) (ev codexEvent, ok bool) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Type == "" {
		return codexEvent{}, false
	}
	return ev, true
}

// add reads one event into r.
func (r *codexRun) add(ev codexEvent) {
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
		r.lastError = ""
		if ev.Usage != nil {
			r.Usage = *ev.Usage
		}
	case "turn.failed":
		r.Failure = "turn failed"
		if ev.Error != nil && ev.Error.Message != "" {
			r.Failure = ev.Error.Message
		}
	case "error":
		r.lastError = ev.Message
	}
}

// failure is why the run failed, or "": turn.failed's message, else the
// last error event's when no turn.completed followed it.
func (r *codexRun) failure() string {
	f := r.Failure
	if f == "" && r.lastError != "" && !r.Completed {
		f = r.lastError
	}
	return codexMessage(f)
}

// readCodexEvents reads the event lines of out; lines that are not JSON
// objects are skipped.
func readCodexEvents(out []byte) codexRun {
	var r codexRun
	for _, line := range bytes.Split(out, []byte("\n")) {
		if ev, ok := decodeCodexEvent(line); ok {
			r.add(ev)
		}
	}
	r.Failure = r.failure()
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
	return codexOutcome(readCodexEvents(out), out, truncated)
}

// codexOutcome is the outcome of a finished run r (its events decoded, as
// Run's stream parser reads them whole, or from stdout out as kept).
func codexOutcome(r codexRun, out []byte, truncated bool) (codexRun, error) {
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

// codexStream makes events of `codex exec --json` as it prints them: an
// agent_message is a text event (Codex prints each whole), a command, MCP
// tool call or web search a tool_start when it begins and a tool_end when
// it completes, turn.completed (or turn.failed) the result.
type codexStream struct {
	emit    func(Event)
	secrets []string // never in a summary (envSecrets)
	run     codexRun
	texted  bool              // a text event came in this turn
	running map[string]string // item id → tool name, of calls started
}

func (s *codexStream) line(b []byte) {
	ev, ok := decodeCodexEvent(b)
	if !ok {
		return
	}
	s.run.add(ev)
	switch it := ev.Item; {
	case ev.Type == "item.started" && it != nil:
		if tool, summary := s.tool(it); tool != "" {
			if s.running == nil {
				s.running = map[string]string{}
			}
			s.running[it.ID] = tool
			s.emit(Event{Kind: EventToolStart, Tool: tool, ToolID: it.ID, Summary: summary})
		}
	case ev.Type == "item.completed" && it != nil && it.Type == "agent_message":
		if it.Text != "" {
			sep := ""
			if s.texted {
				sep = "\n\n"
			}
			s.texted = true
			s.emit(Event{Kind: EventText, Text: sep + it.Text})
		}
	case ev.Type == "item.completed" && it != nil:
		if tool, ok := s.running[it.ID]; ok {
			delete(s.running, it.ID)
			s.emit(Event{Kind: EventToolEnd, Tool: tool, ToolID: it.ID})
		}
	case ev.Type == "turn.completed":
		s.endTools()
		s.emit(Event{Kind: EventResult, Text: strings.TrimSpace(s.run.Reply), SessionID: s.run.ThreadID, Usage: s.run.Usage.usage()})
		s.texted = false
	case ev.Type == "turn.failed":
		s.endTools()
		s.emit(Event{Kind: EventResult, SessionID: s.run.ThreadID, IsError: true})
		s.texted = false
	}
}

func (s *codexStream) end() { s.endTools() }

func (s *codexStream) endTools() {
	ids := make([]string, 0, len(s.running))
	for id := range s.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.emit(Event{Kind: EventToolEnd, Tool: s.running[id], ToolID: id})
	}
	clear(s.running)
}

// shellWrapper is how Codex runs a command: /bin/bash -lc '<command>'.
var shellWrapper = regexp.MustCompile(`(?s)^(?:\S*/)?(?:ba|z)?sh -l?c '(.*)'$`)

// tool is the tool name and summary of an item that is a tool call, or
// "" for any other item.
func (s *codexStream) tool(it *codexItem) (name, summary string) {
	switch it.Type {
	case "command_execution":
		var cmd string
		if json.Unmarshal(it.Command, &cmd) != nil {
			var argv []string
			_ = json.Unmarshal(it.Command, &argv)
			cmd = strings.Join(argv, " ")
		}
		if m := shellWrapper.FindStringSubmatch(cmd); m != nil {
			cmd = m[1]
		}
		return "shell", summaryText(cmd, s.secrets)
	case "mcp_tool_call":
		return "mcp__" + it.Server + "__" + it.Tool, summarize(it.Arguments, s.secrets)
	case "web_search":
		return "web_search", summaryText(it.Query, s.secrets)
	}
	return "", ""
}
