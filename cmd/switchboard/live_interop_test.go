//go:build interop && linux

package main

// Live replies (CONTRACT §15) with the real Claude Code CLI (output:
// claude-stream, the flags docs/operating.md gives) against a fake
// Messages API that streams its answers slowly, a delta at a time: the web
// chat as headless Chromium shows it, and the Telegram fake's private chat
// (drafts) and groups (edits).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/adapters/telegram/telegramtest"
	"switchboard/internal/testcdp"
	"switchboard/internal/testwait"
)

const (
	liveDeltas     = 60                    // text deltas of a long answer
	liveDeltaEvery = 20 * time.Millisecond // between two of them
	// liveGroupDeltas make a group's answer (5 s) outlast two of the
	// Telegram adapter's 3 s steps between requests to a group.
	liveGroupDeltas = 250
	// liveInterval is stream_interval in these tests: a 1.2 s answer shows
	// in several updates.
	liveInterval = "200ms"
)

// liveModel is a Messages API on 127.0.0.1 whose answers stream slowly.
// The prompt's last message picks the script: "long <tag> [n]" is an answer
// of n (default: its deltas) text deltas, one every liveDeltaEvery, each a word <tag>wNNN
// (liveWord); "tool" is a Bash call (liveCommand), then a short answer; Claude
// Code's own side queries get "ok". It notes when each word left.
type liveModel struct {
	srv    *httptest.Server
	deltas int

	mu   sync.Mutex
	sent map[string]time.Time // word -> when its delta was flushed
}

func newLiveModel(t testing.TB, deltas int) *liveModel {
	m := &liveModel{deltas: deltas, sent: map[string]time.Time{}}
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.srv.Close)
	return m
}

// liveWord is the nth word of the long answer tagged tag.
func liveWord(tag string, n int) string { return fmt.Sprintf("%sw%03d", tag, n) }

// liveAnswer is the whole long answer tagged tag, as its result gives it.
func liveAnswer(tag string, deltas int) string {
	words := make([]string, deltas)
	for i := range words {
		words[i] = liveWord(tag, i)
	}
	return strings.Join(words, " ")
}

const (
	liveToolAnswer = "The command printed hi."
	liveToolLead   = "Let me run that."
	// liveCommand takes a while: Claude Code 2.1.332 runs a tool as soon as
	// its call is streamed, and a bare "echo hi" is over within ~40 ms,
	// before any update could show it (it never shows, as it should not).
	// A bare "sleep 2" it refuses ("Blocked: standalone sleep").
	liveCommand  = "sleep 2 && echo hi"
	liveProgress = "running Bash: " + liveCommand // what gateway/live.go shows while the call runs
)

func (m *liveModel) sentAt(word string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.sent[word]
	return at, ok
}

func (m *liveModel) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _, ok := readMessagesRequest(w, r, body)
	if !ok {
		return
	}
	prompt, called := req.currentTurn()
	text := lastMessageText(prompt)
	text = strings.TrimPrefix(text, "@"+telegramtest.BotName+" ") // a mention in a group
	rest, long := strings.CutPrefix(text, "long ")
	tag, count, _ := strings.Cut(rest, " ")
	deltas, err := strconv.Atoi(count)
	if err != nil {
		deltas = m.deltas
	}
	switch {
	case text == "" || len(req.Tools) == 0 || !req.Stream: // side queries
		writeMessage(w, &req, []contentBlock{{Type: "text", Text: "ok"}}, "end_turn", 0)
	case long:
		m.stream(w, &req, func(event func(string, any)) {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}})
			for i := range deltas {
				word := liveWord(tag, i)
				if i > 0 {
					word = " " + word
					time.Sleep(liveDeltaEvery)
				}
				event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
					"delta": map[string]any{"type": "text_delta", "text": word}})
				m.mu.Lock()
				m.sent[strings.TrimSpace(word)] = time.Now()
				m.mu.Unlock()
			}
			event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		}, "end_turn")
	case text == "tool" && !slices.Contains(called, "Bash"):
		m.stream(w, &req, func(event func(string, any)) {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": liveToolLead}})
			event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			event("content_block_start", map[string]any{"type": "content_block_start", "index": 1,
				"content_block": map[string]any{"type": "tool_use", "id": "toolu_live", "name": "Bash", "input": map[string]any{}}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 1,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": `{"command":"` + liveCommand + `","description":"Print hi"}`}})
			event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 1})
		}, "tool_use")
	default:
		m.stream(w, &req, func(event func(string, any)) {
			event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
				"content_block": map[string]any{"type": "text", "text": ""}})
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": liveToolAnswer}})
			event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
		}, "end_turn")
	}
}

