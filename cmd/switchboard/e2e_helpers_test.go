package main

// Helpers for the end-to-end tests: they build the real binary once, run
// `switchboard run` as a subprocess on a temp data dir with a scripted agent,
// and talk to it only as a user and an operator would: the web API, the CLI,
// signals, and (after it stopped) the database file.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"switchboard/internal/testwait"
	"switchboard/store"
)

var e2eBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// switchboardBinary builds ./cmd/switchboard once per test run, with the
// sqlite_fts5 tag, and returns its path.
func switchboardBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: an end-to-end test that builds and runs the binary")
	}
	e2eBin.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			e2eBin.err = fmt.Errorf("no go tool to build the binary: %w", err)
			return
		}
		if e2eBin.dir, err = os.MkdirTemp("", "switchboard-e2e-"); err != nil {
			e2eBin.err = err
			return
		}
		e2eBin.path = filepath.Join(e2eBin.dir, "switchboard")
		cmd := exec.Command(goTool, "build", "-o", e2eBin.path, ".")
		cmd.Env = append(os.Environ(), "GOFLAGS=-tags=sqlite_fts5", "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			e2eBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if e2eBin.err != nil {
		t.Fatal(e2eBin.err)
	}
	return e2eBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	removeSharedScale()
	if e2eBin.dir != "" {
		os.RemoveAll(e2eBin.dir)
	}
	os.Exit(code)
}

// e2eConfig is what a test varies in switchboard.yaml.
type e2eConfig struct {
	agent         string   // shell run after the recording prologue (see agentPrologue)
	output        string   // agent.output; default text
	resumeArgs    []string // agent.resume_args
	timeout       string   // agent.timeout; default 20s
	maxConcurrent int      // default 4
	engageTTL     string   // default 10m
	groups        []string // besides root
	routes        string   // YAML list; default every web room → main
	adapters      string   // more YAML lines under adapters:, indented two spaces
	sandbox       string   // agent.sandbox; default auto (bubblewrap, which make test installs)
	binds         []string // agent.binds paths (read-only), before the test's own; "{dir}" is the test's directory
	command       string   // agent.command as a YAML flow list; default ["/bin/sh", {agent}] ({agent}: the script, quoted)
	agentExtra    string   // more YAML lines under agent:, indented two spaces
	extra         string   // more top-level YAML, after routes
}

// agentPrologue records every turn of a folder in $E2E_OUT/<folder>/: the
// prompt, the SWITCHBOARD_* environment, the working directory and the
// arguments, numbered from 1 in the order the folder's turns ran ($n).
const agentPrologue = `out="$E2E_OUT/$(echo "$SWITCHBOARD_FOLDER" | tr / _)"
mkdir -p "$out"
n=$(( $(ls "$out" | grep -c '^prompt-') + 1 ))
env | grep '^SWITCHBOARD_' | sort > "$out/env.tmp"
cat > "$out/prompt.tmp"
pwd -P > "$out/cwd-$n"
printf '%s\n' "$@" > "$out/argv-$n"
mv "$out/env.tmp" "$out/env-$n"
mv "$out/prompt.tmp" "$out/prompt-$n"
`

// gw is one `switchboard run` process.
type gw struct {
	t    testing.TB
	bin  string
	dir  string // the process's cwd; holds switchboard.yaml, data/ and out/
	cmd  *exec.Cmd
	addr string
	// adminAddr is the admin listener's address (admin.listen).
	adminAddr string
	http      *http.Client

	procLog
	exited chan struct{}
	err    error // Wait's result, once exited is closed
}

// procLog keeps the JSON log records a switchboard process (gateway or
// worker) writes to stderr.
type procLog struct {
	mu   sync.Mutex
	logs []map[string]any
}

// read collects r's lines until it ends; a line that is not JSON is kept
// as {"msg": "(not json)", "line": ...}.
func (l *procLog) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) != nil {
			rec = map[string]any{"msg": "(not json)", "line": sc.Text()}
		}
		l.mu.Lock()
		l.logs = append(l.logs, rec)
		l.mu.Unlock()
	}
}

// records returns the records with msg whose attribute key is val (every
// record with msg when key is "").
func (l *procLog) records(msg, key, val string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, r := range l.logs {
		if r["msg"] == msg && (key == "" || r[key] == val) {
			out = append(out, r)
		}
	}
	return out
}

// findLog returns the last record with msg.
func (l *procLog) findLog(msg string) map[string]any {
	if rs := l.records(msg, "", ""); len(rs) > 0 {
		return rs[len(rs)-1]
	}
	return nil
}

