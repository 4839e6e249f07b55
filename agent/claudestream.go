package agent

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// OutputClaudeStream: stdout is Claude Code's `--output-format stream-json
// --verbose --include-partial-messages` (newline-delimited JSON, read as it
// comes). The reply, session and usage are its last `result` event's, as
// claude-json reads them; on the way, its text deltas, tool calls and tool
// results become Events (Input.OnEvent). Recorded output of Claude Code
// 2.1.332 is in testdata/claude-stream.
const OutputClaudeStream Output = "claude-stream"

// maxToolInput bounds the streamed input of one tool call kept for its
// summary; the assistant message that follows carries it whole anyway.
const maxToolInput = 64 << 10

// claudeStream reads Claude Code's stream-json output line by line. Only
// the main conversation counts: lines of a subagent (parent_tool_use_id
// set) are not the reply.
type claudeStream struct {
	emit    func(Event)
	secrets []string // never in a summary (envSecrets)
	// segs are the reply's text blocks so far; the reply is the non-empty
	// ones joined by a blank line (reply). Bytes, so that a delta is an
	// append: a reply of n deltas costs n, not n².
	segs [][]byte
	// The message being streamed: its id, the index in segs of its first
	// text block, how many of its text blocks an assistant event has
	// confirmed, its content blocks' segments and its tool calls not yet
	// announced, by content block index.
	msgID     string
	msgFirst  int
	confirmed int
	blockSeg  map[int]int
	pending   map[int]*pendingTool
	running   []pendingTool   // announced, not ended, in order
	seen      map[string]bool // tool call ids announced
	// resultLine is the last result event as printed (Run's Result is
	// made of it).
	resultLine []byte
	// sessionID is the session its system init line named: what a turn
	// stopped before its result resumes.
	sessionID string
	// replies are the texts of the result events that were no error, in
	// order; afterResult, when set, runs after each result event (the
	// stream-json input closes stdin).
	replies     []string
	afterResult func()
}

type pendingTool struct {
	id, name string
	input    []byte
}

// claudeLine is the part of one stream-json line that the parser reads.
type claudeLine struct {
	Type            string         `json:"type"`
	Subtype         string         `json:"subtype"`
	SessionID       string         `json:"session_id"`
	ParentToolUseID string         `json:"parent_tool_use_id"`
	IsAPIError      bool           `json:"is_api_error_message"`
	Event           *claudeEvent   `json:"event"`
	Message         *claudeMessage `json:"message"`
	// AbandonedBlocks on a message_stop: Claude Code gave up the stream
	// from this content block on and asks the API again.
	AbandonedBlocks *struct {
		FromBlockIndex int `json:"from_block_index"`
	} `json:"abandoned_blocks"`
}

