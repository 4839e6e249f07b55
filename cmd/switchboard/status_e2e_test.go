package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"switchboard/store"
)

// status reads what the running gateway persisted, and says so after it
// stopped; a backup taken during a burst holds every message acknowledged
// before it began.
func TestE2EStatusAndBackup(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: `exit 3`, timeout: "5s"})
	g := startGW(t, dir)
	g.mustPost("lobby", "ann", "this turn fails")
	waitFor(t, 20*time.Second, "the failed turn and the web adapter's state recorded", func() bool {
		out, err := g.cli("--json", "status")
		return err == nil && strings.Contains(out, `"failed_turns": [`) && strings.Contains(out, `"state": "connected"`)
	})
	out, err := g.cli("--json", "status")
	if err != nil {
		t.Fatal(err, out)
	}
	var rep struct {
		Gateway struct {
			Running bool `json:"running"`
			PID     int  `json:"pid"`
		} `json:"gateway"`
		Adapters map[string]struct {
			State string `json:"state"`
		} `json:"adapters"`
		FailedTurns []struct {
			Folder string `json:"Folder"`
		} `json:"failed_turns"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err, out)
	}
	if !rep.Gateway.Running || rep.Gateway.PID != g.cmd.Process.Pid || rep.Adapters["web"].State != "connected" || len(rep.FailedTurns) == 0 {
		t.Errorf("status while running: %s", out)
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
	waitFor(t, 20*time.Second, "the burst under way", func() bool {
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
			if _, err := st.MessageByID(context.Background(), fmt.Sprintf("web:burst%d", i), id); err == nil {
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
	if !strings.Contains(out, "not running (last seen") {
		t.Errorf("status after stop:\n%s", out)
	}
}
