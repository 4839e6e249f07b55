//go:build interop && linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testwait"
)

const (
	codexLiveLead    = "Let me check that the service is ready first."
	codexLiveCommand = "sleep 2 && echo ready"
	codexLiveFinal   = "All set: the service printed ready."
)

// codexLiveAPI is a Responses API playing one turn in two model calls:
// first a message (codexLiveLead) and a command (codexLiveCommand), then,
// given the command's output, the final answer.
func codexLiveAPI(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := codexReq{outputs: map[string]string{}}
		if json.Unmarshal(body, &req.parsed) == nil {
			req.read()
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" || req.promptID == "" {
			http.Error(w, `{"error": {"message": "the fake serves POST /v1/responses with a switchboard prompt"}}`, http.StatusNotFound)
			return
		}
		id := req.promptID
		var items []map[string]any
		if req.outputs["wait-"+id] == "" {
			args, _ := json.Marshal(map[string]any{"cmd": codexLiveCommand, "tty": false})
			items = []map[string]any{
				{"type": "message", "id": "msg-lead-" + id, "role": "assistant",
					"content": []map[string]any{{"type": "output_text", "text": codexLiveLead, "annotations": []any{}}}},
				{"type": "function_call", "id": "fc-wait-" + id, "call_id": "wait-" + id, "name": "exec_command", "arguments": string(args)},
			}
		} else {
			items = []map[string]any{{"type": "message", "id": "msg-final-" + id, "role": "assistant",
				"content": []map[string]any{{"type": "output_text", "text": codexLiveFinal, "annotations": []any{}}}}}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		respID := "resp-" + id + fmt.Sprint(len(req.outputs))
		events := []map[string]any{{"type": "response.created", "response": map[string]any{"id": respID}}}
		for i, it := range items {
			events = append(events,
				map[string]any{"type": "response.output_item.added", "output_index": i, "item": it},
				map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
		}
		events = append(events, map[string]any{"type": "response.completed", "response": map[string]any{"id": respID, "usage": map[string]any{
			"input_tokens": 10, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": 5, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 15}}})
		for _, ev := range events {
			b, _ := json.Marshal(ev)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev["type"], b)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestLiveCodex: the real Codex CLI with output codex-json (the documented
// agent block) answering in a Telegram private chat: while it runs, drafts
// show its first message and then the command it runs; then the final
// answer arrives once, as the one message the bot sent, stored once.
func TestLiveCodex(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test with Codex from npm and the binary")
	}
	requireBwrap(t)
	codex := codexInstall(t)
	bin := switchboardBinary(t)
	api := codexLiveAPI(t)
	tg := telegramtest.New(t)

	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	codexWriteConfig(t, filepath.Join(home, ".codex"), api.URL+"/v1")
	cfg := `data_dir: ./data
operator_folder: root
log: {level: debug, format: json}
` + codexAgentYAML(t, filepath.Join(codex, "node_modules")) + fmt.Sprintf(`adapters:
  web: {enabled: true, listen: "127.0.0.1:0"}
  telegram: {enabled: true, token: %q, api_url: %q, stream_interval: %s}
admin: {listen: ""}
groups:
  - folder: root
  - folder: main
routes:
  - {match: {platform: telegram}, target: main}
`, telegramtest.Token, tg.URL(), liveInterval)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir,
		"HOME="+home,
		"PATH="+strings.Join([]string{filepath.Join(codex, "node_modules", ".bin"), filepath.Dir(bin), os.Getenv("PATH")}, string(os.PathListSeparator)),
		"OPENAI_API_KEY=sk-codex-live")

	const chat = telegramtest.UserID
	msg, _ := tg.UserMessage(chat, "is the service ready?", false, 0, 0)
	tg.Push("message", msg)
	start := time.Now()
	testwait.For(t, codexTurnWithin, "Codex's final answer", func() bool {
		return slices.Contains(tg.Shown(chat), codexLiveFinal)
	})
	t.Logf("message → Codex's final answer in the chat: %s", time.Since(start).Round(time.Millisecond))
	testwait.For(t, codexTurnWithin, "the turn to end", func() bool { return len(g.records("turn done", "", "")) == 1 })

	var drafts []string
	for _, d := range tg.Drafts(chat) {
		drafts = append(drafts, d.Text)
	}
	lead := slices.IndexFunc(drafts, func(s string) bool { return strings.HasPrefix(s, codexLiveLead) })
	running := slices.IndexFunc(drafts, func(s string) bool { return strings.Contains(s, codexLiveCommand) })
	if lead < 0 || running < 0 {
		t.Errorf("drafts %q; want Codex's first message, and the command it runs, before the final", drafts)
	}
	var bot []string
	for _, m := range tg.Messages(chat) {
		if m.FromBot {
			bot = append(bot, m.Text)
		}
	}
	if shown := tg.Shown(chat); !slices.Equal(bot, []string{codexLiveFinal}) || shown[len(shown)-1] != codexLiveFinal {
		t.Errorf("the bot's messages %q, the chat showed %q last; want the final once, last", bot, shown[len(shown)-1])
	}
	if got := botStored(t, dir, "telegram:user/7"); !slices.Equal(got, []string{codexLiveFinal}) {
		t.Errorf("stored bot messages %q; want the final once", got)
	}
	if t.Failed() {
		t.Logf("the chat showed %q", tg.Shown(chat))
	}
}
