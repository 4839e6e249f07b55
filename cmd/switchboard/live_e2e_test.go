package main

import (
	"bufio"
	"context"
	"encoding/json"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+g.addr+"/api/rooms/lobby/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type draft struct{ Type, ID, Text string }
	drafts := make(chan draft, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var d draft
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(data), &d) == nil && d.Type == "draft" {
				drafts <- d
			}
		}
		close(drafts)
	}()
	g.mustPost("lobby", "ann", "run it")
	var d draft
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
