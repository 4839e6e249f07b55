package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
)

// TestE2EDemoAgentHonoursADeniedReply: with the built-in demo agent (what
// `make run` and the README's tour run) and reply made an ask rule, an
// approver's Deny in the web chat keeps the answer out of the chat. The
// demo agent took the refused reply as "MCP failed" and printed the answer
// on stdout, which the gateway posted: the user pressed Deny and saw the
// very text they had denied. It now says it did not answer, and why.
func TestE2EDemoAgentHonoursADeniedReply(t *testing.T) {
	dir := newE2E(t, e2eConfig{command: `["switchboard", "demo-agent"]`, sandbox: "none"})
	bin := switchboardBinary(t)
	// Before the first start: the CLI works on the data dir alone.
	for _, args := range [][]string{{"group", "add", "main"}, {"grants", "set", "main", "?reply"}, {"approvals", "approvers", "main", "web:user/ann"}} {
		if out, err := runCLI(bin, dir, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	g := startGW(t, dir)
	g.mustPost("lobby", "bob", "tell me the secret")

	var id string
	testwait.For(t, 20*time.Second, "a pending approval request", func() bool {
		out, err := g.cli("--json", "approvals", "list")
		if err != nil {
			t.Fatal(err)
		}
		var rows []struct{ ID, Status string }
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatalf("approvals list: %v\n%s", err, out)
		}
		for _, r := range rows {
			if r.Status == "pending" {
				id = r.ID
			}
		}
		return id != ""
	})
	resp, err := g.http.Post(fmt.Sprintf("http://%s/api/approvals/%s", g.addr, id), "application/json",
		strings.NewReader(`{"decision":"deny","sender":"ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/approvals/%s: %d", id, resp.StatusCode)
	}

	// The request, then the agent's word that it did not answer.
	msgs := g.waitBot("lobby", 2)
	for _, m := range msgs {
		if strings.Contains(m.Text, "You said") && !strings.Contains(m.Text, "Approval needed") {
			t.Errorf("the denied answer was posted anyway: %q", m.Text)
		}
	}
	if last := msgs[len(msgs)-1].Text; !strings.Contains(last, "did not answer") || !strings.Contains(last, "denied by web:user/ann") {
		t.Errorf("last bot message %q; want the agent saying it did not answer, denied by web:user/ann", last)
	}
}
