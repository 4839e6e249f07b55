package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"switchboard/internal/testmcp"
)

// TestBridgeWithoutFlagsInATurn: inside a real agent turn, a bare
// `switchboard mcp-bridge` joins the turn's own group, through
// SWITCHBOARD_MCP_SOCKET or, when the MCP client does not pass that variable
// on (Codex passes only a few by default), through the working directory,
// which is the group folder. The reply it sends through the bridge is the
// one message the chat gets.
func TestBridgeWithoutFlagsInATurn(t *testing.T) {
	for _, c := range []struct{ name, env string }{
		{"env var", ""},
		{"cwd only", "env -u SWITCHBOARD_MCP_SOCKET "},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := shortDir(t)
			script := filepath.Join(dir, "agent.sh")
			bridge := strings.Join(quoteAll(helperArgv("mcp-bridge")), " ")
			body := `#!/bin/sh
cat > /dev/null
{
  ` + testmcp.ShellHandshake(testmcp.Options{Client: "sh"}) + `
  printf '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"reply","arguments":{"chat_jid":"%s","text":"via bare bridge"}}}\n' "$SWITCHBOARD_CHAT_JID"
} | ` + c.env + bridge + ` > bridge.out 2> bridge.err
echo "stdout reply"
`
			if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
			base := gatewayRun(t, dir, []string{script})
			post(t, base, "lobby", "hi")
			bots := waitBots(t, dir, base, "lobby", 1)
			if len(bots) != 1 || bots[0].Text != "via bare bridge" {
				out, _ := os.ReadFile(filepath.Join(dir, "groups", "main", "bridge.out"))
				errOut, _ := os.ReadFile(filepath.Join(dir, "groups", "main", "bridge.err"))
				t.Fatalf("bot messages %+v, want exactly the MCP reply\nbridge stdout: %s\nbridge stderr: %s", bots, out, errOut)
			}
		})
	}
}

// TestBridgeFindsNestedGroupFromCwd: with no flags and no environment, the
// bridge started in <data_dir>/groups/acme/eng joins
// <data_dir>/ipc/acme/eng/mcp.sock (here a plain listening socket).
func TestBridgeFindsNestedGroupFromCwd(t *testing.T) {
	data := filepath.Join(shortDir(t), "data")
	folder := filepath.Join(data, "groups", "acme", "eng")
	sockDir := filepath.Join(data, "ipc", "acme", "eng")
	for _, d := range []string{folder, sockDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("unix", filepath.Join(sockDir, "mcp.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Write([]byte("acme/eng got " + line))
	}()
	argv := helperArgv("mcp-bridge")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = folder
	cmd.Env = []string{"SWITCHBOARD_TEST_HELPER=1", "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader("{\"ping\":1}\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bridge: %v: %s", err, errText(err))
	}
	if string(out) != "acme/eng got {\"ping\":1}\n" {
		t.Errorf("bridge stdout %q", out)
	}
}

// TestBridgeOutsideAGroupSaysWhatToGive: no flags, no variable and a
// working directory that is no group folder is a usage error naming the ways
// to give the socket.
func TestBridgeOutsideAGroupSaysWhatToGive(t *testing.T) {
	data := filepath.Join(shortDir(t), "data")
	for _, wd := range []string{t.TempDir(), filepath.Join(data, "groups", "ghost")} {
		if err := os.MkdirAll(wd, 0o700); err != nil {
			t.Fatal(err)
		}
		argv := helperArgv("mcp-bridge")
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir = wd
		cmd.Env = []string{"SWITCHBOARD_TEST_HELPER=1"}
		_, err := cmd.Output()
		msg := errText(err)
		for _, want := range []string{"--socket PATH", "--folder FOLDER", "SWITCHBOARD_MCP_SOCKET", "working directory"} {
			if !strings.Contains(msg, want) {
				t.Errorf("cwd %s: error %q does not mention %s", wd, msg, want)
			}
		}
	}
}

// errText is a failed command's stderr.
func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
