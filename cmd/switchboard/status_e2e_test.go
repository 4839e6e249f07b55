package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/adapters"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// status reads what the running gateway persisted (adapters, failed turns),
// says whether it stopped cleanly or died, and shows only the adapters the
// last gateway ran; a backup taken during a burst holds every message
// acknowledged before it began.
func TestE2EStatusAndBackup(t *testing.T) {
	t.Parallel()
	// An unreachable Telegram: the adapter keeps backing off.
	dir := newE2E(t, e2eConfig{agent: `exit 3`, timeout: "5s",
		adapters: "  telegram: {enabled: true, token: \"1:x\", api_url: \"http://127.0.0.1:1\"}\n"})
	g := startGW(t, dir)
	g.mustPost("lobby", "ann", "this turn fails")
	// The report is read from the status that showed all of it: the
	// Telegram adapter cycles between backing_off and connecting, so a
	// second `status` can catch it connecting.
	var out string
	testwait.For(t, 20*time.Second, "the failed turn and both adapters' states recorded", func() bool {
		o, err := g.cli("--json", "status")
		// The failed turn's error, not its chat: that also shows while it runs.
		if err == nil && strings.Contains(o, `exited with status 3`) && strings.Contains(o, `"state": "connected"`) &&
			strings.Contains(o, `"state": "backing_off"`) {
			out = o
			return true
		}
		return false
	})
	var rep struct {
		Gateway struct {
			Running bool `json:"running"`
			PID     int  `json:"pid"`
		} `json:"gateway"`
		Adapters map[string]struct {
			State string `json:"state"`
			Err   string `json:"error"`
		} `json:"adapters"`
		FailedTurns []struct {
			Folder  string `json:"folder"`
			ChatJID string `json:"chat_jid"`
			Error   string `json:"error"`
		} `json:"failed_turns"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	if !rep.Gateway.Running || rep.Gateway.PID != g.cmd.Process.Pid || rep.Adapters["web"].State != "connected" ||
		rep.Adapters["telegram"].State != "backing_off" || rep.Adapters["telegram"].Err == "" {
		t.Errorf("status while running: %s", out)
	}
	if f := rep.FailedTurns; len(f) == 0 || f[0].Folder != "main" || f[0].ChatJID != "web:lobby" || !strings.Contains(f[0].Error, "3") {
		t.Errorf("failed turns: %+v; want main's turn in web:lobby that exited with 3", f)
	}

	// A burst of messages, and a backup in the middle of it.
	var acked []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 25 {
				id := g.mustPost(fmt.Sprintf("burst%d", i), "bob", fmt.Sprint("m", j))
				mu.Lock()
				acked = append(acked, id)
				mu.Unlock()
			}
		})
	}
	testwait.For(t, 20*time.Second, "the burst under way", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 20
	})
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	backup := filepath.Join(t.TempDir(), "copy.db")
	if out, err := g.cli("backup", backup); err != nil || !strings.Contains(out, "verified") {
		t.Fatalf("backup: %v\n%s", err, out)
	}
	wg.Wait()
	if out, err := g.cli("backup", backup); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("backup over an existing file: %v\n%s", err, out)
	}
	st, err := store.Open(context.Background(), backup)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range before {
		found := false
		for i := range 8 {
			if _, err := st.MessageByID(context.Background(), adapters.JID(fmt.Sprintf("web:burst%d", i)), adapters.MessageID(id)); err == nil {
				found = true
			}
		}
		if !found {
			t.Errorf("message %s, acknowledged before the backup began, is not in it", id)
		}
	}
	if err := g.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	out, _ = g.cli("status")
	if !strings.Contains(out, "not running: stopped cleanly") || !strings.Contains(out, "adapters (as last seen)") {
		t.Errorf("status after stop:\n%s", out)
	}

	// Telegram disabled, and the next gateway dies (kill -9).
	cfg := filepath.Join(dir, "switchboard.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, bytes.Replace(b, []byte("telegram: {enabled: true"), []byte("telegram: {enabled: false"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	g = startGW(t, dir)
	testwait.For(t, 20*time.Second, "the new gateway's heartbeat", func() bool {
		out, err := g.cli("--json", "status")
		return err == nil && strings.Contains(out, fmt.Sprintf(`"pid": %d`, g.cmd.Process.Pid))
	})
	g.kill()
	out, _ = g.cli("status")
	if !strings.Contains(out, "did not stop cleanly") || strings.Contains(out, "telegram") || !strings.Contains(out, "web") {
		t.Errorf("status after kill -9, telegram disabled:\n%s", out)
	}
}
