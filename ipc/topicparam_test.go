package ipc_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/adapters"
	"switchboard/ipc"
	"switchboard/store"
)

// A call naming a message (message_id, reply_to) carries the message's
// thread as the grant param topic (CONTRACT §7: a call is checked with its
// params), and ipc.GrantParams — what `switchboard grants set` accepts —
// says so for exactly those tools: a rule such as !edit(topic=secret)
// decides edits of messages in that thread, and no other tool carries a
// topic its schema lacks. One rule in ipc serves both (topicFrom).
func TestGrantParamTopicOfAMessage(t *testing.T) {
	derived := []string{"delete", "edit", "like", "pin_message", "reply", "unpin_message"}
	var rules []string
	for _, tool := range derived {
		rules = append(rules, "!"+tool+"(topic=secret)")
	}
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", rules)
	})
	ctx := context.Background()
	for id, topic := range map[string]string{"in-secret": "secret", "in-open": "open"} {
		if _, err := h.g.Deliver(ctx, adapters.Inbound{Chat: "full:team", ID: adapters.MessageID(id), Sender: "full:user/ann", Text: "hi", Topic: topic}); err != nil {
			t.Fatal(err)
		}
	}
	// Which tools' calls carry a topic their schema does not have.
	var carry []string
	tools, err := h.connect(t, "root", true).ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		names, _, ok := ipc.GrantParams(tool.Name)
		if !ok {
			t.Errorf("GrantParams(%s): not in the registry", tool.Name)
		}
		if _, own := tool.InputSchema.Properties["topic"]; slices.Contains(names, "topic") && !own {
			carry = append(carry, tool.Name)
		}
	}
	slices.Sort(carry)
	if !slices.Equal(carry, derived) {
		t.Errorf("tools whose grant params include a message's topic: %v, want %v", carry, derived)
	}
	c := h.connect(t, "acme", true)
	for _, tool := range derived {
		for id, wantRefused := range map[string]bool{"in-secret": true, "in-open": false} {
			args := map[string]any{"chat_jid": "full:team", "message_id": id}
			switch tool {
			case "edit":
				args["text"] = "x"
			case "like":
				args["reaction"] = "👍"
			case "reply":
				args = map[string]any{"chat_jid": "full:team", "reply_to": id, "text": "x"}
			}
			r := call(t, c, tool, args)
			if r.refused() != wantRefused {
				t.Errorf("%s of %s: %+v; want refused=%v by !%s(topic=secret)", tool, id, r, wantRefused, tool)
			}
		}
	}
}
