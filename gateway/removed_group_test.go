package gateway

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"switchboard/internal/testagent"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// A group removed (group rm) while its turn runs: the turn finishes, and
// when it fails it is not run again, as a failed turn of a group would be:
// the group has no socket and no chats any more. No notice goes to the
// chat (it is no longer the group's), and nothing is left queued.
func TestRemovedGroupsFailedTurnNotRetried(t *testing.T) {
	dir := t.TempDir()
	release, runs := filepath.Join(dir, "release"), filepath.Join(dir, "runs")
	h := newHarness(t, harnessConfig{agent: testagent.Script(t,
		`cat >/dev/null; echo run >> `+runs+`; while [ ! -e `+release+` ]; do sleep 0.01; done; echo boom >&2; exit 1`)})
	h.post(testChat, "m1", "hello")
	testwait.For(t, 10*time.Second, "the turn running", func() bool {
		_, err := os.Stat(runs)
		return err == nil
	})
	if _, err := h.st.RemoveGroup(t.Context(), "main"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the failed turn recorded", func() bool {
		ts := h.turns("main")
		return len(ts) == 1 && ts[0].Status == store.TurnFailed
	})
	if p := h.pending(); len(p) != 0 {
		t.Errorf("pending folders %v after the removed group's turn failed; want none (no retry)", p)
	}
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(runs); string(data) != "run\n" {
		t.Errorf("the agent ran %q; want once", data)
	}
	for _, m := range h.botMessages(testChat) {
		t.Errorf("the chat got %q; want no notice for a removed group's turn", m.Text)
	}
}
