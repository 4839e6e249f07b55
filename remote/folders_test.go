package remote

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// A turn on a worker sees the gateway's folder (without its credentials
// and symlinks) and its changes come back: written, changed and deleted
// files land in the gateway's folder, while a file the gateway added
// during the turn (an inbox download) stays, and credentials the agent
// wrote stay on the worker.
func TestFolderRoundTrip(t *testing.T) {
	nc := natsConn(t)
	wdir := t.TempDir()
	var wlog testlog.Buffer
	w := runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1, Dir: wdir, Logger: slog.New(slog.NewTextHandler(&wlog, nil))})
	gate := filepath.Join(t.TempDir(), "gate")
	t.Setenv("GATE", gate)
	r := newRunner(t, nc, `ls -A | sort | tr '\n' ' '
cat work.md sub/keep.txt
echo changed > work.md; echo new > sub/new.txt; rm old.txt; mkdir -p made/deep; echo d > made/deep/f
echo worker-secret > .env; echo key > id_rsa; chmod 755 sub/new.txt; ln -s /etc/passwd wlink
while [ ! -e "$GATE" ]; do sleep 0.02; done`, 0)
	in := turnInput(t, "t-fold-1")
	writeFiles(t, in.Dir, map[string]string{"work.md": "work\n", "old.txt": "old", "sub/keep.txt": "keep\n",
		".env": "GATEWAY_SECRET=1", "certs/server.pem": "pem", ".codex/auth.json": "{}"})
	if err := os.Symlink("/etc/passwd", filepath.Join(in.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	type out struct {
		res agent.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.Run(context.Background(), agent.Spec{Timeout: 20 * time.Second, Env: []string{"GATE"}}, in)
		done <- out{res, err}
	}()
	copyDir := filepath.Join(wdir, "folders", folderKey(in.Dir))
	testwait.For(t, 10*time.Second, "the agent to change its copy", func() bool { return exists(filepath.Join(copyDir, "id_rsa")) })
	// The gateway downloads an attachment meanwhile.
	writeFiles(t, in.Dir, map[string]string{"inbox/2026-11-25/m1-photo.jpg": "jpeg"})
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if want := ".codex certs old.txt sub work.md work\nkeep"; o.res.Reply != want {
		t.Errorf("the agent saw %q; want %q (no credentials, no symlink)", o.res.Reply, want)
	}
	for name, want := range map[string]string{"work.md": "changed\n", "sub/new.txt": "new\n", "sub/keep.txt": "keep\n", "made/deep/f": "d\n",
		"inbox/2026-11-25/m1-photo.jpg": "jpeg", ".env": "GATEWAY_SECRET=1", "certs/server.pem": "pem"} {
		if got := readFile(t, filepath.Join(in.Dir, name)); got != want {
			t.Errorf("gateway's %s = %q; want %q", name, got, want)
		}
	}
	for _, name := range []string{"old.txt", "id_rsa", "wlink"} {
		if exists(filepath.Join(in.Dir, name)) {
			t.Errorf("gateway's %s exists; want it gone (deleted on the worker) or never sent (a credential, a symlink)", name)
		}
	}
	if fi, err := os.Stat(filepath.Join(in.Dir, "sub/new.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("sub/new.txt mode %v (%v); want 0755 as the agent set it", fi.Mode(), err)
	}
	if l, err := os.Readlink(filepath.Join(in.Dir, "link")); err != nil || l != "/etc/passwd" {
		t.Errorf("gateway's symlink: %q %v; want it left as it was", l, err)
	}
	if got := readFile(t, filepath.Join(copyDir, ".env")); got != "worker-secret\n" {
		t.Errorf("the worker's own .env: %q; want kept", got)
	}
	if exists(filepath.Join(copyDir, "certs", "server.pem")) || exists(filepath.Join(copyDir, ".codex", "auth.json")) || exists(filepath.Join(copyDir, "link")) {
		t.Errorf("a gateway credential or symlink reached the worker's copy")
	}
	if n := w.ObjectGets(); n != 1 {
		t.Errorf("the worker downloaded %d objects; want 1 (the first snapshot)", n)
	}
	if n := strings.Count(wlog.String(), "folder upload skips symlinks and special files"); n != 1 || !strings.Contains(wlog.String(), "skipped=1") {
		t.Errorf("the worker logged the skipped symlink %d times; want once with its count:\n%s", n, wlog.String())
	}
	// The same outcome applied again (a result read twice) does nothing.
	js, _ := jetstream.New(nc)
	stream, err := js.Stream(t.Context(), ResultsStream)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetLastMsgForSubject(t.Context(), resultSubject("w1", "t-fold-1"))
	if err != nil {
		t.Fatal(err)
	}
	var again Outcome
	if err := json.Unmarshal(msg.Data, &again); err != nil || again.Folder == nil {
		t.Fatalf("outcome %s: %v; want one with folder changes", msg.Data, err)
	}
	writeFiles(t, in.Dir, map[string]string{"work.md": "edited on the gateway since\n"})
	if err := r.fold.apply(t.Context(), again); err != nil {
		t.Errorf("applying the outcome again: %v; want nil", err)
	}
	if got := readFile(t, filepath.Join(in.Dir, "work.md")); got != "edited on the gateway since\n" || r.StaleFolderUploads() != 0 {
		t.Errorf("after applying it again: work.md %q, %d stale; want untouched and none", got, r.StaleFolderUploads())
	}
}

// A worker whose copy holds the folder's version downloads nothing: after
// its own turn's changes are applied, the next turns of the folder move no
// bytes to it, also after a restart (its state file), and still see the
// files.
func TestFolderCachedNoDownload(t *testing.T) {
	nc := natsConn(t)
	wdir := t.TempDir()
	ctx, stop := context.WithCancel(context.Background())
	w, err := NewWorker(t.Context(), workerConn(t, nc, "w1"), WorkerOptions{ID: "w1", Slots: 1, Prepare: shSpec, Poll: 200 * time.Millisecond, Dir: wdir})
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- w.Run(ctx) }()
	r := newRunner(t, nc, `echo "$SWITCHBOARD_TURN_ID" >> turns.txt; cat turns.txt | tr '\n' ' '`, 0)
	dir := turnInput(t, "x").Dir
	run := func(turn string) string {
		in := turnInput(t, turn)
		in.Dir = dir
		res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, in)
		if err != nil {
			t.Fatal(err)
		}
		return res.Reply
	}
	writeFiles(t, dir, map[string]string{"work.md": "w"})
	run("t-c1")
	if n := w.ObjectGets(); n != 1 {
		t.Fatalf("first turn: %d objects downloaded; want 1", n)
	}
	if got := run("t-c2"); got != "t-c1 t-c2" {
		t.Errorf("second turn saw %q", got)
	}
	if n := w.ObjectGets(); n != 1 {
		t.Errorf("second turn: %d objects downloaded in all; want still 1", n)
	}
	stop()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	w2 := runWorker(t, nc, WorkerOptions{ID: "w1-again", Slots: 1, Dir: wdir})
	if got := run("t-c3"); got != "t-c1 t-c2 t-c3" {
		t.Errorf("turn after the restart saw %q", got)
	}
	if n := w2.ObjectGets(); n != 0 {
		t.Errorf("the restarted worker downloaded %d objects; want 0 (its copy holds the version)", n)
	}
	if got := readFile(t, filepath.Join(dir, "turns.txt")); got != "t-c1\nt-c2\nt-c3\n" {
		t.Errorf("gateway's turns.txt %q", got)
	}
}

