package ipc_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/groups"
	"switchboard/internal/testwait"
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

// TestFindMessagesWithoutSenderKeepsSenderDenials: a rule that keeps one
// person's messages from a group's searches,
// !find_messages(sender=web:user/bob), is not dodged by leaving sender
// out: such a search finds everyone else's messages but not bob's.
func TestFindMessagesWithoutSenderKeepsSenderDenials(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"!find_messages(sender=web:user/bob)"})
	})
	for _, m := range []adapters.Inbound{
		{Chat: "web:acme", ID: "a1", Sender: "web:user/ann", Text: "budget figures from ann"},
		{Chat: "web:acme", ID: "b1", Sender: "web:user/bob", Text: "budget figures from bob"},
	} {
		if _, err := h.g.Deliver(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	c := h.connect(t, "acme", true)
	senders := func(args map[string]any) []string {
		var res struct {
			Hits []struct {
				Sender string `json:"sender"`
			} `json:"hits"`
		}
		call(t, c, "find_messages", args).decode(t, &res)
		var out []string
		for _, hit := range res.Hits {
			out = append(out, hit.Sender)
		}
		return out
	}
	if got := senders(map[string]any{"query": "budget"}); !slices.Equal(got, []string{"web:user/ann"}) {
		t.Errorf("search without sender finds messages of %v; want ann's only", got)
	}
	if got := senders(map[string]any{"query": "budget", "chat_jid": "web:acme"}); !slices.Equal(got, []string{"web:user/ann"}) {
		t.Errorf("search of web:acme without sender finds messages of %v; want ann's only", got)
	}
	if r := call(t, c, "find_messages", map[string]any{"query": "budget", "sender": "web:user/bob"}); !r.refused() {
		t.Errorf("search for bob's messages: %+v; want it refused", r)
	}
	// Without such a rule a search finds everyone's.
	eng := h.connect(t, "acme/eng", true)
	h.deliver(t, "web:eng", "e1", "budget of eng")
	if r := call(t, eng, "find_messages", map[string]any{"query": "budget"}); r.IsError || !strings.Contains(r.Text, "web:user/ann") {
		t.Errorf("acme/eng search: %+v", r)
	}
}

// TestScheduleGrantsSeeEverySpellingOfAnInterval: schedule_task takes an
// interval as "@every 15m" or "every 15m" (CONTRACT §10), in any case and
// with spaces around it. An operator's "!schedule_task(schedule=@every*)"
// (no interval tasks for this group) refuses each spelling; a cron spec
// still goes through.
func TestScheduleGrantsSeeEverySpellingOfAnInterval(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"!schedule_task(schedule=@every*)"})
	})
	c := h.connect(t, "acme", true)
	task := func(spec string) callResult {
		return call(t, c, "schedule_task", map[string]any{"chat_jid": "web:acme", "prompt": "check the queue", "schedule": spec})
	}
	for _, spec := range []string{"@every 15m", "every 15m", "EVERY 15m", " @every 15m", "Every  1h"} {
		if r := task(spec); !r.refused() || !strings.Contains(r.Text, `"!schedule_task(schedule=@every*)"`) {
			t.Errorf("schedule_task %q: %+v; want it refused by the @every* deny", spec, r)
		}
	}
	if r := task("0  9 * * 1-5"); r.IsError {
		t.Errorf("schedule_task of a cron spec: %+v", r)
	}
}

// TestLikeGrantsSeeEverySpellingOfAReaction: like takes a reaction as
// the emoji or its shortcode (":thumbsdown:", "-1"), with or without the
// presentation selector. An operator's "!like(reaction=👎)" refuses each
// spelling; another reaction still goes through.
func TestLikeGrantsSeeEverySpellingOfAReaction(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"!like(reaction=👎)"})
	})
	c := h.connect(t, "acme", true)
	like := func(reaction string) callResult {
		return call(t, c, "like", map[string]any{"chat_jid": "web:acme", "message_id": "m1", "reaction": reaction})
	}
	for _, r := range []string{"👎", ":thumbsdown:", "thumbsdown", "-1", ":-1:", "👎\ufe0f", " 👎 "} {
		if res := like(r); !res.refused() || !strings.Contains(res.Text, `"!like(reaction=👎)"`) {
			t.Errorf("like %q: %+v; want it refused by the 👎 deny", r, res)
		}
	}
	if res := like(":+1:"); res.refused() {
		t.Errorf("like of another reaction: %+v", res)
	}
	// A heart is typed with the presentation selector (❤️); its other
	// spellings are the same reaction.
	h2 := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := standardSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"!like(reaction=❤\ufe0f)"})
	})
	c2 := h2.connect(t, "acme", true)
	for _, r := range []string{"❤\ufe0f", "❤", ":heart:"} {
		if res := call(t, c2, "like", map[string]any{"chat_jid": "web:acme", "message_id": "m1", "reaction": r}); !res.refused() {
			t.Errorf("like %q: %+v; want it refused by the ❤️ deny", r, res)
		}
	}
}

// TestGrantChangeWhileAskingRefusesTheCall: a call whose rule asks waits
// for a person, maybe for minutes. When the operator denies the tool
// meanwhile (grants set F '!send'), an approver's later "allow" does not
// run it: a grant change takes effect on the next decision, and the call
// is refused saying why.
func TestGrantChangeWhileAskingRefusesTheCall(t *testing.T) {
	h := newHarness(t, func(ctx context.Context, st *store.Store) error {
		if err := approvalSetup(ctx, st); err != nil {
			return err
		}
		return st.SetGrantOverrides(ctx, "acme", []string{"?send"})
	})
	c := h.connect(t, "acme", false)
	ch := callAsync(t, c, "send", map[string]any{"chat_jid": "web:acme", "text": "waiting for ann"})
	testwait.For(t, 10*time.Second, "a pending request for send", func() bool {
		p, err := h.st.PendingApprovals(context.Background())
		return err == nil && len(p) == 1
	})
	if err := h.st.SetGrantOverrides(context.Background(), "acme", []string{"!send"}); err != nil {
		t.Fatal(err)
	}
	other := h.connect(t, "acme", true)
	testwait.For(t, 10*time.Second, "the deny in effect", func() bool { return !slices.Contains(listed(t, other), "send") })
	decidePending(t, h, "send", store.ApprovalAllowed, "web:user/ann")
	if r := waitResult(t, ch); !r.refused() || !strings.Contains(r.Text, `"!send"`) {
		t.Errorf("the call approved after its tool was denied: %+v; want it refused by !send", r)
	}
	for _, m := range h.web.sends() {
		if m.Text == "waiting for ann" {
			t.Errorf("the send went out: %+v", m)
		}
	}
}
