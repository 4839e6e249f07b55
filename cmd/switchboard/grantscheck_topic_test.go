package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/store"
)

// TestGrantsCheckSeesAMessagesThread: a call naming a message (edit,
// reply_to, like) is checked with the message's thread as its topic, so
// that a thread routed to another group is refused, and so is a rule over
// topics. grants check must say what the MCP server does: it answered
// "allow" for an edit the agent was then refused.
func TestGrantsCheckSeesAMessagesThread(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "group", "add", "other")
	mustSB(t, dir, "route", "add", "--target", "other", "--seq", "1", "chat_jid=web:lobby", "topic=t-other")
	mustSB(t, dir, "route", "add", "--target", "main", "--seq", "2", "chat_jid=web:lobby")
	st := openDB(t, dir)
	for _, m := range []store.Message{
		{ChatJID: "web:lobby", ID: "in-thread", Sender: "web:user/ann", Text: "in other's thread", Topic: "t-other"},
		{ChatJID: "web:lobby", ID: "in-secret", Sender: "web:user/ann", Text: "in a secret thread", Topic: "secret"},
		{ChatJID: "web:lobby", ID: "in-chat", Sender: "web:user/ann", Text: "in the chat"},
	} {
		m.Time = time.Now()
		if _, err := st.InsertMessage(context.Background(), &m); err != nil {
			t.Fatal(err)
		}
	}
	mustSB(t, dir, "grants", "set", "main", "!edit(topic=secret)")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"edit", "jid=web:lobby", "message_id=in-thread"}, "deny\ndenied: topic t-other of chat web:lobby belongs to group other"},
		{[]string{"reply", "jid=web:lobby", "reply_to=in-thread"}, "deny\ndenied: topic t-other of chat web:lobby belongs to group other"},
		{[]string{"edit", "jid=web:lobby", "message_id=in-secret"}, `deny` + "\n" + `denied by rule`},
		{[]string{"edit", "jid=web:lobby", "message_id=in-chat"}, "allow\n"},
		{[]string{"edit", "jid=web:lobby", "message_id=unknown"}, "allow\n"},
	} {
		out := mustSB(t, dir, append([]string{"grants", "check", "main"}, c.args...)...)
		if !strings.HasPrefix(out, c.want) {
			t.Errorf("grants check main %s: %q; want it to start %q", strings.Join(c.args, " "), out, c.want)
		}
	}
}
