package ipc_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
	"switchboard/routing"
	"switchboard/store"
)

// TestThreadOwnerAnswersInItsThread: a group routed one thread of a chat
// (another group owns the rest of the chat) answers a message in that
// thread with the tools' defaults: reply without reply_to and send_file
// without topic go to the turn's thread, which it owns, and are allowed.
func TestThreadOwnerAnswersInItsThread(t *testing.T) {
	agent, gate := blockingAgent(t)
	h := newHarnessAgent(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		_, err := st.AddRoute(ctx, routing.Route{Match: map[string]string{"chat_jid": "web:acme", "topic": "t9"}, Target: "acme/eng", Seq: -10})
		return err
	}, agent)
	h.waitStarted(t)
	c := h.connect(t, "acme/eng", true)
	if _, err := h.g.Deliver(context.Background(), adapters.Inbound{Chat: "web:acme", ID: "m7", Sender: "web:user/ann",
		Text: "question", Topic: "t9", Verb: adapters.VerbMention}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "turn running", func() bool {
		return strings.Contains(call(t, c, "inspect_session", nil).Text, `"running":{`)
	})
	if r := call(t, c, "reply", map[string]any{"chat_jid": "web:acme", "text": "answer"}); r.IsError {
		t.Errorf("reply in the thread the group owns: %s", r.Text)
	}
	mustWrite(t, filepath.Join(h.dir, "groups", "acme", "eng", "a.txt"), "a")
	if r := call(t, c, "send_file", map[string]any{"chat_jid": "web:acme", "path": "a.txt"}); r.IsError && !strings.Contains(r.Text, "not supported") {
		t.Errorf("send_file in the thread the group owns: %s", r.Text)
	}
	mustWrite(t, gate, "")
}
