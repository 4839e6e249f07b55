package ipc_test

import (
	"testing"

	"switchboard/grants"
	"switchboard/ipc"
)

// toolCatalog is the grants catalog derived from the tool registry.
func toolCatalog(t testing.TB) *grants.Catalog {
	t.Helper()
	c, err := ipc.Catalog(true)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAllToolsCatalog(t *testing.T) {
	all := toolCatalog(t).Tools()
	if len(all) != 41 {
		t.Errorf("the catalog has %d tools, want the 36 of CONTRACT §9, report_usage, list_budgets, set_budget (issue 21), approve_tool (§15) and set_mid_turn (issue 32)", len(all))
	}
	seen := map[string]bool{}
	for _, tool := range all {
		if seen[tool] {
			t.Errorf("tool %q listed twice", tool)
		}
		seen[tool] = true
		// A tool name must be usable as a literal rule.
		if r, err := grants.Parse(tool); err != nil || r.Action != tool {
			t.Errorf("tool %q is not a valid literal rule: %v", tool, err)
		}
	}
	if all[0] != "send" || all[len(all)-1] != "approve_tool" {
		t.Errorf("catalog order: first %q last %q, want send ... approve_tool", all[0], all[len(all)-1])
	}
	all[0] = "changed"
	if toolCatalog(t).Tools()[0] != "send" {
		t.Error("Tools() returns a shared slice")
	}
}