// stream writes one message as server-sent events, each flushed at once:
// message_start, what blocks writes, message_delta and message_stop.
func (m *liveModel) stream(w http.ResponseWriter, req *messagesRequest, blocks func(event func(string, any)), stop string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		fl.Flush()
	}
	event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_live", "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 100, "output_tokens": 1}}})
	blocks(event)
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": 10}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// claudeLive is a gateway directory whose agent is the real Claude Code
// with output claude-stream, in the sandbox, configured as
// docs/operating.md says, talking to api; adaptersYAML and routesYAML are
// its adapters (indented two spaces) and routes, agentExtra more agent:
// lines and extra more top-level YAML. It returns the directory and the
// environment to run the gateway (and workers) with.
func claudeLive(t testing.TB, apiURL, adaptersYAML, routesYAML, agentExtra, extra string) (dir string, env []string) {
	t.Helper()
	requireBwrap(t)
	installDir, claudeBin := claudeCode(t)
	switchboardBinary(t)
	dir = t.TempDir()
	agentEnv, env := claudeEnv(t, dir, claudeBin, apiURL, "sk-ant-test-live")
	envYAML, _ := json.Marshal(agentEnv)
	cfg := fmt.Sprintf(`data_dir: ./data
operator_folder: root
log: {level: debug, format: json}
agent:
  command: ["claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--dangerously-skip-permissions"]
  resume_args: ["--resume", "{session}"]
  output: claude-stream
  timeout: 2m
  max_concurrent: 4
  sandbox: bwrap
  binds: [{path: ~/.claude, rw: true}, {path: ~/.claude.json, rw: true}, {path: %q}, {path: %q}]
  env: %s
%sadapters:
  web: {enabled: true, listen: "127.0.0.1:0", stream_interval: %s}
%sadmin: {listen: ""}
groups:
  - folder: root
  - folder: main
routes:
%s%s`, filepath.Join(dir, "bin"), installDir, envYAML, agentExtra, liveInterval, adaptersYAML, routesYAML, extra)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, env
}

// botStored is the text of every bot message stored for chat.
func botStored(t testing.TB, dir string, chat adapters.JID) []string {
	t.Helper()
	ms, err := openStore(t, dir).MessagesAfter(context.Background(), chat, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		if m.FromBot {
			out = append(out, m.Text)
		}
	}
	return out
}

