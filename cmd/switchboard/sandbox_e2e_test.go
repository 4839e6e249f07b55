package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testenv"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
)

// An agent in the sandbox tries what a hostile agent with a shell would:
// everything outside its folder and socket fails, its own folder, socket and
// mcp-bridge work, and a grandchild that called setsid is gone after the
// turn times out.
func TestE2ESandboxConfinesAgent(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	bin := switchboardBinary(t)
	// The agent runs in data/groups/main: the data directory is ../..
	// MCP over the bridge: initialize, then tools/list (main, tier 1, lists
	// reply); the requests are written to the sandbox's private /tmp.
	probe := `
data="$(cd ../.. && pwd)"
` + testmcp.ShellHandshake(testmcp.Options{Client: "t"}) + ` \
  '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' > /tmp/mcp-requests
bridge="timeout 5 ` + bin + ` mcp-bridge"
listed="grep -q '\"name\":\"reply\"'"
# The command line the group folder's .mcp.json gives Claude Code.
mcpcmd="$(sed -n 's/.*"command": *"\([^"]*\)".*/\1/p' .mcp.json)"
mcpargs="$(sed -n '/"args"/,/]/p' .mcp.json | grep -o '"[^"]*"' | tr -d '"' | grep -vx args | tr '\n' ' ')"
mcpjson="timeout 5 $mcpcmd $mcpargs"
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1=allowed"; else echo "$1=denied"; fi; }
{
try read_db "cat $data/switchboard.db"
try list_groups "ls $data/groups/other"
try list_data "ls -A $data $data/groups $data/ipc | grep -v -e '^groups\$' -e '^ipc\$' -e '^main\$' -e ':\$' -e '^\$' | grep -q ."
try other_socket "$bridge --socket $data/ipc/other/mcp.sock </tmp/mcp-requests | $listed"
try root_by_folder "$bridge --data-dir $data --folder root </tmp/mcp-requests | $listed"
try write_usr "touch /usr/escape-$$ && rm /usr/escape-$$"
try write_groups "touch $data/groups/escape"
try write_binary "touch ` + bin + `"
try token "[ -n \"\$FAKE_BOT_TOKEN\" ]"
try token_in_proc "cat /proc/*/environ | tr '\\0' '\\n' | grep -q FAKE_BOT_TOKEN"
try mount "mkdir -p /tmp/m && mount -t tmpfs x /tmp/m"
try mknod "mknod /tmp/disk b 8 0"
try sysctl "v=\$(cat /proc/sys/vm/swappiness) && echo \$v > /proc/sys/vm/swappiness"
try own_folder "echo hi > ./inside.txt"
try own_socket "[ -S \"\$SWITCHBOARD_MCP_SOCKET\" ]"
try bridge "$bridge --socket \"\$SWITCHBOARD_MCP_SOCKET\" </tmp/mcp-requests | $listed"
try bare_bridge "$bridge </tmp/mcp-requests | $listed"
try bare_bridge_cwd "env -u SWITCHBOARD_MCP_SOCKET $bridge </tmp/mcp-requests | $listed"
try mcp_json "env -u SWITCHBOARD_MCP_SOCKET $mcpjson </tmp/mcp-requests | $listed"
} > "$E2E_OUT/probe.tmp"
mv "$E2E_OUT/probe.tmp" "$E2E_OUT/probe"
[ "$SWITCHBOARD_CHAT_JID" = web:slow ] || { echo probed; exit 0; }
setsid sh -c 'while :; do sleep 0.05; done' </dev/null >/dev/null 2>&1 &
exec sleep 30`
	// The operator binds a parent of the data directory (as binding the
	// home directory would): the data directory stays hidden all the same.
	// The turn limit leaves the probe room under a loaded test run (it
	// starts some twenty processes, mcp-bridge among them); the slow turn
	// below is what hits it.
	e2e := newE2E(t, e2eConfig{agent: probe, timeout: "8s", groups: []string{"other"}, binds: []string{"{dir}"}})
	g := startGW(t, e2e, "FAKE_BOT_TOKEN=123:secret")
	g.mustPost("lobby", "ann", "probe")
	if got := g.waitBot("lobby", 1)[0].Text; got != "probed" {
		t.Fatalf("agent answered %q", got)
	}
	b, err := os.ReadFile(filepath.Join(e2e, "out", "probe"))
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, line := range strings.Fields(string(b)) {
		k, v, _ := strings.Cut(line, "=")
		results[k] = v
	}
	for probe, want := range map[string]string{
		"read_db": "denied", "list_groups": "denied", "list_data": "denied", "other_socket": "denied", "root_by_folder": "denied",
		"write_usr": "denied", "write_groups": "denied", "write_binary": "denied", "token": "denied", "token_in_proc": "denied",
		"mount": "denied", "mknod": "denied", "sysctl": "denied",
		"own_folder": "allowed", "own_socket": "allowed", "bridge": "allowed",
		"bare_bridge": "allowed", "bare_bridge_cwd": "allowed", "mcp_json": "allowed",
	} {
		if results[probe] != want {
			t.Errorf("%s: %s; want %s", probe, results[probe], want)
		}
	}
	if _, err := os.Stat(filepath.Join(e2e, "data", "groups", "escape")); !os.IsNotExist(err) {
		t.Errorf("the agent wrote into the data directory outside its folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e2e, "data", "groups", "main", "inside.txt")); err != nil {
		t.Errorf("the agent's write to its own folder is missing: %v", err)
	}

	// A timed-out turn takes a setsid grandchild with it.
	g.mustPost("slow", "ann", "hang")
	testwait.For(t, 30*time.Second, "the slow turn's failure notice", func() bool {
		for _, m := range g.messages("slow") {
			if m.FromBot && strings.Contains(m.Text, "timed out") {
				return true
			}
		}
		return false
	})
	env := turnEnv(t, e2e, "main", 2)
	testwait.For(t, 5*time.Second, "the timed-out turn's processes gone", func() bool {
		return len(agentPIDs(t, "SWITCHBOARD_TURN_ID="+env["SWITCHBOARD_TURN_ID"])) == 0
	})
}

// requireBwrap fails (never skips) without bubblewrap: make test installs it.
func requireBwrap(t testing.TB) {
	t.Helper()
	testenv.Require(t, "bwrap", "make test installs it, or apt-get install bubblewrap")
}

// A subgroup's folder (data/groups/main/sub) and socket directory
// (data/ipc/main/sub) sit inside its parent's, which the parent's agent may
// write. Swapping the folder for a symlink to the data directory gave the
// subgroup's next sandbox the whole data directory read-write (bubblewrap
// bound the path as it found it): that turn now fails, naming the symlink.
// And the parent's sandbox showed its subgroups' sockets (its whole socket
// directory was bound): it could act as the subgroup, or swap the
// subgroup's socket directory for one holding the operator's socket. Only
// its own socket is there now.
func TestE2ESandboxParentCannotRedirectChild(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	agent := `case "$SWITCHBOARD_FOLDER" in
main)
  data="$(cd ../.. && pwd)"
  sock="$(dirname "$SWITCHBOARD_MCP_SOCKET")"
  if grep -q swap-folder "$out/prompt-$n"; then mv sub sub.moved && ln -s "$data" sub && echo swapped; fi
  if grep -q swap-socket "$out/prompt-$n"; then
    if [ -e "$sock/sub" ]; then mv "$sock/sub" "$sock/sub.moved" && ln -s ../root "$sock/sub" && echo swapped
    else ls -A "$sock" | tr '\n' ' '; fi
  fi ;;
main/sub)
  { ls -A . | tr '\n' ' '; echo; stat -L -c %i "$SWITCHBOARD_MCP_SOCKET"; } > "$E2E_OUT/sub-view" 2>&1
  echo seen ;;
esac`
	for _, tc := range []struct {
		swap, mainSays string
		subFails       string // the subgroup's turn error; "": it runs
	}{
		{"swap-folder", "swapped", "data/groups/main/sub is a symlink"},
		{"swap-socket", "mcp.sock", ""},
	} {
		t.Run(tc.swap, func(t *testing.T) {
			t.Parallel()
			e2e := newE2E(t, e2eConfig{agent: agent, groups: []string{"main/sub"},
				routes: "  - {seq: -1, match: {platform: web, room: sub}, target: main/sub}\n  - {match: {platform: web}, target: main}\n"})
			g := startGW(t, e2e)
			g.mustPost("lobby", "ann", tc.swap)
			if got := g.waitBot("lobby", 1)[0].Text; got != tc.mainSays {
				t.Fatalf("main answered %q, want %q", got, tc.mainSays)
			}
			data := filepath.Join(e2e, "data")
			var rootSock, subSock syscall.Stat_t
			if err := syscall.Stat(filepath.Join(data, "ipc", "root", "mcp.sock"), &rootSock); err != nil {
				t.Fatal(err)
			}
			g.mustPost("sub", "ann", "look")
			reply := g.waitBot("sub", 1)[0].Text
			view, _ := os.ReadFile(filepath.Join(e2e, "out", "sub-view"))
			if strings.Contains(string(view), "switchboard.db") {
				t.Errorf("the subgroup's agent saw the data directory as its folder: %s", view)
			}
			if strings.Contains(string(view), fmt.Sprint(rootSock.Ino)) {
				t.Errorf("the subgroup's agent got the operator's socket as its own: %s", view)
			}
			if tc.subFails == "" {
				if err := syscall.Stat(filepath.Join(data, "ipc", "main", "sub", "mcp.sock"), &subSock); err != nil {
					t.Fatal(err)
				}
				if reply != "seen" || !strings.Contains(string(view), fmt.Sprint(subSock.Ino)) {
					t.Errorf("the subgroup's turn: %q, view %s; want it run with its own socket", reply, view)
				}
				return
			}
			if reply == "seen" {
				t.Errorf("the subgroup's turn ran in the swapped directories")
			}
			// Its turn failed instead, saying why.
			st := openStore(t, e2e)
			testwait.For(t, 10*time.Second, "the subgroup's failed turn naming the symlink", func() bool {
				ts, err := st.Turns(context.Background(), "main/sub", 5)
				return err == nil && len(ts) > 0 && strings.Contains(ts[0].Error, tc.subFails)
			})
		})
	}
}