// tgz builds a gzip tar of entries.
func tgz(t *testing.T, entries ...*tar.Header) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	_ = tw.Close()
	_ = zw.Close()
	return buf.Bytes()
}

// A snapshot cannot write outside its folder: a name with "..", an
// absolute one, a symlink entry, or a path through a symlink already in
// the folder is refused with an error naming the entry, and nothing is
// written outside.
func TestApplyTarRefusesEscapes(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	folder := filepath.Join(base, "folder")
	for _, d := range []string{outside, folder} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(folder, "esc")); err != nil {
		t.Fatal(err)
	}
	ex, _ := newExcluder(nil)
	for _, tc := range []struct {
		name  string
		entry *tar.Header
		want  string
	}{
		{"dotdot", &tar.Header{Typeflag: tar.TypeReg, Name: "../outside/x", Size: 1, Mode: 0o600}, `"../outside/x"`},
		{"absolute", &tar.Header{Typeflag: tar.TypeReg, Name: outside + "/x", Size: 1, Mode: 0o600}, outside + "/x"},
		{"symlink entry", &tar.Header{Typeflag: tar.TypeSymlink, Name: "ln", Linkname: outside}, `"ln"`},
		{"hard link entry", &tar.Header{Typeflag: tar.TypeLink, Name: "hl", Linkname: "/etc/passwd"}, `"hl"`},
		{"through a symlink", &tar.Header{Typeflag: tar.TypeReg, Name: "esc/x", Size: 1, Mode: 0o600}, `"esc/x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, err := os.OpenRoot(folder)
			if err != nil {
				t.Fatal(err)
			}
			defer root.Close()
			_, err = applyTar(root, bytes.NewReader(tgz(t, tc.entry)), ex, limitsFor(maxBytes(0)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v; want a refusal naming %s", err, tc.want)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Errorf("something was written outside the folder: %v", ents)
			}
			if exists(filepath.Join(folder, "ln")) || exists(filepath.Join(folder, "hl")) {
				t.Errorf("a link entry was created")
			}
		})
	}
	// A deleted path cannot name anything outside either.
	root, _ := os.OpenRoot(folder)
	defer root.Close()
	writeFiles(t, outside, map[string]string{"victim": "v"})
	if err := removePaths(root, []string{"../outside/victim"}, ex); err == nil || !strings.Contains(err.Error(), "../outside/victim") {
		t.Errorf("removePaths: err %v; want a refusal naming the path", err)
	}
	_ = removePaths(root, []string{"esc/victim"}, ex) // os.Root: not found inside
	if !exists(filepath.Join(outside, "victim")) {
		t.Errorf("a file outside the folder was removed")
	}
}

// A folder over nats.max_folder_mb fails its turn before it is published,
// with an error naming the key.
func TestFolderTooBig(t *testing.T) {
	nc := natsConn(t)
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{"true"}, MaxFolderMB: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	in := turnInput(t, "t-big")
	writeFiles(t, in.Dir, map[string]string{"big": strings.Repeat("x", 2<<20)})
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, in)
	if err == nil || !strings.Contains(err.Error(), "nats.max_folder_mb") || !res.NotStarted {
		t.Fatalf("err %v not started %v; want a not-started turn naming nats.max_folder_mb", err, res.NotStarted)
	}
}

// proxy forwards TCP connections to target until cut, which closes them
// and refuses new ones (a network partition) until restore.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target}
	p.listen("127.0.0.1:0")
	p.addr = p.ln.Addr().String()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) listen(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) restore() { p.listen(p.addr) }

// The stale-worker fence: worker 1 takes a turn and is cut off from NATS
// (a partition); its heartbeats stop, the gateway fails the turn, and the
// retry runs on worker 2, whose changes are applied. When the partition
// heals, worker 1 finishes and uploads its changes on the old version:
// they are refused (logged, counted) and the gateway's folder keeps
// worker 2's content. The same outcome applied again changes nothing and
// is not called stale.
func TestStaleWorkerFenced(t *testing.T) {
	srv := startNATS(t, "127.0.0.1:0", t.TempDir(), t.TempDir())
	nc := gatewayConn(t, srv, srv.URL())
	p := newProxy(t, strings.TrimPrefix(srv.URL(), "nats://"))
	nc1 := connectAs(t, srv, "nats://"+p.addr, "w1", nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	const ttl = time.Second
	var logs testlog.Buffer
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{`echo "$SWITCHBOARD_TURN_ID" > owner.txt
case "$SWITCHBOARD_TURN_ID" in t-part-1) touch "$STARTED"; while [ ! -e "$GATE" ]; do sleep 0.02; done; echo late > late.txt;; esac
echo ok`},
		Check: 50 * time.Millisecond, WorkerTTL: ttl, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	gate, started := filepath.Join(t.TempDir(), "gate"), filepath.Join(t.TempDir(), "started")
	t.Setenv("GATE", gate)
	t.Setenv("STARTED", started)
	spec := agent.Spec{Timeout: time.Minute, Env: []string{"GATE", "STARTED"}}
	w1log := &testlog.Buffer{}
	runWorker(t, nc1, WorkerOptions{ID: "w1", Slots: 1, WorkerTTL: ttl, Logger: slog.New(slog.NewTextHandler(w1log, nil))})
	in := turnInput(t, "t-part-1")
	writeFiles(t, in.Dir, map[string]string{"owner.txt": "gateway\n"})
	failed := make(chan error, 1)
	go func() {
		_, err := r.Run(context.Background(), spec, in)
		failed <- err
	}()
	testwait.For(t, 10*time.Second, "worker 1 running the turn", func() bool { return exists(started) })
	p.cut()
	select {
	case err := <-failed:
		if err == nil || !strings.Contains(err.Error(), "worker w1 stopped reporting") {
			t.Fatalf("the partitioned worker's turn: %v; want it failed as w1 stopped reporting", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the partitioned worker's turn still waits")
	}
	// The gateway's retry runs on worker 2.
	w2 := runWorker(t, nc, WorkerOptions{ID: "w2", Slots: 1, WorkerTTL: ttl})
	retry := turnInput(t, "t-part-2")
	retry.Dir = in.Dir
	if _, err := r.Run(t.Context(), spec, retry); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(in.Dir, "owner.txt")); got != "t-part-2\n" {
		t.Fatalf("after the retry the gateway's owner.txt is %q; want worker 2's", got)
	}
	_ = w2
	// The partition heals; worker 1 finishes on the old version.
	p.restore()
	testwait.For(t, 10*time.Second, "worker 1 reconnected", nc1.IsConnected)
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "worker 1's late upload refused", func() bool { return r.StaleFolderUploads() == 1 })
	if !strings.Contains(logs.String(), "stale folder upload refused") || !strings.Contains(logs.String(), "worker=w1") ||
		!strings.Contains(logs.String(), "turn=t-part-1") {
		t.Errorf("no warning naming worker w1 and turn t-part-1:\n%s", logs.String())
	}
	if got := readFile(t, filepath.Join(in.Dir, "owner.txt")); got != "t-part-2\n" {
		t.Errorf("gateway's owner.txt %q after the stale upload; want worker 2's", got)
	}
	if exists(filepath.Join(in.Dir, "late.txt")) {
		t.Errorf("the stale worker's late.txt reached the gateway's folder")
	}
}

// A folder's turns look up each of its objects in the object store once,
// not at every turn: the gateway knows the objects it uploaded or applied.
// Before, every turn looked up its version's snapshot and each chained
// delta again: with 5 deltas chained, 6 requests per turn.
func TestFolderObjectsLookedUpOnce(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "w1", 1)
	r := newRunner(t, nc, `p=$(cat); if [ "$p" = write ]; then echo x >> turns.txt; fi; echo ok`, 0)
	dir := turnInput(t, "x").Dir
	run := func(turn, prompt string) {
		t.Helper()
		in := turnInput(t, turn)
		in.Dir, in.Prompt = dir, prompt
		if _, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, in); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 { // a snapshot and 5 deltas
		run(fmt.Sprintf("t-w%d", i), "write")
	}
	// Object metadata requests, seen from another connection.
	spy := spyConn(t, nc)
	var lookups atomic.Int64
	sub, err := spy.Subscribe("$JS.API.DIRECT.GET.OBJ_"+ObjectsBucket+".>", func(*nats.Msg) { lookups.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 { // nothing changes: the same version each time
		run(fmt.Sprintf("t-r%d", i), "read")
	}
	if err := spy.Flush(); err != nil {
		t.Fatal(err)
	}
	_ = sub.Unsubscribe()
	if n := lookups.Load(); n != 0 {
		t.Errorf("%d object look-ups for 10 turns on the version the gateway published; want 0", n)
	}
	if got := readFile(t, filepath.Join(dir, "turns.txt")); got != "x\nx\nx\nx\nx\n" {
		t.Errorf("gateway's turns.txt %q; want the 5 writes", got)
	}
}

// Objects removed behind the gateway's back (a purged object store): the
// turn of a worker that cannot fetch the version fails without starting,
// and the next turn uploads the folder anew instead of failing the same
// way at every retry.
func TestFolderObjectsRemovedBehindGateway(t *testing.T) {
	nc := natsConn(t)
	_, stop := stoppableWorker(t, nc, WorkerOptions{ID: "w1", Slots: 1})
	r := newRunner(t, nc, `cat notes.md`, 0)
	dir := turnInput(t, "x").Dir
	writeFiles(t, dir, map[string]string{"notes.md": "kept"})
	run := func(turn string) (agent.Result, error) {
		in := turnInput(t, turn)
		in.Dir = dir
		return r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, in)
	}
	if res, err := run("t-1"); err != nil || res.Reply != "kept" {
		t.Fatalf("first turn: %q %v", res.Reply, err)
	}
	stop()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(t.Context(), ObjectsBucket)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if err := obs.Delete(t.Context(), in.Name); err != nil {
			t.Fatal(err)
		}
	}
	runWorker(t, nc, WorkerOptions{ID: "w2", Slots: 1}) // holds no copy
	res, err := run("t-2")
	if err == nil || !res.NotStarted || !strings.Contains(err.Error(), "object not found") {
		t.Errorf("turn after the purge: reply %q err %v; want it not started, the missing object named", res.Reply, err)
	}
	if res, err := run("t-3"); err != nil || res.Reply != "kept" {
		t.Fatalf("the turn after a failed fetch: reply %q err %v; want the folder uploaded anew", res.Reply, err)
	}
}

// Applying one folder's changes (a large delta downloading, here its
// folder held busy) holds up no other folder's outcome: before, outcomes
// were applied one at a time in the stream's reader, so every turn that
// ended meanwhile waited, past its deadline if the download was long.
func TestFolderApplyHoldsUpNoOtherFolder(t *testing.T) {
	nc := natsConn(t)
	var wlog testlog.Buffer
	runWorker(t, nc, WorkerOptions{ID: "w1", Slots: 2, Logger: slog.New(slog.NewTextHandler(&wlog, nil))})
	gates := t.TempDir()
	t.Setenv("GATES", gates)
	r := newRunner(t, nc, `while [ ! -e "$GATES/$SWITCHBOARD_TURN_ID" ]; do sleep 0.02; done; echo "$SWITCHBOARD_TURN_ID" > last.txt; echo ok`, 0)
	root := t.TempDir()
	start := func(folder, turn string) <-chan error {
		out := make(chan error, 1)
		in := turnInput(t, turn)
		in.Dir = filepath.Join(root, folder)
		go func() {
			_, err := r.Run(context.Background(), agent.Spec{Timeout: 30 * time.Second, Env: []string{"GATES"}}, in)
			out <- err
		}()
		return out
	}
	open := func(turn string) {
		if err := os.WriteFile(filepath.Join(gates, turn), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := start("a", "a-1")
	testwait.For(t, 10*time.Second, "a-1 running", func() bool { return strings.Contains(wlog.String(), "turn=a-1") })
	unlock := r.fold.locks.lock(folderKey(filepath.Join(root, "a")))
	open("a-1")
	testwait.For(t, 10*time.Second, "a-1's outcome published", func() bool {
		return strings.Contains(wlog.String(), `msg="turn done" worker=w1 turn=a-1`)
	})
	open("b-1")
	b := start("b", "b-1")
	var berr error
	testwait.For(t, 10*time.Second, "folder b's turn answered while folder a's changes are applied", func() bool {
		select {
		case berr = <-b:
			return true
		default:
			return false
		}
	})
	if berr != nil {
		t.Fatalf("b-1: %v", berr)
	}
	if got := readFile(t, filepath.Join(root, "b", "last.txt")); got != "b-1\n" {
		t.Errorf("folder b's last.txt %q; want b-1's write", got)
	}
	unlock()
	if err := <-a; err != nil {
		t.Fatalf("a-1: %v", err)
	}
	if got := readFile(t, filepath.Join(root, "a", "last.txt")); got != "a-1\n" {
		t.Errorf("folder a's last.txt %q; want a-1's write, applied before its turn returned", got)
	}
}