func (l *procLog) logText() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sb strings.Builder
	for _, r := range l.logs {
		b, _ := json.Marshal(r)
		sb.Write(b)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// newE2E writes the config and agent script into a fresh dir.
func newE2E(t testing.TB, c e2eConfig) string {
	t.Helper()
	dir := t.TempDir()
	if c.output == "" {
		c.output = "text"
	}
	if c.timeout == "" {
		c.timeout = "20s"
	}
	if c.maxConcurrent == 0 {
		c.maxConcurrent = 4
	}
	if c.engageTTL == "" {
		c.engageTTL = "10m"
	}
	if c.routes == "" {
		c.routes = "  - {match: {platform: web}, target: main}\n"
	}
	if c.sandbox == "" {
		c.sandbox = "auto"
	}
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte(agentPrologue+c.agent+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The agents record into out/, which a sandboxed agent sees through a
	// bind. (The script is bound because agent.command names it.)
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	if c.command == "" {
		c.command = `["/bin/sh", {agent}]`
	}
	resume, _ := json.Marshal(c.resumeArgs)
	if c.resumeArgs == nil {
		resume = []byte("[]")
	}
	var groups strings.Builder
	for _, g := range append([]string{"root", "main"}, c.groups...) {
		fmt.Fprintf(&groups, "  - folder: %s\n", g)
	}
	cfg := fmt.Sprintf(`data_dir: ./data
operator_folder: root
log: {level: debug, format: json}
agent:
  command: %s
  resume_args: %s
  output: %s
  timeout: %s
  max_concurrent: %d
  sandbox: %s
  env: [E2E_OUT]
  binds: [%s{path: %q, rw: true}]
%sengage_ttl: %s
adapters:
  web: {enabled: true, listen: "127.0.0.1:0"}
%sadmin: {listen: "127.0.0.1:0"}
groups:
%sroutes:
%s%s`, strings.ReplaceAll(c.command, "{agent}", strconv.Quote(agent)), resume, c.output, c.timeout, c.maxConcurrent, c.sandbox,
		extraBinds(c.binds, dir), filepath.Join(dir, "out"), c.agentExtra, c.engageTTL, c.adapters, groups.String(), c.routes, c.extra)
	if err := os.WriteFile(filepath.Join(dir, "switchboard.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// extraBinds is binds as YAML flow entries, each followed by ", ".
func extraBinds(binds []string, dir string) string {
	var b strings.Builder
	for _, p := range binds {
		fmt.Fprintf(&b, "{path: %q}, ", strings.ReplaceAll(p, "{dir}", dir))
	}
	return b.String()
}

// startGW runs `switchboard run` in dir and waits until the web chat listens.
// env adds variables to the gateway's environment.
func startGW(t testing.TB, dir string, env ...string) *gw {
	t.Helper()
	g := &gw{t: t, bin: switchboardBinary(t), dir: dir, exited: make(chan struct{}),
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	g.cmd = exec.Command(g.bin, "--config", "switchboard.yaml", "run")
	g.cmd.Dir = dir
	g.cmd.Env = append(append(os.Environ(), "E2E_OUT="+filepath.Join(dir, "out")), env...)
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		g.read(stderr)
	}()
	go func() {
		<-scanned // Wait closes the pipe: read everything first
		g.err = g.cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		// Stop as an operator would, so running turns drain and no agent
		// writes into the temp dir while it is removed.
		if g.alive() {
			_ = g.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-g.exited:
			case <-time.After(15 * time.Second):
			}
		}
		g.kill()
		g.http.CloseIdleConnections()
		if t.Failed() {
			t.Logf("gateway log (%s):\n%s", dir, g.logText())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for g.addr == "" {
		if rec := g.findLog("web chat listening"); rec != nil {
			g.addr, _ = rec["addr"].(string)
			break
		}
		select {
		case <-g.exited:
			t.Fatalf("gateway exited at start: %v\n%s", g.err, g.logText())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not start listening:\n%s", g.logText())
		}
	}
	if rec := g.findLog("admin listening"); rec != nil {
		g.adminAddr, _ = rec["addr"].(string)
	}
	return g
}

// kill sends SIGKILL (a crash) and waits for the process to be gone.
func (g *gw) kill() {
	select {
	case <-g.exited:
		return
	default:
	}
	_ = g.cmd.Process.Kill()
	<-g.exited
}

// stop sends SIGTERM and waits up to within for a clean exit.
func (g *gw) stop(within time.Duration) error {
	g.t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-g.exited:
		return g.err
	case <-time.After(within):
		g.t.Fatalf("gateway did not stop within %s after SIGTERM", within)
		return nil
	}
}

func (g *gw) alive() bool {
	select {
	case <-g.exited:
		return false
	default:
		return true
	}
}

// cli runs a switchboard command against the same config and data dir.
func (g *gw) cli(args ...string) (string, error) {
	return runCLI(g.bin, g.dir, args...)
}

func runCLI(bin, dir string, args ...string) (string, error) {
	cmd := exec.Command(bin, append([]string{"--config", "switchboard.yaml"}, args...)...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("switchboard %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func (g *gw) mustCLI(args ...string) string {
	g.t.Helper()
	out, err := g.cli(args...)
	if err != nil {
		g.t.Fatal(err)
	}
	return out
}

// apiMsg is a message as GET /api/rooms/{room}/messages shows it.
type apiMsg struct {
	Seq     int64  `json:"seq"`
	ID      string `json:"id"`
	Sender  string `json:"sender"`
	Name    string `json:"name"`
	Text    string `json:"text"`
	Time    string `json:"time"`
	FromBot bool   `json:"from_bot"`
	Topic   string `json:"topic"`
}

// post sends a message as sender; it returns the HTTP status and the stored id.
func (g *gw) post(ctx context.Context, room, sender, text, clientID string) (int, string, error) {
	body, _ := json.Marshal(map[string]string{"sender": sender, "text": text, "id": clientID})
	if clientID == "" {
		body, _ = json.Marshal(map[string]string{"sender": sender, "text": text})
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+g.addr+"/api/rooms/"+room+"/messages", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := g.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var r struct {
		ID  string `json:"id"`
		Seq int64  `json:"seq"`
	}
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &r)
	return resp.StatusCode, r.ID, nil
}

func (g *gw) mustPost(room, sender, text string) string {
	g.t.Helper()
	status, id, err := g.post(context.Background(), room, sender, text, "")
	if err != nil || status != http.StatusAccepted {
		g.t.Fatalf("POST to %s: %d %v", room, status, err)
	}
	return id
}

// messages returns every message of a room, paging through the API.
func (g *gw) messages(room string) []apiMsg {
	g.t.Helper()
	var all []apiMsg
	after := int64(0)
	for {
		resp, err := g.http.Get(fmt.Sprintf("http://%s/api/rooms/%s/messages?after=%d&limit=1000", g.addr, room, after))
		if err != nil {
			g.t.Fatal(err)
		}
		var r struct{ Messages []apiMsg }
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			g.t.Fatalf("GET %s: %d %v", room, resp.StatusCode, err)
		}
		all = append(all, r.Messages...)
		if len(r.Messages) < 1000 {
			return all
		}
		after = r.Messages[len(r.Messages)-1].Seq
	}
}

// botMessages returns the bot's messages in a room.
func (g *gw) botMessages(room string) []apiMsg {
	var out []apiMsg
	for _, m := range g.messages(room) {
		if m.FromBot {
			out = append(out, m)
		}
	}
	return out
}

// waitBot waits until room shows n bot messages and returns them.
func (g *gw) waitBot(room string, n int) []apiMsg {
	g.t.Helper()
	var got []apiMsg
	testwait.For(g.t, 20*time.Second, fmt.Sprintf("%d bot messages in %s", n, room), func() bool {
		got = g.botMessages(room)
		return len(got) >= n
	})
	return got
}

// turnFile reads file <name>-<n> the agent recorded for folder's nth turn.
func turnFile(t testing.TB, dir, folder, name string, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "out", strings.ReplaceAll(folder, "/", "_"), name+"-"+strconv.Itoa(n)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// turnCount is how many turns of folder the agent recorded.
func turnCount(dir, folder string) int {
	ents, _ := os.ReadDir(filepath.Join(dir, "out", strings.ReplaceAll(folder, "/", "_")))
	n := 0
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "prompt-") {
			n++
		}
	}
	return n
}

func turnEnv(t testing.TB, dir, folder string, n int) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(turnFile(t, dir, folder, "env", n)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		env[k] = v
	}
	return env
}

// openStore opens the database of an e2e directory's data dir (the gateway
// may be running: WAL).
func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	return openDB(t, filepath.Join(dir, "data"))
}

// openDB opens <dataDir>/switchboard.db until the test ends.
func openDB(t testing.TB, dataDir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(dataDir, "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// folderAgents lists the running processes of folder's turns under the
// gateway in dir (data_dir ./data), and of no other test's: they carry its
// MCP socket's path.
func folderAgents(t testing.TB, dir, folder string) []int {
	t.Helper()
	return agentPIDs(t, "SWITCHBOARD_MCP_SOCKET="+filepath.Join(dir, "data", "ipc", folder, "mcp.sock"))
}

// agentPIDs lists the host pids of live processes whose environment holds
// entry (for example SWITCHBOARD_TURN_ID=t-…): a sandboxed agent's own $$ is
// a pid inside its PID namespace, so tests find its processes this way.
func agentPIDs(t testing.TB, entry string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie is dead, waiting to be reaped
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if string(kv) == entry {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
