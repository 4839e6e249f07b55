package ipc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/store"
)

// TestResultFields pins what the history and session tools return, field
// by field and in order: the names, the omitted empty fields, times in UTC.
// Agents parse these results, so they must not change when the types behind
// them do.
func TestResultFields(t *testing.T) {
	h := newHarness(t, nil)
	c := h.connect(t, "acme", true)
	ctx := context.Background()
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, in := range []adapters.Inbound{
		{Chat: "web:acme", ID: "m1", Sender: "web:user/ann", SenderName: "Ann", Text: "hello there", Time: at,
			Topic: "t1", ReplyTo: "m0", Verb: adapters.VerbMention,
			Attachments: []adapters.Attachment{{Name: "a.txt", MIME: "text/plain", Size: 3, Ref: "r1"}}},
		{Chat: "web:acme", ID: "b1", Sender: "web:user/bot", Text: "ok", Time: at.Add(time.Minute), FromBot: true},
	} {
		if _, err := h.g.Deliver(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	waitTurn(t, h.st, "acme", store.TriggerMessage)

	m1 := `{"seq":%d,"chat_jid":"web:acme","id":"m1","sender":"web:user/ann","name":"Ann","text":"hello there",` +
		`"time":"2026-11-21T09:00:00Z","topic":"t1","reply_to":"m0","verb":"mention",` +
		`"attachments":[{"name":"a.txt","mime":"text/plain","size":3,"ref":"r1"}]}`
	b1 := `{"seq":%d,"chat_jid":"web:acme","id":"b1","sender":"web:user/bot","text":"ok","time":"2026-11-21T09:01:00Z",` +
		`"verb":"message","from_bot":true}`
	var got struct {
		Messages []json.RawMessage `json:"messages"`
		Hits     []json.RawMessage `json:"hits"`
	}
	call(t, c, "inspect_messages", map[string]any{"chat_jid": "web:acme"}).decode(t, &got)
	wantMessages(t, "inspect_messages", got.Messages, m1, b1)
	// "more" says whether older messages are left: not with exactly the
	// limit left (the next page was empty), and the page is the newest.
	var page struct {
		Messages []json.RawMessage `json:"messages"`
		More     bool              `json:"more"`
	}
	call(t, c, "inspect_messages", map[string]any{"chat_jid": "web:acme", "limit": 2}).decode(t, &page)
	if page.More || len(page.Messages) != 2 {
		t.Errorf("inspect_messages limit 2 of 2: %d messages, more %v; want 2, false", len(page.Messages), page.More)
	}
	call(t, c, "inspect_messages", map[string]any{"chat_jid": "web:acme", "limit": 1}).decode(t, &page)
	if !page.More || len(page.Messages) != 1 || !strings.Contains(string(page.Messages[0]), `"id":"b1"`) {
		t.Errorf("inspect_messages limit 1 of 2: %s, more %v; want b1 (the newest), true", page.Messages, page.More)
	}
	call(t, c, "get_thread", map[string]any{"chat_jid": "web:acme", "topic": "t1"}).decode(t, &got)
	wantMessages(t, "get_thread", got.Messages, m1)
	call(t, c, "fetch_history", map[string]any{"chat_jid": "web:acme"}).decode(t, &got)
	wantMessages(t, "fetch_history from the store", got.Messages, m1, b1)
	// From the platform: what it returned (no verb given), with the seq it
	// is stored under.
	call(t, c, "fetch_history", map[string]any{"chat_jid": "full:x"}).decode(t, &got)
	wantMessages(t, "fetch_history from the platform", got.Messages,
		`{"seq":%d,"chat_jid":"full:x","id":"p1","sender":"full:user/1","text":"from the platform","time":"1970-01-01T00:00:01Z"}`)

	call(t, c, "find_messages", map[string]any{"query": "hello", "chat_jid": "web:acme"}).decode(t, &got)
	if len(got.Hits) != 1 {
		t.Fatalf("find_messages: %d hits, want 1", len(got.Hits))
	}
	var hit struct {
		Seq  int64           `json:"seq"`
		Rank json.RawMessage `json:"rank"`
	}
	if err := json.Unmarshal(got.Hits[0], &hit); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(fmt.Sprintf(m1, hit.Seq), "}") + `,"snippet":"[hello] there","rank":` + string(hit.Rank) + "}"
	if string(got.Hits[0]) != want {
		t.Errorf("find_messages hit\n got %s\nwant %s", got.Hits[0], want)
	}

	var session struct {
		Sessions []json.RawMessage `json:"sessions"`
		Turns    []json.RawMessage `json:"turns"`
	}
	call(t, c, "inspect_session", nil).decode(t, &session)
	if len(session.Sessions) != 1 || len(session.Turns) != 1 {
		t.Fatalf("inspect_session: %d sessions, %d turns; want 1 and 1", len(session.Sessions), len(session.Turns))
	}
	wantFields(t, "inspect_session session", session.Sessions[0],
		"chat_jid", `"web:acme"`, "topic", `"t1"`, "session_id", `"t-*`, "updated", `"*Z"`)
	wantFields(t, "inspect_session turn", session.Turns[0],
		"id", `"t-*`, "chat_jid", `"web:acme"`, "topic", `"t1"`, "trigger", `"message"`, "attempt", "1", "started", `"*Z"`,
		"duration_ms", "*", "status", `"succeeded"`, "session_id", `"t-*`)

	var inj json.RawMessage
	call(t, c, "inject_message", map[string]any{"chat_jid": "web:acme", "text": "wake up"}).decode(t, &inj)
	wantFields(t, "inject_message", inj, "folder", `"acme"`, "id", `"inj-*`, "seq", "*")
}

// wantMessages compares messages with the formats of want, each given its
// message's own seq.
func wantMessages(t *testing.T, tool string, got []json.RawMessage, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d messages, want %d: %s", tool, len(got), len(want), got)
		return
	}
	for i, raw := range got {
		var m struct {
			Seq int64 `json:"seq"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if m.Seq <= 0 {
			t.Errorf("%s: message %d has no seq: %s", tool, i, raw)
		}
		if w := fmt.Sprintf(want[i], m.Seq); string(raw) != w {
			t.Errorf("%s: message %d\n got %s\nwant %s", tool, i, raw, w)
		}
	}
}

// wantFields checks that raw is an object with exactly the fields of want,
// given as name, pattern pairs in the order the object has them; each
// value's JSON matches its pattern ("*" matches any text, "x*" and "*x" a
// prefix or a suffix).
func wantFields(t *testing.T, what string, raw json.RawMessage, want ...string) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: %s is not an object", what, raw)
	}
	var fields []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		fields = append(fields, tok.(string), string(v))
	}
	match := len(fields) == len(want)
	for i := 0; match && i < len(want); i += 2 {
		pre, suf, star := strings.Cut(want[i+1], "*")
		v := fields[i+1]
		match = fields[i] == want[i] && (!star && v == want[i+1] || star && strings.HasPrefix(v, pre) && strings.HasSuffix(v, suf))
	}
	if !match {
		t.Errorf("%s: %s\nwant fields %q", what, raw, want)
	}
}
