package ipc_test

import (
	"context"
	"os"
	"path/filepath"
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

// TestSendFilePathGrantsSeeTheFile: send_file takes a file's path
// relative to the group folder, or absolute inside it, in any spelling
// that stays in the folder. An operator's rule over paths must see the
// file the call sends: an allow of outbox/* must not send
// outbox/../secret.txt, and a deny of outbox/private* must refuse
// outbox//private/p.txt, outbox/./private/p.txt and the absolute path.
func TestSendFilePathGrantsSeeTheFile(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"!send_file", "send_file(path=outbox/*)", "!send_file(path=outbox/private*)"})
	})
	dir, err := filepath.Abs(groups.Layout{DataDir: h.dir}.Dir("acme"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"secret.txt": "secret", "outbox/private/p.txt": "private", "outbox/report.txt": "report"} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := h.connect(t, "acme", true)
	for _, p := range []string{"outbox/../secret.txt", "outbox/private/p.txt", "outbox//private/p.txt", "outbox/./private/p.txt",
		filepath.Join(dir, "outbox", "private", "p.txt"), filepath.Join(dir, "secret.txt")} {
		if r := call(t, c, "send_file", map[string]any{"chat_jid": "full:acme", "path": p}); !r.refused() {
			t.Errorf("send_file %s: %+v; want it refused", p, r)
		}
	}
	for _, a := range h.all.actions() {
		t.Errorf("a refused send_file went out: %s", a)
	}
	for _, p := range []string{"outbox/report.txt", "./outbox/report.txt", filepath.Join(dir, "outbox", "report.txt")} {
		if r := call(t, c, "send_file", map[string]any{"chat_jid": "full:acme", "path": p}); r.IsError {
			t.Errorf("send_file %s under an allow of outbox/*: %+v", p, r)
		}
	}
}
