package ipc_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// TestSendFileDuringTurnGoesToTheTopic: a file the agent sends into the
// chat its turn answers lands in the turn's thread or forum topic, as its
// reply does (in a Telegram forum a file sent without the topic lands in
// General, on Slack and Discord in the main channel, away from the
// conversation that asked for it); an explicit topic wins; outside a turn
// the file goes to the main channel.
func TestSendFileDuringTurnGoesToTheTopic(t *testing.T) {
	agent, gate := blockingAgent(t)
	h := newHarnessAgent(t, nil, agent)
	h.waitStarted(t)
	c := h.connect(t, "acme", true)
	mustWrite(t, filepath.Join(h.dir, "groups", "acme", "chart.png"), "png")
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: "full:room", ID: "m7", Sender: "full:user/ann",
		Text: "send me the chart", Topic: "t9", Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "turn running", func() bool {
		return strings.Contains(call(t, c, "inspect_session", nil).Text, `"running":{`)
	})
	for _, args := range []map[string]any{
		{"chat_jid": "full:room", "path": "chart.png", "caption": "here"},
		{"chat_jid": "full:room", "path": "chart.png", "caption": "elsewhere", "topic": "t3"},
	} {
		if r := call(t, c, "send_file", args); r.IsError {
			t.Fatalf("send_file %v: %s", args, r.Text)
		}
	}
	mustWrite(t, gate, "")
	waitTurn(t, h.st, "acme", store.TriggerMessage)
	if r := call(t, c, "send_file", map[string]any{"chat_jid": "full:room", "path": "chart.png", "caption": "later"}); r.IsError {
		t.Fatal(r.Text)
	}
	var files []string
	for _, a := range h.all.actions() {
		if strings.HasPrefix(a, "file ") {
			files = append(files, a)
		}
	}
	want := []string{"file full:room topic t9 chart.png here", "file full:room topic t3 chart.png elsewhere", "file full:room chart.png later"}
	if !slices.Equal(files, want) {
		t.Errorf("files sent as\n%q\nwant\n%q", files, want)
	}
}
