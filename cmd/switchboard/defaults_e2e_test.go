package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

// TestE2EBuiltInDefaults runs the real binary on a config that sets only
// the web chat's port and turns the admin listener off, and checks the
// defaults CONTRACT §2 lists as a user meets them: data_dir ./data (beside
// the working directory), the groups root (tier 0, operator_folder) and
// main, the route platform: web → main, agent.command
// ["switchboard", "demo-agent"] (argv[0] "switchboard" is this binary,
// sandboxed as agent.sandbox auto decides), output text, and log format text.
func TestE2EBuiltInDefaults(t *testing.T) {
	t.Parallel()
	bin := switchboardBinary(t)
	dir := t.TempDir()
	web := freeAddr(t)
	cfg := "adapters: {web: {listen: \"" + web + "\"}}\nadmin: {listen: \"\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run") // --config defaults to ./switchboard.yaml
	cmd.Dir = dir
	logs := &testlog.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	base := "http://" + web
	testwait.For(t, 20*time.Second, "the web chat", func() bool {
		resp, err := http.Get(base + "/api/rooms/lobby/messages")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	body, _ := json.Marshal(map[string]string{"sender": "ann", "text": "hello"})
	resp, err := http.Post(base+"/api/rooms/lobby/messages", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var reply string
	testwait.For(t, 30*time.Second, "the demo agent's reply", func() bool {
		for _, m := range botMessages(t, base, "lobby") {
			reply = m.Text
		}
		return reply != ""
	})
	if !strings.Contains(reply, "demo agent in folder main") {
		t.Errorf("reply %q; want the built-in demo agent answering in folder main", reply)
	}
	if !strings.Contains(logs.String(), "level=INFO msg=") {
		t.Errorf("the log is not in text format:\n%s", logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "switchboard.db")); err != nil {
		t.Errorf("data_dir is not ./data: %v", err)
	}
	cli := func(args ...string) string {
		c := exec.Command(bin, append([]string{"--json"}, args...)...)
		c.Dir = dir
		out, err := c.Output()
		if err != nil {
			t.Fatalf("switchboard %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}
	var gs []groupRow
	if err := json.Unmarshal([]byte(cli("group", "list")), &gs); err != nil {
		t.Fatal(err)
	}
	tiers := map[string]int{}
	for _, g := range gs {
		tiers[string(g.Folder)] = g.Tier
	}
	if len(tiers) != 2 || tiers["root"] != 0 || tiers["main"] != 1 {
		t.Errorf("groups %v; want root (tier 0) and main (tier 1)", tiers)
	}
	var rs []struct {
		Match  map[string]string `json:"match"`
		Target string            `json:"target"`
		Mode   string            `json:"mode"`
	}
	out := cli("route", "list")
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Match) != 1 || rs[0].Match["platform"] != "web" || rs[0].Target != "main" || rs[0].Mode != "trigger" {
		t.Errorf("routes %s; want the one route platform: web → main", out)
	}
}
