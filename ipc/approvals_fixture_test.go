package ipc_test

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"switchboard/store"
)

// claudePermissionCall is a permission-prompt call as the real Claude Code
// made it (recorded by cmd/switchboard's TestE2EClaudeCodeApprovals with
// -record-permission-prompt) and the answer it accepted.
type claudePermissionCall struct {
	ClaudeCode string         `json:"claude_code"`
	Arguments  map[string]any `json:"arguments"`
	ResultText string         `json:"result_text"`
}

// TestApproveToolClaudeCodeCall replays Claude Code's recorded
// permission-prompt call against approve_tool: the arguments it sends are
// accepted as they are (no invalid-params error, the tool and its input
// shown to the approver), an allow answers what Claude Code accepted
// (behavior allow, updatedInput its input unchanged), and a deny answers
// behavior deny with a message naming the decider.
func TestApproveToolClaudeCodeCall(t *testing.T) {
	b, err := os.ReadFile("testdata/claude-code/permission-prompt.json")
	if err != nil {
		t.Fatal(err)
	}
	var rec claudePermissionCall
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	input, _ := rec.Arguments["input"].(map[string]any)
	if rec.Arguments["tool_name"] != "Bash" || input["command"] == nil {
		t.Fatalf("the fixture (Claude Code %s) is not a Bash call: %v", rec.ClaudeCode, rec.Arguments)
	}
	h := newHarness(t, approvalSetup)
	c := h.connect(t, "acme", false)

	ch := callAsync(t, c, "approve_tool", rec.Arguments)
	a := decidePending(t, h, "Bash", store.ApprovalAllowed, "web:user/ann")
	// The command as shown: its environment values redacted (the
	// recorded one ends in one, NAME=${NAME:-unset}).
	if shown, _, _ := strings.Cut(input["command"].(string), "IS_SANDBOX="); !strings.Contains(a.Args, "command: "+shown) {
		t.Errorf("the request shows %q, want the recorded command", a.Args)
	}
	r := waitResult(t, ch)
	var got, accepted map[string]any
	r.decode(t, &got)
	if err := json.Unmarshal([]byte(rec.ResultText), &accepted); err != nil {
		t.Fatalf("the recorded answer: %v", err)
	}
	if !reflect.DeepEqual(got, accepted) || got["behavior"] != "allow" || !reflect.DeepEqual(got["updatedInput"], rec.Arguments["input"]) {
		t.Errorf("approve_tool answered %s\nClaude Code %s accepted %s", r.Text, rec.ClaudeCode, rec.ResultText)
	}

	ch = callAsync(t, c, "approve_tool", rec.Arguments)
	decidePending(t, h, "Bash", store.ApprovalDenied, "web:user/ann")
	r = waitResult(t, ch)
	var deny struct{ Behavior, Message string }
	r.decode(t, &deny)
	if deny.Behavior != "deny" || !strings.Contains(deny.Message, "denied by web:user/ann") {
		t.Errorf("denied: %s", r.Text)
	}
}
