package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
)

// TestE2EDataDirLayout checks CONTRACT §3 as an operator finds it on disk
// while `switchboard run` runs on a data_dir that did not exist:
// <data_dir>/switchboard.db in WAL mode, groups/<folder>/ for each group,
// ipc/<folder>/mcp.sock (a socket, mode 0600) created when a group is added
// and removed when it is deleted, and a .mcp.json in each group folder whose
// command line (mcp-bridge --socket <absolute path>) reaches the group.
func TestE2EDataDirLayout(t *testing.T) {
	t.Parallel()
	dir := newE2E(t, e2eConfig{agent: "echo hi"})
	data := filepath.Join(dir, "data")
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Fatalf("data dir exists before the first start: %v", err)
	}
	g := startGW(t, dir)

	if fi, err := os.Stat(filepath.Join(data, "switchboard.db")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("switchboard.db: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, "switchboard.db-wal")); err != nil {
		t.Errorf("no switchboard.db-wal while the gateway runs (want WAL mode): %v", err)
	}
	for _, folder := range []string{"root", "main"} {
		checkGroupLayout(t, data, folder)
	}

	g.mustCLI("group", "add", "acme")
	g.mustCLI("group", "add", "acme/eng")
	sock := filepath.Join(data, "ipc", "acme", "eng", "mcp.sock")
	testwait.For(t, 3*time.Second, "acme/eng's socket", func() bool {
		_, err := os.Stat(sock)
		return err == nil
	})
	checkGroupLayout(t, data, "acme/eng")

	g.mustCLI("group", "rm", "acme/eng")
	testwait.For(t, 3*time.Second, "acme/eng's socket removed", func() bool {
		_, err := os.Stat(sock)
		return os.IsNotExist(err)
	})
	if _, err := os.Stat(filepath.Join(data, "ipc", "acme", "mcp.sock")); err != nil {
		t.Errorf("acme's socket went with its child's: %v", err)
	}
}

// checkGroupLayout checks folder's working directory, socket and
// .mcp.json, and talks MCP through the command line .mcp.json names.
func checkGroupLayout(t *testing.T, data, folder string) {
	t.Helper()
	gdir := filepath.Join(data, "groups", filepath.FromSlash(folder))
	if fi, err := os.Stat(gdir); err != nil || !fi.IsDir() {
		t.Fatalf("group folder %s: %v", gdir, err)
	}
	sock := filepath.Join(data, "ipc", filepath.FromSlash(folder), "mcp.sock")
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatalf("socket of %s: %v", folder, err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want a socket with mode 0600", sock, fi.Mode())
	}
	b, err := os.ReadFile(filepath.Join(gdir, ".mcp.json"))
	if err != nil {
		t.Fatalf(".mcp.json of %s: %v", folder, err)
	}
	var mcpJSON struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(b, &mcpJSON); err != nil || len(mcpJSON.MCPServers) != 1 {
		t.Fatalf(".mcp.json of %s: %v\n%s", folder, err, b)
	}
	for _, srv := range mcpJSON.MCPServers {
		if want := []string{"mcp-bridge", "--socket", sock}; strings.Join(srv.Args, " ") != strings.Join(want, " ") || !filepath.IsAbs(sock) {
			t.Errorf(".mcp.json of %s: args %q, want %q", folder, srv.Args, want)
		}
		// What Claude Code does with it: run the command in the folder and
		// speak MCP on its stdio.
		cmd := exec.Command(srv.Command, srv.Args...)
		cmd.Dir = gdir
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatalf("run .mcp.json's command %q: %v", srv.Command, err)
		}
		fmt.Fprintln(in, testmcp.InitializeRequest(1, testmcp.Options{}))
		fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		fmt.Fprintln(in, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"inspect_session","arguments":{}}}`)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var answer string
		for sc.Scan() {
			if strings.Contains(sc.Text(), `"id":2`) {
				answer = sc.Text()
				break
			}
		}
		in.Close()
		_ = cmd.Wait()
		if !strings.Contains(answer, `\"folder\":\"`+folder+`\"`) || strings.Contains(answer, `"isError":true`) {
			t.Errorf("inspect_session through %s's .mcp.json: %s; want its folder named", folder, answer)
		}
	}
}
