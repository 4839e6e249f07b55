// Command record runs the real Claude Code CLI against a fake Anthropic
// Messages API on 127.0.0.1 and writes what it prints into
// agent/testdata/claude-stream (see the README there):
//
//	go run ./agent/testdata/claude-stream/record -claude PATH/TO/claude -out agent/testdata/claude-stream
//
// The fake plays a scripted model by the prompt's first word: "long" (an
// answer in many text deltas), "tool" (a Bash tool call, then an answer),
// "retry" (the first stream ends after a few deltas with no block
// complete; Claude Code streams the answer again), "whole" (the first
// stream brings no event; Claude Code retries without streaming), "fail"
// (the request is refused with a 400).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// longAnswer is streamed a few words per delta.
const longAnswer = "Here is a longer answer, streamed in many small pieces so that a live reply can grow. " +
	"First, the gateway reads each text delta as it arrives. Second, it coalesces them. " +
	"Third, the platform shows the text so far. Finally, the result carries the whole answer."

const toolAnswer = "The command printed: hi from bash"

const retryAnswer = "This answer came whole, after the stream broke."

// usage is what every message reports, as for testdata/claude-json.
var startUsage = map[string]int{"input_tokens": 1234, "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 3000, "output_tokens": 1}

type fake struct {
	mu     sync.Mutex
	broken map[string]bool // prompts whose first stream was broken
	log    bytes.Buffer
}

type request struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Tools    []any  `json:"tools"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

func blocks(raw json.RawMessage) []block {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// scenario is the first word of the first user message naming one, and
// whether a tool result came back since.
func (r *request) scenario() (string, bool) {
	name, toolDone := "", false
	for _, m := range r.Messages {
		for _, b := range blocks(m.Content) {
			if m.Role == "user" && b.Type == "text" && name == "" {
				for _, s := range []string{"long", "tool", "retry", "whole", "fail"} {
					if strings.HasPrefix(strings.TrimSpace(b.Text), s+":") {
						name = s
					}
				}
			}
			if b.Type == "tool_result" {
				toolDone = true
			}
		}
	}
	return name, toolDone
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/messages" {
		if r.URL.Path == "/v1/messages/count_tokens" {
			io.WriteString(w, `{"input_tokens": 1000}`)
			return
		}
		http.NotFound(w, r)
		return
	}
	var req request
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	name, toolDone := req.scenario()
	f.mu.Lock()
	fmt.Fprintf(&f.log, "%s stream=%v tools=%d scenario=%q tool_done=%v\n", r.URL.Path, req.Stream, len(req.Tools), name, toolDone)
	f.mu.Unlock()
	switch {
	case name == "" || len(req.Tools) == 0: // Claude Code's side queries
		answer(w, &req, []map[string]any{{"type": "text", "text": "ok"}}, "end_turn", 0)
	case name == "long":
		answer(w, &req, []map[string]any{{"type": "text", "text": longAnswer}}, "end_turn", 0)
	case name == "tool" && !toolDone:
		in := json.RawMessage(`{"command":"echo hi from bash","description":"Print a greeting"}`)
		answer(w, &req, []map[string]any{{"type": "text", "text": "Let me run that."}, {"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": in}}, "tool_use", 0)
	case name == "tool":
		answer(w, &req, []map[string]any{{"type": "text", "text": toolAnswer}}, "end_turn", 0)
	case name == "retry":
		f.mu.Lock()
		first := !f.broken["retry"] && req.Stream
		if first {
			if f.broken == nil {
				f.broken = map[string]bool{}
			}
			f.broken["retry"] = true
		}
		f.mu.Unlock()
		breakAfter := 0
		if first {
			breakAfter = 3
		}
		answer(w, &req, []map[string]any{{"type": "text", "text": retryAnswer}}, "end_turn", breakAfter)
	case name == "whole":
		f.mu.Lock()
		first := !f.broken["whole"] && req.Stream
		if first {
			if f.broken == nil {
				f.broken = map[string]bool{}
			}
			f.broken["whole"] = true
		}
		f.mu.Unlock()
		if first { // a stream without a single event
			w.Header().Set("Content-Type", "text/event-stream")
			return
		}
		answer(w, &req, []map[string]any{{"type": "text", "text": retryAnswer}}, "end_turn", 0)
	case name == "fail":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"the fake refuses this prompt"}}`)
	}
}

// answer writes the blocks as one message: server-sent events a few words
// at a time when the request streams, else one JSON object. breakAfter > 0
// ends the stream after that many text deltas, before any block completed
// (Claude Code then retries the request without streaming).
func answer(w http.ResponseWriter, req *request, content []map[string]any, stop string, breakAfter int) {
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "msg_whole", "type": "message", "role": "assistant", "model": req.Model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": withOutput(56)})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_stream", "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": startUsage}})
	deltas := 0
	for i, b := range content {
		switch b["type"] {
		case "tool_use":
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in := string(b["input"].(json.RawMessage))
			for _, part := range pieces(in, 12) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		default:
			event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for _, part := range words(b["text"].(string), 3) {
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
					"delta": map[string]any{"type": "text_delta", "text": part}})
				if deltas++; breakAfter > 0 && deltas == breakAfter {
					return // the stream ends with no block completed
				}
			}
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 56}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

func withOutput(n int) map[string]int {
	u := map[string]int{}
	for k, v := range startUsage {
		u[k] = v
	}
	u["output_tokens"] = n
	return u
}

// words cuts s into pieces of n words (each but the first with its
// leading space).
func words(s string, n int) []string {
	var out []string
	ws := strings.SplitAfter(s, " ")
	for i := 0; i < len(ws); i += n {
		out = append(out, strings.Join(ws[i:min(i+n, len(ws))], ""))
	}
	return out
}

// pieces cuts s into pieces of n bytes.
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		out, s = append(out, s[:n]), s[n:]
	}
	return append(out, s)
}

func main() {
	claude := flag.String("claude", "claude", "the Claude Code binary")
	out := flag.String("out", "agent/testdata/claude-stream", "where the recordings go")
	flag.Parse()
	f := &fake{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	home, err := os.MkdirTemp("", "claude-home-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte("{}\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		log.Fatal(err)
	}
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=sk-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1"}
	run := func(file string, args ...string) {
		cmd := exec.Command(*claude, args...)
		cmd.Dir, cmd.Env = work, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		log.Printf("%s: %v (stderr %q)", file, err, stderr.String())
		if err := os.WriteFile(filepath.Join(*out, file), bytes.ReplaceAll(stdout.Bytes(), []byte(home), []byte("/home/rec")), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	stream := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--dangerously-skip-permissions"}
	run("help.txt", "--help")
	run("long.jsonl", append(stream, "long: tell me a longer story")...)
	run("long.json", "-p", "--output-format", "json", "--dangerously-skip-permissions", "long: tell me a longer story")
	run("tool.jsonl", append(stream, "tool: run echo hi from bash")...)
	run("retry.jsonl", append(stream, "retry: answer despite a broken stream")...)
	run("whole.jsonl", append(stream, "whole: answer despite an empty stream")...)
	run("fail.jsonl", append(stream, "fail: this request is refused")...)
	log.Printf("requests:\n%s", f.log.String())
}
