package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/internal/testwait"
	"switchboard/remote"
)

// TestE2EGatewayKilledMidBurst: a burst over several rooms is running on
// two `switchboard worker` processes when the gateway is killed with
// SIGKILL. The workers finish those turns and publish their outcomes: to a
// NATS server that runs apart from the gateway while no gateway runs, or,
// with the gateway's embedded server (which died with it), once the
// restarted gateway serves it again on the same port. The restarted
// gateway applies them: every message is answered exactly once, and the
// interrupted turns are recorded as succeeded under their own ids, not run
// again.
func TestE2EGatewayKilledMidBurst(t *testing.T) {
	t.Parallel()
	for _, embedded := range []bool{false, true} {
		name := map[bool]string{false: "nats apart", true: "nats embedded"}[embedded]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			gatewayKilledMidBurst(t, embedded)
		})
	}
}

func gatewayKilledMidBurst(t *testing.T, embedded bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	// A fixed port: the workers reconnect to the restarted gateway's server.
	natsYAML, url := fmt.Sprintf("nats: {embedded: true, listen: %q}\n", addr), "nats://"+addr
	if !embedded {
		// A server of the operator's, with the users the embedded one has:
		// its credentials where the gateway's CLI (nats worker add) keeps
		// them, so that the workers' are registered there.
		natsYAML = fmt.Sprintf("nats: {url: %q, creds: data/nats-auth/gateway.creds}\n", url)
	}
	const rooms, messages = 6, 12
	var routes strings.Builder
	var groups []string
	for r := range rooms {
		groups = append(groups, fmt.Sprintf("g%d", r))
		fmt.Fprintf(&routes, "  - {match: {platform: web, room: r%d}, target: g%d}\n", r, r)
	}
	// Turns hold until the test lets them go, then the demo agent answers
	// (over MCP while the gateway that started the turn runs, else on
	// stdout).
	// Each turn also leaves a file in its folder (the worker's copy), which
	// reaches the gateway's folder with the outcome.
	script := fmt.Sprintf(`while [ ! -e "$E2E_OUT/go" ]; do sleep 0.05; done
echo "$SWITCHBOARD_TURN_ID" > "done-$SWITCHBOARD_TURN_ID"
exec %q demo-agent < "$out/prompt-$n"`, switchboardBinary(t))
	dir := newE2E(t, e2eConfig{agent: script, groups: groups, routes: routes.String(), timeout: "60s", maxConcurrent: 16,
		agentExtra: "  runner: nats\n", extra: natsYAML + "mcp: {listen: \"127.0.0.1:0\"}\n"})
	if !embedded {
		srv, err := remote.StartServer(remote.ServerOptions{Listen: addr, StoreDir: t.TempDir(), AuthDir: filepath.Join(dir, "data", "nats-auth")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	g := startGW(t, dir)
	workers := []*worker{startWorker(t, dir, "w1", url, 2), startWorker(t, dir, "w2", url, 2)}

	for k := range messages {
		g.mustPost(fmt.Sprintf("r%d", k%rooms), fmt.Sprintf("u%d", k), fmt.Sprintf("msg-%d", k))
	}
	// Every room's first turn is published; four of them run (two slots
	// on each worker), the others wait in the stream.
	testwait.For(t, 20*time.Second, "a turn of every room published, four running", func() bool {
		running := 0
		for r := range rooms {
			running += turnCount(dir, fmt.Sprintf("g%d", r))
		}
		return len(g.records("remote turn published", "", "")) >= rooms && running >= 4
	})
	published := map[string]bool{}
	publishedIn := map[string]string{} // turn → its folder on the gateway
	for _, r := range g.records("remote turn published", "", "") {
		published[fmt.Sprint(r["turn"])] = true
		publishedIn[fmt.Sprint(r["turn"])] = fmt.Sprint(r["dir"])
	}
	g.kill()

	if err := os.WriteFile(filepath.Join(dir, "out", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// How many of the published turns the workers have finished and
	// published the outcome of ("turn done"), or tried to.
	finished := func(msg string) int {
		n := 0
		for _, w := range workers {
			for turn := range published {
				n += len(w.records(msg, "turn", turn))
			}
		}
		return n
	}
	if embedded {
		// A finished turn cannot upload its folder changes or publish its
		// outcome while the server is down; its worker keeps trying.
		testwait.For(t, 60*time.Second, "the running turns to finish without NATS", func() bool {
			return finished("upload the turn's folder changes failed; trying again until the turn's deadline")+finished("publish turn result") > 0
		})
	} else {
		testwait.For(t, 60*time.Second, "the workers to finish every published turn", func() bool {
			return finished("turn done") == len(published)
		})
	}

	g = startGW(t, dir)
	answeredOnce(t, g, rooms, messages, 60*time.Second)
	if recs := g.records("turns interrupted by a crash count as failed attempts", "", ""); len(recs) > 0 {
		t.Errorf("the restart counted crashed attempts: %v", recs)
	}
	// Each interrupted turn is recorded, once, as succeeded under its id.
	var turns []turnLine
	if err := json.Unmarshal([]byte(g.mustCLI("--json", "turns", "--limit", "100")), &turns); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]int{}
	for _, tl := range turns {
		recorded[tl.ID]++
		if published[tl.ID] && tl.Status != "succeeded" {
			t.Errorf("interrupted turn %s recorded as %s (%s); want succeeded", tl.ID, tl.Status, tl.Error)
		}
	}
	for turn := range published {
		if recorded[turn] != 1 {
			t.Errorf("interrupted turn %s recorded %d times; want once", turn, recorded[turn])
		}
	}
	// What the interrupted turns wrote in their folders was applied too.
	for turn, folder := range publishedIn {
		if b, err := os.ReadFile(filepath.Join(folder, "done-"+turn)); err != nil || strings.TrimSpace(string(b)) != turn {
			t.Errorf("the file interrupted turn %s wrote on its worker is not in the gateway's folder %s: %v", turn, folder, err)
		}
	}
	t.Logf("%d turns interrupted and applied after the restart; %d turns in all", len(published), len(turns))
}
