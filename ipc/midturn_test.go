package ipc_test

import (
	"context"
	"testing"
)

// set_mid_turn: a tier-1 group sets it for itself and its subgroups (the
// store keeps it; the gateway reads it at each message), never for a
// group outside its subtree; "default" clears it.
func TestSetMidTurn(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	c := h.connect(t, "acme", true)
	call(t, c, "set_mid_turn", map[string]any{"folder": "acme/eng", "mode": "steer"}).decode(t, &map[string]any{})
	if m, err := h.st.GroupMidTurn(ctx, "acme/eng"); err != nil || m != "steer" {
		t.Fatalf("acme/eng mid_turn %q, %v; want steer", m, err)
	}
	if r := call(t, c, "set_mid_turn", map[string]any{"folder": "root", "mode": "interrupt"}); !r.IsError {
		t.Errorf("acme set root's mid_turn: %+v", r)
	}
	if m, _ := h.st.GroupMidTurn(ctx, "root"); m != "" {
		t.Errorf("root's mid_turn %q; want it untouched", m)
	}
	call(t, c, "set_mid_turn", map[string]any{"folder": "acme/eng", "mode": "default"}).decode(t, &map[string]any{})
	if m, _ := h.st.GroupMidTurn(ctx, "acme/eng"); m != "" {
		t.Errorf("mid_turn %q after default; want cleared", m)
	}
	if r := call(t, c, "set_mid_turn", map[string]any{"folder": "acme", "mode": "later"}); !r.IsError {
		t.Errorf("a bad mode was taken: %+v", r)
	}
}
