package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// webMessageKeys are the fields of a message object (CONTRACT §12).
var webMessageKeys = []string{"from_bot", "id", "name", "sender", "seq", "text", "time", "topic"}

// rawPost posts body to room and returns the status and the decoded answer.
func (g *gw) rawPost(t *testing.T, room, body string) (int, map[string]any) {
	t.Helper()
	resp, err := g.http.Post("http://"+g.addr+"/api/rooms/"+room+"/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("POST %s: %d %q is not a JSON object", room, resp.StatusCode, b)
	}
	return resp.StatusCode, v
}

// rawMessages is GET /api/rooms/{room}/messages?after=after, each message
// as the raw JSON object it was sent as.
func (g *gw) rawMessages(t *testing.T, room string, after int64) []map[string]any {
	t.Helper()
	resp, err := g.http.Get(fmt.Sprintf("http://%s/api/rooms/%s/messages?after=%d", g.addr, room, after))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Messages []map[string]any `json:"messages"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s after=%d: %d %v", room, after, resp.StatusCode, err)
	}
	return r.Messages
}

// sseEvent is one event of a room's stream: its id line and data object.
type sseEvent struct {
	id   string
	data map[string]any
}

// openRoomEvents reads room's event stream (with the given Last-Event-ID,
// if any) until the test ends and passes on its events that carry data.
func openRoomEvents(t *testing.T, g *gw, room, lastID string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+g.addr+"/api/rooms/"+room+"/events", nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("GET events: %d %s", resp.StatusCode, ct)
	}
	t.Cleanup(func() { resp.Body.Close() })
	events := make(chan sseEvent, 100)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.data != nil {
					events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data)
			}
		}
	}()
	return events
}

// nextMessage returns the stream's next message object (drafts and other
// typed objects skipped).
func nextMessage(t *testing.T, events <-chan sseEvent) sseEvent {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream ended")
			}
			if _, typed := ev.data["type"]; !typed {
				return ev
			}
		case <-timeout:
			t.Fatal("no message on the event stream within 20 s")
		}
	}
}

// The web chat through the real binary, claim by claim (CONTRACT §12, §4):
// a POST answers 202 {"id","seq"}; GET ?after=SEQ lists the room's
// messages in seq order, the person's and the bot's alike, each with the
// fields seq id sender name text time from_bot topic, the bot's reply in
// the topic it answers; the event stream carries the same objects (the
// reply included), with the seq as event id, and resumes after
// Last-Event-ID. A post that repeats a client id is the same message
// (chat, id): a retry is answered as the first post and stored once, and
// another text under that id is refused 409 and not stored.
func TestE2EWebChatAPI(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: replyAgent})
	g := startGW(t, dir)
	events := openRoomEvents(t, g, "lobby", "")

	status, posted := g.rawPost(t, "lobby", `{"sender": "ann", "text": "hello there", "topic": "th-1", "id": "c-1"}`)
	if status != http.StatusAccepted || len(posted) != 2 || posted["id"] != "w-c-1" || posted["seq"] == nil {
		t.Fatalf("POST: %d %v; want 202 {\"id\":\"w-c-1\",\"seq\":N}", status, posted)
	}
	seq := int64(posted["seq"].(float64))

	// A retry: the same answer. Another text under the id: 409, not stored.
	if status, again := g.rawPost(t, "lobby", `{"sender": "ann", "text": "hello there", "topic": "th-1", "id": "c-1"}`); status != http.StatusAccepted || again["id"] != posted["id"] || again["seq"] != posted["seq"] {
		t.Errorf("retry with the same id: %d %v; want 202 %v", status, again, posted)
	}
	status, clash := g.rawPost(t, "lobby", `{"sender": "ann", "text": "something else", "id": "c-1"}`)
	if msg, _ := clash["error"].(string); status != http.StatusConflict || !strings.Contains(msg, "not stored") || clash["seq"] != posted["seq"] {
		t.Errorf("another text under a used id: %d %v; want 409 saying it was not stored, with the stored seq", status, clash)
	}

	bot := g.waitBot("lobby", 1)
	all := g.rawMessages(t, "lobby", 0)
	if len(all) != 2 {
		t.Fatalf("room holds %v; want the post (once) and the reply", all)
	}
	for _, m := range all {
		if keys := slices.Sorted(maps.Keys(m)); !slices.Equal(keys, webMessageKeys) {
			t.Errorf("message %v has fields %v; want %v", m, keys, webMessageKeys)
		}
	}
	user, reply := all[0], all[1]
	if user["seq"] != float64(seq) || user["id"] != "w-c-1" || user["sender"] != "ann" || user["name"] != "ann" ||
		user["text"] != "hello there" || user["from_bot"] != false || user["topic"] != "th-1" {
		t.Errorf("the post reads back as %v", user)
	}
	if _, err := time.Parse(time.RFC3339, user["time"].(string)); err != nil {
		t.Errorf("time %q: %v", user["time"], err)
	}
	if reply["seq"].(float64) <= float64(seq) || reply["from_bot"] != true || reply["text"] != "reply 1 from main" ||
		reply["topic"] != "th-1" || reply["id"] != bot[0].ID {
		t.Errorf("the reply reads back as %v; want it after the post, from the bot, in topic th-1", reply)
	}
	if after := g.rawMessages(t, "lobby", seq); len(after) != 1 || after[0]["seq"] != reply["seq"] {
		t.Errorf("after=%d gave %v; want only the reply", seq, after)
	}

	// The stream carried the same two objects, each under its seq.
	for _, want := range all {
		ev := nextMessage(t, events)
		if ev.id != fmt.Sprint(want["seq"]) || !jsonEqual(ev.data, want) {
			t.Errorf("event id %s data %v; want id %v and the object GET shows, %v", ev.id, ev.data, want["seq"], want)
		}
	}
	// A reconnect with Last-Event-ID resumes after it.
	resumed := openRoomEvents(t, g, "lobby", fmt.Sprint(seq))
	if ev := nextMessage(t, resumed); !jsonEqual(ev.data, reply) {
		t.Errorf("after Last-Event-ID %d the stream sent %v; want the reply %v", seq, ev.data, reply)
	}
}

func jsonEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// The admin listener's status page shows what `switchboard status` shows
// (CONTRACT §14): the gateway's pid and uptime, each adapter's state, the
// queue per folder, the running turns, the outbox counts, the next tasks
// with their times, the recent failed turns with their errors, and the
// database's size.
func TestE2EStatusPageShowsStatus(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{timeout: "60s", agent: `case "$SWITCHBOARD_CHAT_JID" in
web:slow) exec sleep 50 ;;
web:crash) echo "segfault imminent" >&2; exit 3 ;;
esac
echo fine`})
	g := startGW(t, dir)
	g.mustPost("crash", "bob", "boom")
	testwait.For(t, 20*time.Second, "the failure notice", func() bool { return len(g.botMessages("crash")) > 0 })
	g.mustPost("slow", "ann", "take your time")
	testwait.For(t, 20*time.Second, "the slow turn to start", func() bool { return turnCount(dir, "main") >= 2 })
	g.mustPost("lobby", "eve", "waits for main") // queued behind the slow turn
	addTask(t, g.bin, dir, "--folder", "main", "--jid", "web:lobby", "--schedule", "30 9 * * 1-5", "--tz", "Europe/Berlin", "--prompt", "standup")
	g.mustCLI("send", "telegram:user/1", "to a platform that is off") // a failed outbox item

	var rep statusReport
	var page, missing string
	testwait.Until(20*time.Second, func() bool {
		out, err := g.cli("--json", "status")
		if err != nil || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Running) == 0 || len(rep.Queue) == 0 ||
			len(rep.FailedTurns) == 0 || len(rep.NextTasks) == 0 || rep.Outbox.Failed == 0 || len(rep.FailedDeliveries) == 0 {
			missing = "status itself: " + out
			return false
		}
		_, body := g.admin(t, "/")
		page = html.UnescapeString(body)
		missing = statusMissing(rep, page)
		return missing == ""
	})
	if missing != "" {
		t.Errorf("the status page lacks %s\npage:\n%s", missing, page)
	}
}

// statusMissing names the first part of rep the page does not show, or "".
func statusMissing(rep statusReport, page string) string {
	want := []string{fmt.Sprintf("pid %d", rep.Gateway.PID), "up ",
		fmt.Sprintf("%d pending, %d failed", rep.Outbox.Pending, rep.Outbox.Failed),
		fmt.Sprintf("%.1f MB", float64(rep.DBBytes)/(1<<20))}
	for name, s := range rep.Adapters {
		want = append(want, fmt.Sprintf("<td>%s</td><td class=\"ok\">%s</td>", name, s.State))
	}
	for f, n := range rep.Queue {
		want = append(want, fmt.Sprintf("<td>%s</td><td>%d</td>", f, n))
	}
	for _, r := range rep.Running {
		want = append(want, fmt.Sprintf("<td>%s</td><td>%s</td>", r.Folder, r.ChatJID))
	}
	for _, tk := range rep.NextTasks {
		want = append(want, fmt.Sprintf("#%d", tk.ID), tk.Spec, tk.At())
	}
	for _, f := range rep.FailedTurns {
		want = append(want, string(f.Folder), string(f.ChatJID), f.Error)
	}
	for _, d := range rep.FailedDeliveries {
		want = append(want, fmt.Sprintf("#%d", d.OutboxID), string(d.ChatJID), d.Error)
	}
	for _, w := range want {
		if !strings.Contains(page, w) {
			return fmt.Sprintf("%q", w)
		}
	}
	return ""
}
