package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A claude-stream turn answering in the web chat: the room's event stream
// shows drafts growing (the text so far, then the tool's progress line),
// the final arrives once under the id the drafts announced, and only the
// final is stored.
func TestE2ELiveReplyWeb(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile("../../agent/testdata/claude-stream/tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := newE2E(t, e2eConfig{output: "claude-stream", agent: `head -n 19 "$E2E_OUT/tool.jsonl"
while [ ! -e "$E2E_OUT/release" ]; do sleep 0.01; done
tail -n +20 "$E2E_OUT/tool.jsonl"`})
	if err := os.WriteFile(filepath.Join(dir, "out", "tool.jsonl"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir)
	drafts := roomDrafts(t, g, "lobby")
	g.mustPost("lobby", "ann", "run it")
	var d webDraft
	for !strings.Contains(d.Text, "running Bash: ") {
		select {
		case d = <-drafts:
		case <-time.After(20 * time.Second):
			t.Fatalf("no draft with the progress line; the last: %+v", d)
		}
	}
	if !strings.HasPrefix(d.Text, "Let me run that.") {
		t.Fatalf("draft %+v: want the text so far and the progress line", d)
	}
	if err := os.WriteFile(filepath.Join(dir, "out", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bot := g.waitBot("lobby", 1)
	if len(bot) != 1 || bot[0].Text != "The command printed: hi from bash" || bot[0].ID != d.ID {
		t.Errorf("bot messages %+v; want the final once, under the drafts' id %q", bot, d.ID)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// webDraft is a draft object of a room's event stream, or a bot message
// (Type "", FromBot set).
type webDraft struct {
	Type, ID, Text string
	FromBot        bool `json:"from_bot"`
}

// roomDrafts reads room's event stream until the test ends and passes on
// its drafts and the bot's messages, in order.
func roomDrafts(t *testing.T, g *gw, room string) <-chan webDraft {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+g.addr+"/api/rooms/"+room+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	drafts := make(chan webDraft, 1000)
	go func() {
		defer close(drafts)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var d webDraft
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &d) == nil && (d.Type == "draft" || d.FromBot) {
				drafts <- d
			}
		}
	}()
	return drafts
}

// A turn run by a `switchboard worker` (agent.runner: nats) streams too:
// the text agent's lines, written slowly on the worker, reach the web
// chat as growing drafts (the events come back over NATS) before the
// final, which arrives once under the drafts' id.
func TestE2ELiveReplyWorker(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: `for i in 1 2 3 4 5 6 7 8; do echo "step $i done"; sleep 0.3; done`,
		agentExtra: "  runner: nats\n",
		extra:      "nats: {embedded: true, listen: \"127.0.0.1:0\"}\n"})
	g := startGW(t, dir)
	w := startWorker(t, dir, "w1", embeddedNATSURL(t, g), 1)
	drafts := roomDrafts(t, g, "lobby")
	g.mustPost("lobby", "ann", "go")
	bot := g.waitBot("lobby", 1)
	var lines []string
	for i := 1; i <= 8; i++ {
		lines = append(lines, fmt.Sprintf("step %d done", i))
	}
	final := strings.Join(lines, "\n")
	if len(bot) != 1 || bot[0].Text != final {
		t.Fatalf("bot messages %+v; want the agent's output once", bot)
	}
	var seen []string
	for d := range drafts {
		if d.FromBot { // the final: the drafts came before it
			break
		}
		if d.ID != bot[0].ID {
			t.Errorf("draft %+v: want the final's id %q", d, bot[0].ID)
		}
		seen = append(seen, d.Text)
	}
	if ok, n := growing(seen, final); !ok || n < 2 {
		t.Errorf("drafts before the final %q; want at least two different texts, each a longer start of the final", seen)
	}
	if len(w.records("turn done", "", "")) != 1 {
		t.Errorf("the worker ran %d turns; want the one", len(w.records("turn done", "", "")))
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// growing reports whether texts (as a chat showed them, in order) are
// starts of final, each at least as long as the one before, and how many
// different texts there are.
func growing(texts []string, final string) (ok bool, distinct int) {
	last := ""
	for _, s := range texts {
		if !strings.HasPrefix(final, s) || len(s) < len(last) {
			return false, distinct
		}
		if s != last {
			distinct++
		}
		last = s
	}
	return true, distinct
}

// A turn stopped while its live reply shows in the web chat: the reply it
// showed, ending "(stopped)", is the room's bot message under the drafts'
// id, as the page showed it, in GET messages (a page opened later, or
// reloaded, shows it too) and on the event stream; the chat gets no other
// message. Before, nothing was stored: a reload lost what the page showed.
func TestE2ELiveReplyStoppedWeb(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile("../../agent/testdata/claude-stream/tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := newE2E(t, e2eConfig{output: "claude-stream", agent: `head -n 6 "$E2E_OUT/tool.jsonl"
while :; do sleep 0.05; done`})
	if err := os.WriteFile(filepath.Join(dir, "out", "tool.jsonl"), fixture, 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir)
	drafts := roomDrafts(t, g, "lobby")
	g.mustPost("lobby", "ann", "run it")
	var d webDraft
	for !strings.HasPrefix(d.Text, "Let me run that.") {
		select {
		case d = <-drafts:
		case <-time.After(20 * time.Second):
			t.Fatalf("no draft with the text so far; the last: %+v", d)
		}
	}
	g.mustPost("lobby", "ann", "/stop")
	bot := g.waitBot("lobby", 1)
	if len(bot) != 1 || bot[0].ID != d.ID || !strings.HasPrefix(bot[0].Text, "Let me run that.") || !strings.HasSuffix(bot[0].Text, "(stopped)") {
		t.Fatalf("bot messages %+v; want the stopped live reply once, under the drafts' id %q", bot, d.ID)
	}
	for deadline := time.After(20 * time.Second); ; {
		select {
		case d = <-drafts:
		case <-deadline:
			t.Fatal("the stopped reply never reached the room's event stream as a message")
		}
		if d.FromBot && d.ID == bot[0].ID {
			break
		}
	}
	if bot := g.botMessages("lobby"); len(bot) != 1 {
		t.Errorf("bot messages %+v; want the stopped live reply alone", bot)
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestE2ELiveReplyWebStreamEdit: adapters.web.stream: edit ("one message
// sent at the first update and edited after") shows the web chat's live
// reply, as native does: the web chat has no message edits of its own, so
// the edit fallback could not start and the room saw nothing until the
// turn ended.
func TestE2ELiveReplyWebStreamEdit(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{output: "text", adapters: "  web: {enabled: true, listen: \"127.0.0.1:0\", stream: edit}\n",
		agent: `echo "first line"
while [ ! -e "$E2E_OUT/release" ]; do sleep 0.01; done
echo "second line"`})
	// The adapters: line above replaces the default web entry.
	cfgPath := filepath.Join(dir, "switchboard.yaml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	fixed := strings.Replace(string(cfg), "  web: {enabled: true, listen: \"127.0.0.1:0\"}\n", "", 1)
	if err := os.WriteFile(cfgPath, []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	g := startGW(t, dir)
	drafts := roomDrafts(t, g, "lobby")
	g.mustPost("lobby", "ann", "go")
	var d webDraft
	select {
	case d = <-drafts:
	case <-time.After(20 * time.Second):
		t.Fatal("no live reply in the room while the turn ran")
	}
	if d.FromBot || d.Type != "draft" || d.Text != "first line" {
		t.Fatalf("first event %+v; want a draft with the text so far", d)
	}
	if err := os.WriteFile(filepath.Join(dir, "out", "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bot := g.waitBot("lobby", 1)
	if len(bot) != 1 || bot[0].Text != "first line\nsecond line" || bot[0].ID != d.ID {
		t.Errorf("bot messages %+v; want the final once, under the draft's id %q", bot, d.ID)
	}
}
