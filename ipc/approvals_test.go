package ipc_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// approvalSetup is the standard setup with web:user/ann approving acme's
// requests and acme's list_routes made an ask.
func approvalSetup(ctx context.Context, st *store.Store) error {
	if err := standardSetup(ctx, st); err != nil {
		return err
	}
	if err := st.SetGrantOverrides(ctx, "acme", []string{"?list_routes"}); err != nil {
		return err
	}
	return st.SetApprovers(ctx, "acme", []string{"web:user/ann"})
}

// callAsync calls tool on c and delivers the result on the channel.
func callAsync(t *testing.T, c *client.Client, tool string, args map[string]any) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		r, err := tryCall(c, tool, args)
		if err != nil {
			r = callResult{Text: "call error: " + err.Error(), IsError: true}
		}
		out <- r
	}()
	return out
}

// decidePending waits for one pending request of tool and decides it as
// who (a person's press, or the CLI: the store's conditional update).
func decidePending(t *testing.T, h *harness, tool string, status store.ApprovalStatus, who string) store.Approval {
	t.Helper()
	var a store.Approval
	testwait.For(t, 10*time.Second, "a pending request for "+tool, func() bool {
		p, err := h.st.PendingApprovals(context.Background())
		if err != nil || len(p) != 1 || p[0].Tool != tool {
			return false
		}
		a = p[0]
		return true
	})
	if _, ok, err := h.st.DecideApproval(context.Background(), a.ID, status, who, ""); err != nil || !ok {
		t.Fatalf("decide %s: %v %v", a.ID, ok, err)
	}
	return a
}

func waitResult(t *testing.T, ch <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(15 * time.Second):
		t.Fatal("the call did not return after its decision")
		return callResult{}
	}
}

// TestApproveTool: approve_tool speaks Claude Code's permission-prompt
// protocol: a tool approvals.agent_tools does not name (the harness names
// Bash) is allowed at once with its input; Bash waits for a decision and
// gets allow with its input, or deny with a message naming the decider.
func TestApproveTool(t *testing.T) {
	h := newHarness(t, approvalSetup)
	c := h.connect(t, "acme", false)
	var p struct {
		Behavior     string         `json:"behavior"`
		UpdatedInput map[string]any `json:"updatedInput"`
		Message      string         `json:"message"`
	}
	r := call(t, c, "approve_tool", map[string]any{"tool_name": "Read", "input": map[string]any{"file_path": "/etc/hosts"}, "tool_use_id": "toolu_1"})
	r.decode(t, &p)
	if r.IsError || p.Behavior != "allow" || p.UpdatedInput["file_path"] != "/etc/hosts" {
		t.Fatalf("Read: %+v %s", p, r.Text)
	}
	if pend, _ := h.st.Approvals(context.Background(), 10); len(pend) != 0 {
		t.Errorf("a tool agent_tools does not name made a request: %+v", pend)
	}

	ch := callAsync(t, c, "approve_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "rm -rf build", "env": map[string]any{"GITHUB_TOKEN": "ghp_x"}}, "tool_use_id": "toolu_2"})
	a := decidePending(t, h, "Bash", store.ApprovalDenied, "web:user/ann")
	if !strings.Contains(a.Args, "command: rm -rf build") || strings.Contains(a.Args, "ghp_x") {
		t.Errorf("request shows %q, want the command and no env value", a.Args)
	}
	r = waitResult(t, ch)
	p = struct {
		Behavior     string         `json:"behavior"`
		UpdatedInput map[string]any `json:"updatedInput"`
		Message      string         `json:"message"`
	}{}
	r.decode(t, &p)
	if r.IsError || p.Behavior != "deny" || !strings.Contains(p.Message, "denied by web:user/ann") {
		t.Fatalf("denied Bash: %+v %s", p, r.Text)
	}

	ch = callAsync(t, c, "approve_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{"command": "make"}, "tool_use_id": "toolu_3"})
	decidePending(t, h, "Bash", store.ApprovalAllowed, "cli")
	r = waitResult(t, ch)
	r.decode(t, &p)
	if r.IsError || p.Behavior != "allow" || p.UpdatedInput["command"] != "make" {
		t.Fatalf("allowed Bash: %+v %s", p, r.Text)
	}
}

// TestApproveToolEmptyInput: a tool called with no input (Claude Code's
// input {}) is allowed with "updatedInput":{} in the result, as the
// permission-prompt protocol's allow result always carries it (CONTRACT
// §15); it was left out, so the result was {"behavior":"allow"}. A deny
// carries no updatedInput.
func TestApproveToolEmptyInput(t *testing.T) {
	h := newHarness(t, approvalSetup)
	c := h.connect(t, "acme", false)
	r := call(t, c, "approve_tool", map[string]any{"tool_name": "TodoWrite", "input": map[string]any{}, "tool_use_id": "toolu_1"})
	if r.IsError || r.Text != `{"behavior":"allow","updatedInput":{}}` {
		t.Errorf("allowed with no input: %s", r.Text)
	}
	ch := callAsync(t, c, "approve_tool", map[string]any{"tool_name": "Bash", "input": map[string]any{}, "tool_use_id": "toolu_2"})
	decidePending(t, h, "Bash", store.ApprovalDenied, "web:user/ann")
	if r := waitResult(t, ch); r.IsError || !strings.HasPrefix(r.Text, `{"behavior":"deny","message":"not approved: denied by web:user/ann`) ||
		strings.Contains(r.Text, "updatedInput") {
		t.Errorf("denied: %s", r.Text)
	}
}

// TestAskOverHTTP: a call whose rule asks waits over the MCP HTTP endpoint
// (a worker's turn) as over the socket: it runs once allowed, and is
// refused naming the decider once denied.
func TestAskOverHTTP(t *testing.T) {
	h := newHarness(t, approvalSetup)
	c := h.connectHTTP(t, "acme", false)
	if !strings.Contains(strings.Join(listed(t, c), " "), "list_routes") {
		t.Fatal("an ask rule hid list_routes")
	}
	ch := callAsync(t, c, "list_routes", nil)
	decidePending(t, h, "list_routes", store.ApprovalAllowed, "web:user/ann")
	if r := waitResult(t, ch); r.IsError || !strings.Contains(r.Text, "routes") {
		t.Fatalf("allowed call: %+v", r)
	}
	ch = callAsync(t, c, "list_routes", nil)
	decidePending(t, h, "list_routes", store.ApprovalDenied, "web:user/ann")
	if r := waitResult(t, ch); !r.refused() || !strings.Contains(r.Text, "denied by web:user/ann") {
		t.Fatalf("denied call: %+v", r)
	}
}

// TestAskWithBadJIDArgs: a call whose rule asks but whose args cannot run
// (a sender that is not a JID) is an isError at once; no person is asked
// to approve it. The request went to the approvers, and the bad arg was
// reported only after someone approved it.
func TestAskWithBadJIDArgs(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := approvalSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"?find_messages"})
	})
	c := h.connect(t, "acme", false)
	ch := callAsync(t, c, "find_messages", map[string]any{"query": "x", "sender": "ann"})
	var r callResult
	var pending int
	testwait.For(t, 10*time.Second, "a result or a pending request", func() bool {
		select {
		case r = <-ch:
			return true
		default:
		}
		p, err := h.st.PendingApprovals(context.Background())
		pending = len(p)
		return err == nil && pending > 0
	})
	if pending > 0 {
		decidePending(t, h, "find_messages", store.ApprovalDenied, "web:user/ann")
		waitResult(t, ch)
		t.Fatalf("find_messages with sender \"ann\" asked the approvers, want an isError at once")
	}
	if !r.IsError || !strings.Contains(r.Text, `param sender: invalid JID "ann"`) {
		t.Errorf("find_messages with sender \"ann\": %+v", r)
	}
}

