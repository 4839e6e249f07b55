package remote

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"switchboard/agent"
)

// deploy/nats-server.conf, which docs/scaling.md shows whole, is the
// embedded server's users and permissions for a server of your own:
// nats-server loads it as it is (the nkeys from the environment), its
// permissions equal gatewayPermissions and workerPermissions("w1"), a
// gateway and worker w1 with those credentials run a turn on it, and the
// permissions hold (anonymous refused, w1 kept to its own).
func TestOwnNATSServerConfig(t *testing.T) {
	conf := filepath.Join("..", "deploy", "nats-server.conf")
	text, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```\n"+string(text)+"```\n") {
		t.Errorf("docs/scaling.md does not show deploy/nats-server.conf as it is")
	}
	dir := t.TempDir()
	gw, err := MintGatewayCreds(filepath.Join(dir, "gateway.creds"))
	if err != nil {
		t.Fatal(err)
	}
	w1, err := AddWorker(dir, "w1", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SWITCHBOARD_GATEWAY_NKEY", gw.Public)
	t.Setenv("SWITCHBOARD_W1_NKEY", w1.Public)
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*server.Permissions{gw.Public: gatewayPermissions(), w1.Public: workerPermissions("w1")}
	if len(opts.Nkeys) != len(want) {
		t.Fatalf("%d nkey users; want the gateway and w1", len(opts.Nkeys))
	}
	for _, u := range opts.Nkeys {
		if !reflect.DeepEqual(u.Permissions, want[u.Nkey]) {
			t.Errorf("user %s: permissions %+v %+v; want the embedded server's %+v %+v", u.Nkey,
				u.Permissions.Publish, u.Permissions.Subscribe, want[u.Nkey].Publish, want[u.Nkey].Subscribe)
		}
	}
	if opts.MaxPayload != 8<<20 || !opts.JetStream {
		t.Errorf("max_payload %d jetstream %v; want 8 MiB and on", opts.MaxPayload, opts.JetStream)
	}
	opts.Host, opts.Port, opts.StoreDir, opts.NoSigs = "127.0.0.1", server.RANDOM_PORT, t.TempDir(), true
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	t.Cleanup(s.Shutdown)
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server with deploy/nats-server.conf did not start")
	}
	url := s.ClientURL()
	connect := func(c Creds, extra ...nats.Option) *nats.Conn {
		t.Helper()
		o, err := c.Options("")
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(url, append(o, extra...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	r := newRunner(t, connect(gw), "echo ran on $WORKER", 0)
	w, err := ReadCreds(w1.Path)
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, connect(w), WorkerOptions{ID: w.Worker, Slots: 1, Prepare: func(command []string) (agent.Spec, error) {
		return agent.Spec{Command: []string{"/bin/sh", "-c", "WORKER=w1; " + strings.Join(command, " ")}}, nil
	}})
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 20 * time.Second}, turnInput(t, "t-own"))
	if err != nil || res.Reply != "ran on w1" {
		t.Fatalf("turn on your own server: reply %q err %v; want it run by w1", res.Reply, err)
	}
	if nc, err := nats.Connect(url, nats.NoReconnect()); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		if nc != nil {
			nc.Close()
		}
		t.Errorf("anonymous client: err %v; want an authorization violation", err)
	}
	checkWorkerPermissions(t, watchViolations(t, func(o nats.Option) *nats.Conn { return connect(w, o) }), "w1", "w2")
}