// claudeEvent is a Messages API stream event that Claude Code passes on.
type claudeEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		ID string `json:"id"`
	} `json:"message"`
	ContentBlock *claudeBlock `json:"content_block"`
	Delta        *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
	} `json:"delta"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

func (m *claudeMessage) blocks() []claudeBlock {
	var bs []claudeBlock
	if m == nil || json.Unmarshal(m.Content, &bs) != nil {
		return nil
	}
	return bs
}

func newClaudeStream(emit func(Event), secrets []string) *claudeStream {
	if emit == nil {
		emit = func(Event) {}
	}
	return &claudeStream{emit: emit, secrets: secrets, blockSeg: map[int]int{}, pending: map[int]*pendingTool{}, seen: map[string]bool{}}
}

// line reads one line; anything that is not a JSON object of a known
// shape is skipped.
func (s *claudeStream) line(b []byte) {
	b = bytes.TrimSpace(b)
	var l claudeLine
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &l) != nil || l.ParentToolUseID != "" {
		return
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" && l.SessionID != "" {
			s.sessionID = l.SessionID
		}
	case "stream_event":
		if l.Event != nil {
			s.streamEvent(l.Event)
		}
		if l.AbandonedBlocks != nil {
			s.abandon(l.AbandonedBlocks.FromBlockIndex)
		}
	case "assistant":
		// A synthetic API-error message is never reply text.
		if !l.IsAPIError && l.Message != nil {
			s.assistant(l.Message)
		}
	case "user":
		for _, b := range l.Message.blocks() {
			if b.Type == "tool_result" {
				s.endTool(b.ToolUseID)
			}
		}
	case "result":
		s.result(b)
	}
}

func (s *claudeStream) streamEvent(ev *claudeEvent) {
	switch ev.Type {
	case "message_start":
		id := ""
		if ev.Message != nil {
			id = ev.Message.ID
		}
		if s.newMessage(id) {
			s.emit(Event{Kind: EventReplace, Text: s.reply()})
		}
	case "content_block_start":
		if cb := ev.ContentBlock; cb != nil && cb.Type == "tool_use" {
			s.pending[ev.Index] = &pendingTool{id: cb.ID, name: cb.Name}
		}
	case "content_block_delta":
		switch d := ev.Delta; {
		case d == nil:
		case d.Type == "text_delta":
			s.appendText(ev.Index, d.Text)
		case d.Type == "input_json_delta":
			if t := s.pending[ev.Index]; t != nil && len(t.input)+len(d.PartialJSON) <= maxToolInput {
				t.input = append(t.input, d.PartialJSON...)
			}
		}
	case "content_block_stop":
		if t := s.pending[ev.Index]; t != nil {
			delete(s.pending, ev.Index)
			s.startTool(t.id, t.name, t.input)
		}
	}
}

// newMessage begins the model's next message: the tools of the one
// before it have run, and the text it streamed that no assistant event
// confirmed was a broken stream's, which the retry replaces. It reports
// whether that changed the reply so far.
func (s *claudeStream) newMessage(id string) (changed bool) {
	s.endTools()
	before := s.reply()
	s.segs = s.segs[:min(len(s.segs), s.msgFirst+s.confirmed)]
	s.msgID, s.msgFirst, s.confirmed = id, len(s.segs), 0
	clear(s.blockSeg)
	clear(s.pending)
	return s.reply() != before
}

// reply is the text the events so far add up to.
func (s *claudeStream) reply() string {
	var b []byte
	for _, t := range s.segs {
		if len(t) > 0 {
			if len(b) > 0 {
				b = append(b, "\n\n"...)
			}
			b = append(b, t...)
		}
	}
	return string(b)
}

func nonEmpty(t []byte) bool { return len(t) > 0 }

func (s *claudeStream) appendText(block int, text string) {
	if text == "" {
		return
	}
	si, ok := s.blockSeg[block]
	if !ok {
		si = len(s.segs)
		s.segs = append(s.segs, nil)
		s.blockSeg[block] = si
	}
	if slices.ContainsFunc(s.segs[si+1:], nonEmpty) {
		// Text for a block before the last one: not an append.
		s.segs[si] = append(s.segs[si], text...)
		s.emit(Event{Kind: EventReplace, Text: s.reply()})
		return
	}
	sep := ""
	if len(s.segs[si]) == 0 && slices.ContainsFunc(s.segs[:si], nonEmpty) {
		sep = "\n\n"
	}
	s.segs[si] = append(s.segs[si], text...)
	s.emit(Event{Kind: EventText, Text: sep + text})
}

// abandon drops the current message's blocks from index from on: Claude
// Code gave up that stream (abandoned_blocks) and asks again.
func (s *claudeStream) abandon(from int) {
	before := s.reply()
	cut := len(s.segs)
	for block, si := range s.blockSeg {
		if block >= from {
			cut = min(cut, si)
			delete(s.blockSeg, block)
		}
	}
	for block := range s.pending {
		if block >= from {
			delete(s.pending, block)
		}
	}
	s.segs = s.segs[:cut]
	s.confirmed = min(s.confirmed, max(0, cut-s.msgFirst))
	if after := s.reply(); after != before {
		s.emit(Event{Kind: EventReplace, Text: after})
	}
}

// assistant reads a whole assistant message (or, streamed, the message's
// latest block): tool calls not announced yet start, and text that differs
// from what was streamed for it (a non-streamed retry brings the full
// text here) replaces it.
func (s *claudeStream) assistant(m *claudeMessage) {
	changed := false
	if m.ID != s.msgID {
		changed = s.newMessage(m.ID) // not streamed
	}
	var texts []string
	for _, b := range m.blocks() {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			s.startTool(b.ID, b.Name, b.Input)
		}
	}
	for i, t := range texts {
		k := s.msgFirst + s.confirmed + i
		switch {
		case k < len(s.segs) && string(s.segs[k]) != t:
			s.segs[k], changed = []byte(t), true
		case k >= len(s.segs):
			s.segs = append(s.segs, []byte(t))
			changed = changed || t != ""
		}
	}
	s.confirmed += len(texts)
	if changed {
		s.emit(Event{Kind: EventReplace, Text: s.reply()})
	}
}

func (s *claudeStream) startTool(id, name string, input []byte) {
	if id != "" && s.seen[id] {
		return
	}
	if id != "" {
		s.seen[id] = true
	}
	s.running = append(s.running, pendingTool{id: id, name: name})
	s.emit(Event{Kind: EventToolStart, Tool: name, ToolID: id, Summary: summarize(input, s.secrets)})
}

func (s *claudeStream) endTool(id string) {
	i := slices.IndexFunc(s.running, func(t pendingTool) bool { return t.id == id })
	if i < 0 {
		return
	}
	t := s.running[i]
	s.running = slices.Delete(s.running, i, i+1)
	s.emit(Event{Kind: EventToolEnd, Tool: t.name, ToolID: t.id})
}

// endTools ends every announced call that has not ended.
func (s *claudeStream) endTools() {
	for len(s.running) > 0 {
		s.endTool(s.running[0].id)
	}
}

// result ends an answer: its result event, then the next answer (with
// stream-json input, Claude Code may give several) starts afresh.
func (s *claudeStream) result(raw []byte) {
	s.endTools()
	s.resultLine = slices.Clone(raw)
	var cr claudeResult
	_ = json.Unmarshal(raw, &cr)
	ev := Event{Kind: EventResult, SessionID: cr.SessionID, Usage: parseClaudeUsage(raw), IsError: cr.IsError || cr.Result == nil}
	if !ev.IsError {
		ev.Text = strings.TrimSpace(*cr.Result)
		s.replies = append(s.replies, ev.Text)
	}
	s.emit(ev)
	if s.afterResult != nil {
		s.afterResult()
	}
	s.segs, s.msgID, s.msgFirst, s.confirmed = nil, "", 0, 0
	clear(s.blockSeg)
	clear(s.pending)
}

func (s *claudeStream) end() { s.endTools() }

// outcome is the turn's result event read as claude-json reads its
// object, or why there is none.
func (s *claudeStream) outcome(stdout []byte, truncated bool) (claudeResult, error) {
	if s.resultLine != nil {
		return parseClaudeJSON(s.resultLine, false)
	}
	why := "no result event"
	if len(bytes.TrimSpace(stdout)) == 0 {
		why = "stdout is empty"
	}
	if truncated {
		why += " (stdout shown is cut)"
	}
	return claudeResult{}, failed(nil, "agent output is not Claude Code stream-json (output: claude-stream): %s; stdout begins %q; run claude with --output-format stream-json --verbose --include-partial-messages or set agent.output to claude-json",
		why, clip(string(bytes.TrimSpace(stdout))))
}