// TestApproveToolNamingSwitchboardsTool: approve_tool is Claude Code's
// permission prompt for its own tools (Bash, Write, mcp__server__tool),
// never for one of switchboard's. An agent calling it with tool_name
// list_routes got an approval request looking like the grant ask of
// list_routes (input of its choosing), and "Allow for this session" on it
// allowed every later list_routes ask of the session, any arguments,
// without asking. It is refused at once now, and the ask still asks.
func TestApproveToolNamingSwitchboardsTool(t *testing.T) {
	out := shortTempDir(t)
	h := newHarnessAgent(t, approvalSetup, testagent.Script(t, `cat > /dev/null
touch "$1/started"
while [ ! -e "$1/go" ]; do sleep 0.02; done`, out))
	h.waitStarted(t)
	h.deliver(t, "web:acme", "m1", "hello") // a turn runs, so a session grant would hold
	testwait.For(t, 10*time.Second, "acme's turn running", func() bool {
		_, err := os.Stat(filepath.Join(out, "started"))
		return err == nil
	})
	defer os.WriteFile(filepath.Join(out, "go"), nil, 0o644)
	c := h.connect(t, "acme", false)
	ch := callAsync(t, c, "approve_tool", map[string]any{"tool_name": "list_routes", "input": map[string]any{}})
	var r callResult
	testwait.For(t, 10*time.Second, "approve_tool's answer", func() bool {
		select {
		case r = <-ch:
			return true
		default:
		}
		// A person fooled by the request allows it for the session.
		if p, err := h.st.PendingApprovals(context.Background()); err == nil && len(p) == 1 {
			h.st.DecideApproval(context.Background(), p[0].ID, store.ApprovalSession, "web:user/ann", "")
		}
		return false
	})
	var p struct{ Behavior, Message string }
	r.decode(t, &p)
	if p.Behavior != "deny" || !strings.Contains(p.Message, "list_routes is one of switchboard's own tools") {
		t.Errorf("approve_tool for list_routes: %s; want a deny saying it is switchboard's", r.Text)
	}
	// list_routes, an ask for acme, still asks.
	ch = callAsync(t, c, "list_routes", nil)
	decidePending(t, h, "list_routes", store.ApprovalDenied, "web:user/ann")
	if r := waitResult(t, ch); !r.refused() {
		t.Errorf("list_routes after approve_tool's request: %+v, want refused by ann", r)
	}
}
