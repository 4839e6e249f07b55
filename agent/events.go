package agent

import (
	"bytes"
	"strings"
)

// EventKind is what an Event says about the turn's output.
type EventKind string

const (
	// EventText: Text is the next piece of the reply text. The texts of a
	// turn's text events, in order, are the reply so far; a new text block
	// after earlier text starts with a blank line ("\n\n").
	EventText EventKind = "text"
	// EventReplace: Text is the whole reply text so far, replacing what
	// the events before it added up to: Claude Code dropped a broken
	// stream's blocks, or its non-streamed retry brought the full text in
	// its assistant message.
	EventReplace EventKind = "replace"
	// EventToolStart: a tool call begins. Tool is the tool's name, Summary
	// a short one-line summary of its input (Summarize), ToolID the
	// agent's id of the call when it has one.
	EventToolStart EventKind = "tool_start"
	// EventToolEnd: the call EventToolStart announced ended (Tool and
	// ToolID as there).
	EventToolEnd EventKind = "tool_end"
	// EventResult: the agent finished an answer. Text is its final text
	// (what Result.Reply becomes, untrimmed), SessionID and Usage what
	// the agent reported with it, when it did. IsError: the agent reported
	// a failure; Text is then empty (an API error's synthetic message is
	// never reply text).
	EventResult EventKind = "result"
)

// Event is one step of a turn's output as the agent prints it, for a live
// reply: Input.OnEvent receives them while the turn runs. The Result of
// Run is what it always was; events come in addition to it.
type Event struct {
	Kind      EventKind
	Text      string // text: the piece; replace: the whole reply so far; result: the final text
	Tool      string // tool_start, tool_end: the tool's name
	ToolID    string // tool_start, tool_end: the agent's id of the call, if any
	Summary   string // tool_start: the input in one short line without secrets
	SessionID string // result: the session the agent reported, if any
	Usage     Usage  // result: what the agent reported it cost, if anything (Checked)
	IsError   bool   // result: the agent reported a failure
}

// lineParser reads an agent's stdout one line at a time (without its
// newline) as the agent prints it, and emits events.
type lineParser interface {
	line(b []byte)
	// end is called once after the last line, when stdout is closed.
	end()
}

// lineWriter splits what it is written into lines and hands each to its
// parser. A line longer than max is skipped whole (counted in skipped),
// so that one huge line (a tool's output, a file's contents) neither
// grows memory without bound nor stops the lines after it.
type lineWriter struct {
	p       lineParser
	max     int
	buf     []byte
	over    bool // the current line exceeded max: drop it up to its newline
	skipped int
}

func (w *lineWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if !w.over {
			if len(w.buf)+len(chunk) > w.max {
				w.over, w.buf = true, w.buf[:0]
			} else {
				w.buf = append(w.buf, chunk...)
			}
		}
		if i < 0 {
			break
		}
		w.flushLine()
		b = b[i+1:]
	}
	return n, nil
}

func (w *lineWriter) flushLine() {
	if w.over {
		w.skipped++
	} else {
		w.p.line(bytes.TrimRight(w.buf, "\r"))
	}
	w.buf, w.over = w.buf[:0], false
}

// close hands on a last line without a newline and ends the parser.
func (w *lineWriter) close() {
	if len(w.buf) > 0 || w.over {
		w.flushLine()
	}
	w.p.end()
}

// eventParser is the parser of an output kind's stdout that emits events
// to emit, or nil when that kind has none (none). secrets never appear in
// a tool call's summary.
func eventParser(o Output, emit func(Event), secrets []string) lineParser {
	switch o {
	case OutputClaudeStream:
		return newClaudeStream(emit, secrets)
	case OutputCodexJSON:
		if emit == nil {
			emit = func(Event) {}
		}
		return &codexStream{emit: emit, secrets: secrets}
	case OutputNone:
		return nil
	}
	return &textStream{emit: emit}
}

// textStream makes each line of a text agent's stdout a text event
// ("line\n"). The usage trailer (TrailerKey) is not reply text and is held
// back.
type textStream struct {
	emit func(Event)
}

func (s *textStream) line(b []byte) {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' && bytes.Contains(t, []byte(TrailerKey)) {
		if body, _ := splitTrailer(t); len(body) == 0 {
			return
		}
	}
	s.emit(Event{Kind: EventText, Text: strings.ToValidUTF8(string(b), "\uFFFD") + "\n"})
}

func (s *textStream) end() {}
