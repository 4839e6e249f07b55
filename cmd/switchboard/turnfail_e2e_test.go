package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testmcp"
)

// An agent that answered its chat through a tool (reply, over the real
// mcp-bridge) and then failed — a non-zero exit, or the timeout — is not
// run again for the same messages: the chat gets the answer once and one
// notice that something went wrong after it, not the answer three times
// between "Retrying" and "could not answer after 3 attempts".
func TestE2EFailureAfterToolReplyNotRetried(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, after, timeout, reason string }{
		{"exit", "exit 1", "", "exit status 1"},
		{"timeout", "exec sleep 60", "3s", "timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin := switchboardBinary(t)
			agent := `{
  ` + testmcp.ShellHandshake(testmcp.Options{Client: "sh"}) + `
  printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"reply","arguments":{"chat_jid":"%s","text":"the answer, through a tool"}}}\n' "$SWITCHBOARD_CHAT_JID"
  while ! grep -q '"id":2,' "$out/mcp-$n.tmp" 2>/dev/null; do sleep 0.05; done
} | ` + quoteAll([]string{bin})[0] + ` mcp-bridge > "$out/mcp-$n.tmp"
` + tc.after
			dir := newE2E(t, e2eConfig{agent: agent, timeout: tc.timeout})
			g := startGW(t, dir)
			g.mustPost("lobby", "ann", "a question")
			bot := g.waitBot("lobby", 2)
			if bot[0].Text != "the answer, through a tool" {
				t.Fatalf("bot messages %+v; want the tool's answer first", bot)
			}
			if n := bot[1].Text; !strings.Contains(n, tc.reason) || strings.Contains(n, "Retrying") || strings.Contains(n, "could not answer") {
				t.Errorf("notice %q; want it to say %q, and neither that it retries nor that it could not answer", n, tc.reason)
			}
			// The notice is queued with the turn's record: the batch is
			// settled by now, and not left to run again.
			if fs, err := openStore(t, dir).PendingFolders(context.Background()); err != nil || len(fs) != 0 {
				t.Errorf("work pending after the failed turn that answered: %v %v", fs, err)
			}
			if got := g.botMessages("lobby"); len(got) != 2 {
				t.Errorf("bot messages %+v; want the answer and one notice", got)
			}
			if err := g.stop(30 * time.Second); err != nil {
				t.Fatal(err)
			}
			if n := turnCount(dir, "main"); n != 1 {
				t.Errorf("the agent ran %d times; want once", n)
			}
		})
	}
}
