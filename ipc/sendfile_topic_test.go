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

// TestSendFileGoesWhereItWasAuthorized: a call's default topic is read
// once, when the call is checked: the file goes where the grants and the
// chat's owner allowed it and the approver said yes. A send_file asked for
// while no turn ran (the main channel) and approved after a turn started
// in a thread went into that thread; the other way round, a thread owner's
// file whose turn ended while it was checked went to the main channel,
// which another group owns.
func TestSendFileGoesWhereItWasAuthorized(t *testing.T) {
	agent, gate := blockingAgent(t)
	h := newHarnessAgent(t, func(ctx context.Context, st *store.Store) error {
		if err := approvalSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"?send_file"})
	}, agent)
	h.waitStarted(t)
	c := h.connect(t, "acme", true)
	mustWrite(t, filepath.Join(h.dir, "groups", "acme", "chart.png"), "png")
	ch := callAsync(t, c, "send_file", map[string]any{"chat_jid": "full:room", "path": "chart.png", "caption": "main"})
	testwait.For(t, 10*time.Second, "a pending request for send_file", func() bool {
		p, err := h.st.PendingApprovals(context.Background())
		return err == nil && len(p) == 1
	})
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: "full:room", ID: "m7", Sender: "full:user/ann",
		Text: "a question in a thread", Topic: "t9", Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
	other := h.connect(t, "acme", true)
	testwait.For(t, 10*time.Second, "turn running", func() bool {
		return strings.Contains(call(t, other, "inspect_session", nil).Text, `"running":{`)
	})
	decidePending(t, h, "send_file", store.ApprovalAllowed, "web:user/ann")
	if r := waitResult(t, ch); r.IsError {
		t.Fatalf("send_file approved: %s", r.Text)
	}
	mustWrite(t, gate, "")
	var files []string
	for _, a := range h.all.actions() {
		if strings.HasPrefix(a, "file ") {
			files = append(files, a)
		}
	}
	if want := []string{"file full:room chart.png main"}; !slices.Equal(files, want) {
		t.Errorf("files sent as %q; want %q (the main channel, as checked and approved)", files, want)
	}
}
