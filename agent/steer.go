package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"
)

// InputFormat is how an agent takes its input (config agent.input).
type InputFormat string

const (
	// InputPrompt: the prompt is written to stdin, which is then closed.
	// The zero InputFormat means it too.
	InputPrompt InputFormat = "prompt"
	// InputStreamJSON: Claude Code's --input-format stream-json (with
	// --output-format stream-json --verbose: output claude-stream). The
	// prompt is the first user message, one JSON line on stdin; stdin
	// stays open for the messages the turn is steered with (Steering),
	// each another user message, and is closed at the first result event
	// (every input written precedes it; Claude Code still answers those).
	InputStreamJSON InputFormat = "stream-json"
)

// ParseInputFormat returns the InputFormat named s (prompt or stream-json).
func ParseInputFormat(s string) (InputFormat, error) {
	switch f := InputFormat(s); f {
	case InputPrompt, InputStreamJSON:
		return f, nil
	}
	return "", fmt.Errorf("unknown agent input %q; want prompt or stream-json", s)
}

// Steering takes messages into a running turn whose agent reads
// stream-json input (Input.Steer): Send writes each as a further user
// message on the agent's stdin, until stdin closes. Each message has an
// id (the gateway's message seq); Took says afterwards which ones the
// agent took, so that the others go to the next turn and none twice. A
// Steering serves one turn; its methods are safe for concurrent use.
type Steering struct {
	wmu    sync.Mutex     // one write at a time: the prompt first, then each message whole
	mu     sync.Mutex     // the fields below; never held while writing
	w      io.WriteCloser // the agent's stdin; nil before start and after close
	closed bool
	sent   int
	took   []int64 // ids written into the agent (or, forwarded, as Settle says)
	// forward, when set (Forward), takes each message instead: a remote
	// runner hands it to the worker running the turn.
	forward func(id int64, text string) bool
}

// Forward makes Send hand each message to send, which reports whether it
// was handed on (it must not wait for the agent): how a runner whose agent
// runs elsewhere (package remote) takes steering. Which of them the agent
// took is then what the runner learns from where it ran (Settle); until
// then Took reports false. Send reports false again after Close.
func (s *Steering) Forward(send func(id int64, text string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forward = send
}

// Settle records ids as the messages the agent took, replacing what was
// known: a forwarding runner calls it with what the turn's outcome lists.
func (s *Steering) Settle(ids []int64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.took = slices.Clone(ids)
}

// Took reports whether the agent took the message id (Send, Settle).
func (s *Steering) Took(id int64) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.took, id)
}

// Taken lists the ids of the messages the agent took, in order.
func (s *Steering) Taken() []int64 {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.took)
}

// Close ends the input: Send reports false from now on.
func (s *Steering) Close() { s.close() }

// NewSteering returns a Steering for one turn.
func NewSteering() *Steering { return &Steering{} }

// Send writes text, the message id, into the running agent as a user
// message. It reports false, writing nothing, when the agent takes no more
// input (it has not started, its stdin was closed at a result, or it
// exited): the message then belongs to the next turn. Forwarded (Forward),
// true means handed on: Took tells later whether the agent took it.
func (s *Steering) Send(id int64, text string) bool {
	if s == nil {
		return false
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if fwd := s.forwarder(); fwd != nil {
		if !fwd(id, text) {
			return false
		}
		s.mu.Lock()
		s.sent++
		s.mu.Unlock()
		return true
	}
	w := s.writer()
	if w == nil {
		return false
	}
	if _, err := w.Write(userMessageLine(text)); err != nil {
		s.close()
		return false
	}
	s.mu.Lock()
	s.sent++
	s.took = append(s.took, id)
	s.mu.Unlock()
	return true
}

// forwarder is Forward's send while the input is open.
func (s *Steering) forwarder() func(int64, string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.forward
}

// writer is stdin while it is open.
func (s *Steering) writer() io.WriteCloser {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.w
}

// Sent is how many messages Send wrote.
func (s *Steering) Sent() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// open starts the input: the prompt as the first user message, stdin
// kept open for Send. A write error closes it.
func (s *Steering) open(w io.WriteCloser, prompt string) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = w.Close()
		return
	}
	s.w = w
	s.mu.Unlock()
	if _, err := w.Write(userMessageLine(prompt)); err != nil {
		s.close()
	}
}

// close closes stdin (at a result event, or when the agent exited),
// which also ends a write blocked on it; Send writes nothing after it.
func (s *Steering) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.w != nil {
		_ = s.w.Close()
		s.w = nil
	}
}

// userMessageLine is one user message of Claude Code's stream-json input.
func userMessageLine(text string) []byte {
	type block struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	type message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	b, _ := json.Marshal(struct {
		Type    string  `json:"type"`
		Message message `json:"message"`
	}{"user", message{"user", []block{{"text", text}}}})
	return append(b, '\n')
}
