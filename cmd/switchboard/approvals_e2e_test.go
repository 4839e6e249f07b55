package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testlog"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
	"switchboard/store"
)

// approvalAgent is an agent that, for a message "go N", calls send (which
// the test's grants make an ask) through the bridge and keeps the answer
// in out-N; for "go twice" it calls send a second time once the first
// answered. Stdin stays open until the answers are in.
func approvalAgent(t *testing.T, dir string) string {
	t.Helper()
	script := filepath.Join(dir, "agent.sh")
	bridge := strings.Join(quoteAll(helperArgv("mcp-bridge")), " ")
	body := `#!/bin/sh
prompt=$(cat)
n=$(printf '%s\n' "$prompt" | sed -n 's/.*>go \([a-z0-9]*\)<.*/\1/p' | tail -1)
[ -n "$n" ] || exit 0
call() { printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"send","arguments":{"chat_jid":"%s","text":"sent %s"}}}\n' "$1" "$SWITCHBOARD_CHAT_JID" "$2"; }
: > "out-$n.tmp"
{
  ` + testmcp.ShellHandshake(testmcp.Options{Client: "sh"}) + `
  call 2 "$n"
  last=2
  if [ "$n" = twice ]; then
    while ! grep -q '"id":2,' "out-$n.tmp"; do sleep 0.05; done
    call 3 "$n again"
    last=3
  fi
  while ! grep -q "\"id\":$last," "out-$n.tmp"; do sleep 0.05; done
} | ` + bridge + ` > "out-$n.tmp" 2> "err-$n"
mv "out-$n.tmp" "out-$n"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// approvalGateway runs `switchboard run` in-process (web adapter, the
// approval agent, send made an ask by the test's grants) until stop.
func approvalGateway(t *testing.T, dir, script, extra string) (base string, stop func(), logs *testlog.Buffer) {
	t.Helper()
	return approvalGatewayGroups(t, dir, script, "[{folder: root}, {folder: main}]", extra)
}

// approvalGatewayGroups is approvalGateway with the config's groups list.
func approvalGatewayGroups(t *testing.T, dir, script, groups, extra string) (base string, stop func(), logs *testlog.Buffer) {
	t.Helper()
	addr := freeAddr(t)
	cfg := fmt.Sprintf(`data_dir: %s
operator_folder: root
log: {level: debug, format: json}
agent: {command: [%q], output: none, timeout: 60s, sandbox: none, env: [SWITCHBOARD_TEST_HELPER]}
admin: {listen: "127.0.0.1:0"}
adapters:
  web: {enabled: true, listen: "%s"}
groups: %s
routes:
  - {match: {platform: web}, target: main}
%s
`, dir, script, addr, groups, extra)
	stop, logs = runInProcess(t, dir, addr, cfg)
	return "http://" + addr, stop, logs
}

// adminAddr is the admin listener's address, from the gateway's log.
func adminAddr(t *testing.T, logs *testlog.Buffer) string {
	t.Helper()
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "admin listening" {
			return rec.Addr
		}
	}
	t.Fatal("no admin listener in the log")
	return ""
}

// httpText GETs url and returns the body.
func httpText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func postAs(t *testing.T, base, room, sender, text string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"sender": sender, "text": text})
	resp, err := http.Post(base+"/api/rooms/"+room+"/messages", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("post %q: %s", text, resp.Status)
	}
}

// waitBotText waits for a bot message in lobby that contains want, and
// returns it.
func waitBotText(t *testing.T, base, want string) string {
	t.Helper()
	return waitRoomText(t, base, "lobby", want)
}

func waitRoomText(t *testing.T, base, room, want string) string {
	t.Helper()
	var got string
	testwait.For(t, 30*time.Second, "a bot message with "+want+" in "+room, func() bool {
		for _, m := range botMessages(t, base, room) {
			if strings.Contains(m.Text, want) {
				got = m.Text
				return true
			}
		}
		return false
	})
	return got
}

// waitRequest waits for the approval request of the call "sent N" and
// returns its id.
func waitRequest(t *testing.T, dir string, n int) string {
	t.Helper()
	var id string
	testwait.For(t, 30*time.Second, fmt.Sprintf("approval request %d", n), func() bool {
		st := openDB(t, dir)
		defer st.Close()
		all, err := st.Approvals(context.Background(), 100)
		if err != nil || len(all) < n {
			return false
		}
		id = all[0].ID
		return true
	})
	return id
}

// waitOut waits for the agent's answers to turn N.
func waitOut(t *testing.T, dir, n string) string {
	t.Helper()
	var out []byte
	testwait.For(t, 40*time.Second, "the agent's answers to go "+n, func() bool {
		var err error
		out, err = os.ReadFile(filepath.Join(dir, "groups", "main", "out-"+n))
		return err == nil
	})
	return string(out)
}

func approvalStatus(t *testing.T, dir, id string) store.Approval {
	t.Helper()
	st := openDB(t, dir)
	defer st.Close()
	a, err := st.Approval(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestE2EApprovals: an ask rule in the real gateway, with the web chat (the
// request shows with buttons; here it is decided by /approve and /deny
// messages, which work on every platform, and by the CLI): allow → the tool ran; a non-approver changes nothing; deny →
// isError naming the decider; the CLI decides; allow for this session → the
// second call does not ask; after a restart a late /approve is answered
// "expired"; timeout → denied; no approvers → denied at once.
func TestE2EApprovals(t *testing.T) {
	dir := shortDir(t)
	script := approvalAgent(t, dir)
	// Set before the gateway starts, so its first turn sees them.
	mustSB(t, dir, "group", "add", "main")
	mustSB(t, dir, "grants", "set", "main", "?send")
	mustSB(t, dir, "approvals", "approvers", "main", "web:user/ann")
	base, stop, logs := approvalGateway(t, dir, script, "approvals: {timeout: 60s}")

	// Allow once, after a non-approver's try changed nothing.
	postAs(t, base, "lobby", "ann", "go 1")
	id := waitRequest(t, dir, 1)
	req := waitBotText(t, base, "(request `"+id+"`)")
	if !strings.Contains(req, "Group `main` wants to call `send`") || !strings.Contains(req, "text: sent 1") {
		t.Errorf("request text:\n%s", req)
	}
	postAs(t, base, "lobby", "bob", "/approve "+id)
	waitBotText(t, base, "Not yours to approve")
	if a := approvalStatus(t, dir, id); a.Status != store.ApprovalPending {
		t.Fatalf("a non-approver's /approve changed the request: %+v", a)
	}
	postAs(t, base, "lobby", "ann", "/approve "+id)
	waitBotText(t, base, "Allowed once by web:user/ann")
	if out := waitOut(t, dir, "1"); strings.Contains(out, `"isError":true`) {
		t.Errorf("allowed call failed:\n%s", out)
	}
	waitBotText(t, base, "sent 1")
	postAs(t, base, "lobby", "ann", "/approve "+id)
	waitBotText(t, base, "Allowed once by web:user/ann.") // the second /approve is answered, nothing changes

	// Deny: the call gets isError naming the decider, and did not run.
	postAs(t, base, "lobby", "ann", "go 2")
	id = waitRequest(t, dir, 2)
	postAs(t, base, "lobby", "ann", "/deny "+id)
	out := waitOut(t, dir, "2")
	if !strings.Contains(out, `"isError":true`) || !strings.Contains(out, "denied by web:user/ann") {
		t.Errorf("denied call's answer:\n%s", out)
	}

	// The operator's CLI decides.
	postAs(t, base, "lobby", "ann", "go 3")
	id = waitRequest(t, dir, 3)
	mustSB(t, dir, "approvals", "allow", id)
	if out := waitOut(t, dir, "3"); strings.Contains(out, `"isError":true`) {
		t.Errorf("call the CLI allowed failed:\n%s", out)
	}
	waitBotText(t, base, "sent 3")

	// Allow for this session: the second call of the turn does not ask.
	postAs(t, base, "lobby", "ann", "go twice")
	id = waitRequest(t, dir, 4)
	postAs(t, base, "lobby", "ann", "/approve "+id+" session")
	if out := waitOut(t, dir, "twice"); strings.Contains(out, `"isError":true`) {
		t.Errorf("session-allowed calls failed:\n%s", out)
	}
	waitBotText(t, base, "sent twice again")
	st := openDB(t, dir)
	all, err := st.Approvals(context.Background(), 100)
	st.Close()
	if err != nil || len(all) != 4 {
		t.Errorf("requests after the session grant: %d (%v), want 4: the second call asked again", len(all), err)
	}

	// A request pending when the gateway stops: a /approve after the
	// restart is answered "expired". (Another room: lobby's session has
	// send allowed now.)
	postAs(t, base, "other", "ann", "go 5")
	id = waitRequest(t, dir, 5)
	waitRoomText(t, base, "other", "(request `"+id+"`)")
	// Pending: on switchboard status and the status page; the decisions
	// so far on /metrics.
	if out := mustSB(t, dir, "status"); !regexp.MustCompile(`approvals\s+` + id + ` main\s+send\s+pending`).MatchString(out) {
		t.Errorf("status does not show pending request %s:\n%s", id, out)
	}
	admin := "http://" + adminAddr(t, logs)
	if page := httpText(t, admin+"/"); !strings.Contains(page, "<td>"+id+"</td>") {
		t.Errorf("status page does not show pending request %s", id)
	}
	metrics := httpText(t, admin+"/metrics")
	for _, want := range []string{`switchboard_approvals_total{decision="allowed"} 2`, `switchboard_approvals_total{decision="denied"} 1`,
		`switchboard_approvals_total{decision="session"} 1`, "switchboard_approval_decision_seconds_count 4"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	stop()
	base, _, _ = approvalGateway(t, dir, script, "approvals: {timeout: 2s}")
	postAs(t, base, "other", "ann", "/approve "+id)
	waitRoomText(t, base, "other", "Expired:")
	if a := approvalStatus(t, dir, id); a.Status != store.ApprovalExpired {
		t.Errorf("request after restart: %+v", a)
	}

	// Timeout (approvals.timeout 2s now): denied, saying so.
	postAs(t, base, "third", "ann", "go 6")
	if out := waitOut(t, dir, "6"); !strings.Contains(out, `"isError":true`) || !strings.Contains(out, "timed out") {
		t.Errorf("timed-out call's answer:\n%s", out)
	}

	// No approvers: denied at once.
	mustSB(t, dir, "approvals", "approvers", "main")
	postAs(t, base, "fourth", "ann", "go 7")
	if out := waitOut(t, dir, "7"); !strings.Contains(out, `"isError":true`) || !strings.Contains(out, "no approvers") {
		t.Errorf("call without approvers:\n%s", out)
	}
}
