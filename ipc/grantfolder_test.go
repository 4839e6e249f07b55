package ipc_test

import (
	"context"
	"strings"
	"testing"

	"switchboard/groups"
	"switchboard/store"
)

// TestRegisterGroupBareNameKeepsFolderGrants: register_group takes a bare
// name as a child of the caller, and an operator's rules name folders by
// their path. A deny of acme/admin* must refuse "admin" as it refuses
// "acme/admin", and an allow of acme/reports* must let "reports" through.
func TestRegisterGroupBareNameKeepsFolderGrants(t *testing.T) {
	withOverrides := func(t *testing.T, rules ...string) *harness {
		return newHarness(t, func(ctx context.Context, st *store.Store) error {
			if err := standardSetup(ctx, st); err != nil {
				return err
			}
			return st.SetGrantOverrides(ctx, "acme", rules)
		})
	}
	ctx := context.Background()
	t.Run("deny", func(t *testing.T) {
		h := withOverrides(t, "!register_group(folder=acme/admin*)")
		c := h.connect(t, "acme", true)
		for _, name := range []string{"acme/admin", "admin", "admins"} {
			r := call(t, c, "register_group", map[string]any{"folder": name})
			if !r.refused() || !strings.Contains(r.Text, `"!register_group(folder=acme/admin*)"`) {
				t.Errorf("register_group %q: %+v; want it refused by the acme/admin* deny", name, r)
			}
		}
		for _, f := range []groups.Folder{"acme/admin", "acme/admins"} {
			if ok, _ := h.st.GroupExists(ctx, f); ok {
				t.Errorf("%s was created despite the deny", f)
			}
		}
	})
	t.Run("allow", func(t *testing.T) {
		h := withOverrides(t, "!register_group", "register_group(folder=acme/reports*)")
		c := h.connect(t, "acme", true)
		if r := call(t, c, "register_group", map[string]any{"folder": "reports"}); r.IsError {
			t.Errorf("register_group %q under an allow of acme/reports*: %+v", "reports", r)
		}
		if ok, _ := h.st.GroupExists(ctx, "acme/reports"); !ok {
			t.Error("acme/reports was not created")
		}
		if r := call(t, c, "register_group", map[string]any{"folder": "admin"}); !r.refused() {
			t.Errorf("register_group %q outside the allow: %+v", "admin", r)
		}
	})
}
