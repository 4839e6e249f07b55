package ipc

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestListGrantsFollowsSync: list_grants' answer is kept between calls
// (encoded once per Sync), and the first call after a grant change already
// answers with the new rules and tools.
func TestListGrantsFollowsSync(t *testing.T) {
	s, _ := newStubServer(t)
	rc := dialGroup(t, s, "acme")
	rc.initialize()
	id := 0
	listGrants := func() (overrides, tools []string) {
		t.Helper()
		id++
		rc.send(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_grants","arguments":{}}}`, id)
		m := rc.recv()
		for m.Method != "" { // the change's list_changed
			m = rc.recv()
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(m.Result, &res); err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("list_grants: %s (%v)", m, err)
		}
		var g struct {
			Folder    string   `json:"folder"`
			Tier      int      `json:"tier"`
			Overrides []string `json:"overrides"`
			Tools     []string `json:"tools"`
		}
		if err := json.Unmarshal([]byte(res.Content[0].(mcp.TextContent).Text), &g); err != nil {
			t.Fatal(err)
		}
		if g.Folder != "acme" || g.Tier != 1 || g.Overrides == nil {
			t.Fatalf("list_grants: %+v", g)
		}
		return g.Overrides, g.Tools
	}
	for range 2 {
		if over, tools := listGrants(); len(over) != 0 || !slices.Contains(tools, "like") {
			t.Fatalf("before the change: overrides %v, tools %v", over, tools)
		}
	}
	setOverrides(t, s, "!like")
	if over, tools := listGrants(); !slices.Equal(over, []string{"!like"}) || slices.Contains(tools, "like") {
		t.Errorf("first call after the change: overrides %v, tools %v", over, tools)
	}
	setOverrides(t, s)
	if over, tools := listGrants(); len(over) != 0 || !slices.Contains(tools, "like") {
		t.Errorf("first call after the change back: overrides %v, tools %v", over, tools)
	}
}