// TestLiveClaudeCode: the real Claude Code with output claude-stream, its
// answers streamed by the fake model API in liveDeltas deltas 20 ms apart:
//   - web chat: headless Chromium sees the draft grow (two partial texts
//     at least) and then the final once, in its place;
//   - Telegram private chat: sendMessageDraft with growing text, then one
//     sendMessage with the final;
//   - Telegram group (a 5 s answer): one sendMessage, then
//     editMessageText calls, the last edit showing the final;
//   - a Bash call (liveCommand) shows "running Bash: <command>" in an
//     update (a draft, in a private chat) before the final, and the final
//     has no progress line;
//   - after the gateway stopped, each final was sent and stored once and
//     nothing followed it; a group's live reply carried its Stop button
//     (no message of its own), a private chat's Stop message was deleted.
func TestLiveClaudeCode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test with Claude Code from npm, the binary and Chromium")
	}
	api := newLiveModel(t, liveDeltas)
	tg := telegramtest.New(t)
	const toolChat = 8 // a private chat: telegram:user/8
	dir, env := claudeLive(t, api.srv.URL,
		fmt.Sprintf("  telegram: {enabled: true, token: %q, api_url: %q, stream_interval: %s}\n", telegramtest.Token, tg.URL(), liveInterval),
		"  - {match: {platform: web}, target: main}\n  - {match: {platform: telegram}, target: main}\n", "", "")
	g := startGW(t, dir, env...)
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range []string{"sendMessage", "sendMessageDraft", "editMessageText", "deleteMessage"} {
				for _, c := range tg.Calls(m) {
					t.Logf("telegram %s %s: %q", m, c.Params["chat_id"], c.Params["text"])
				}
			}
		}
	})

	t.Run("web chat in chromium", func(t *testing.T) {
		page := testcdp.Open(t, findChromium(t), "http://"+g.addr+"/?room=lobby")
		page.WaitFor("the chat page's live event stream", `document.getElementById("status")?.dataset.state === "live"`)
		page.Eval(`(() => {
  window.__drafts = [];
  const note = () => {
    for (const el of document.querySelectorAll(".msg.draft .text")) {
      const s = el.textContent;
      if (window.__drafts[window.__drafts.length - 1] !== s) window.__drafts.push(s);
    }
  };
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, characterData: true});
  return true;
})()`)
		final := liveAnswer("web", liveDeltas)
		g.mustPost("lobby", "ann", "long web")
		var finals []string
		testwait.For(t, claudeTurnWithin, "the final reply on the page", func() bool {
			page.EvalInto(`[...document.querySelectorAll(".msg.bot:not(.draft) .text")].map(e => e.textContent)`, &finals)
			return len(finals) > 0
		})
		var drafts []string
		var left int
		page.EvalInto(`[...document.querySelectorAll(".msg.bot:not(.draft) .text")].map(e => e.textContent)`, &finals)
		page.EvalInto(`window.__drafts`, &drafts)
		page.EvalInto(`document.querySelectorAll(".msg.draft").length`, &left)
		if ok, n := growing(drafts, final); !ok || n < 2 {
			t.Errorf("the page showed drafts %q; want at least two different texts, each a longer start of the final", drafts)
		}
		if !slices.Equal(finals, []string{final}) || left != 0 {
			t.Errorf("the page shows bot messages %q and %d drafts; want the final once, no draft", finals, left)
		}
	})

	t.Run("telegram private chat: drafts", func(t *testing.T) {
		const chat = telegramtest.UserID
		final := liveAnswer("dm", liveDeltas)
		msg, _ := tg.UserMessage(chat, "long dm", false, 0, 0)
		tg.Push("message", msg)
		tg.WaitBotMessage(t, chat, "the final reply", func(telegramtest.Msg) bool { return true })
		var drafts []string
		for _, d := range tg.Drafts(chat) {
			drafts = append(drafts, d.Text)
		}
		if ok, n := growing(drafts, final); !ok || n < 2 {
			t.Errorf("drafts %q; want at least two different texts, each a longer start of the final", drafts)
		}
		var bot []string
		for _, m := range tg.Messages(chat) {
			if m.FromBot {
				bot = append(bot, m.Text)
			}
		}
		if !slices.Equal(bot, []string{final}) || len(callsTo(tg, "editMessageText", chat)) != 0 {
			t.Errorf("the bot's messages %q, %d edits; want the final once, sent after the drafts, no edit", bot, len(callsTo(tg, "editMessageText", chat)))
		}
	})

	t.Run("telegram group: edits", func(t *testing.T) {
		const chat = telegramtest.GroupID
		final := liveAnswer("grp", liveGroupDeltas)
		msg, _ := tg.UserMessage(chat, fmt.Sprint("long grp ", liveGroupDeltas), true, 0, 0)
		tg.Push("message", msg)
		tg.WaitFor(t, "the final as the live message's text", func() bool {
			ms := tg.Messages(chat)
			return slices.ContainsFunc(ms, func(m telegramtest.Msg) bool { return m.FromBot && m.Text == final })
		})
		sends, edits := callsTo(tg, "sendMessage", chat), callsTo(tg, "editMessageText", chat)
		shown := tg.Shown(chat)
		if ok, n := growing(shown, final); !ok || n < 3 || shown[len(shown)-1] != final {
			t.Errorf("the group showed %q; want growing starts of the final, the final last", shown)
		}
		if len(sends) != 1 || len(edits) < 2 {
			t.Fatalf("%d sendMessage, %d editMessageText; want one message sent, then edits", len(sends), len(edits))
		}
		if !strings.Contains(sends[0].Params["reply_markup"], `"stop:`) {
			t.Errorf("the live reply was sent with reply_markup %q; want its Stop button", sends[0].Params["reply_markup"])
		}
		if ms := tg.Messages(chat); slices.ContainsFunc(ms, func(m telegramtest.Msg) bool { return m.FromBot && len(m.Buttons) > 0 }) {
			t.Errorf("a message of the bot still has buttons after the final: %+v", ms)
		}
	})

	t.Run("progress line of a tool call", func(t *testing.T) {
		msg, _ := tg.UserMessage(toolChat, "tool", false, 0, 0)
		tg.Push("message", msg)
		testwait.For(t, claudeTurnWithin, "the final answer after the Bash call", func() bool {
			return slices.Contains(tg.Shown(toolChat), liveToolAnswer)
		})
		shown := tg.Shown(toolChat)
		at := slices.IndexFunc(shown, func(s string) bool { return strings.Contains(s, liveProgress) })
		if at < 0 || at == len(shown)-1 || !strings.HasPrefix(shown[at], liveToolLead) {
			t.Errorf("the chat showed %q; want %q after the text so far in an update before the final", shown, liveProgress)
		}
		bot := botLeft(tg, toolChat)
		if shown[len(shown)-1] != liveToolAnswer || !slices.Equal(bot, []string{liveToolAnswer}) {
			t.Errorf("the chat showed %q last and holds the bot's messages %q; want the final %q once, without the progress line",
				shown[len(shown)-1], bot, liveToolAnswer)
		}
	})

	// Nothing came after the finals: with the gateway stopped (its outbox
	// drained), each chat's last state is its final, sent and stored once.
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	finals := map[int64]string{telegramtest.UserID: liveAnswer("dm", liveDeltas), telegramtest.GroupID: liveAnswer("grp", liveGroupDeltas), toolChat: liveToolAnswer}
	for chat, final := range finals {
		bot := botLeft(tg, chat)
		if shown := tg.Shown(chat); len(shown) == 0 || shown[len(shown)-1] != final || !slices.Equal(bot, []string{final}) {
			t.Errorf("telegram chat %d: the bot's messages %q, the last shown %q; want the final once, last", chat, bot, shown[max(len(shown)-1, 0):])
		}
	}
	for jid, final := range map[adapters.JID]string{"web:lobby": liveAnswer("web", liveDeltas), "telegram:user/7": finals[telegramtest.UserID],
		"telegram:group/1001234": finals[telegramtest.GroupID], "telegram:user/8": liveToolAnswer} {
		if got := botStored(t, dir, jid); !slices.Equal(got, []string{final}) {
			t.Errorf("stored bot messages of %s %q; want the final once", jid, got)
		}
	}
}

// botLeft is the texts of the bot's messages in chat, but for a Stop
// button's message of its own that the bot deleted: a private chat's live
// reply is a draft, which carries no button, and a turn that runs 3 s
// shows one there while it runs (a group's live reply carries it: nothing
// is left out there).
func botLeft(tg *telegramtest.Server, chat int64) []string {
	var bot []string
	for _, m := range tg.Messages(chat) {
		if m.FromBot && !(chat > 0 && m.Deleted && strings.Contains(m.Text, "Press Stop")) {
			bot = append(bot, m.Text)
		}
	}
	return bot
}

// callsTo is the calls of method to chat.
func callsTo(tg *telegramtest.Server, method string, chat int64) []telegramtest.Call {
	var out []telegramtest.Call
	for _, c := range tg.Calls(method) {
		if c.Params["chat_id"] == fmt.Sprint(chat) {
			out = append(out, c)
		}
	}
	return out
}
