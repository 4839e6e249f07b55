package remote

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// testGateways maps a test's gateway connection to its server and URL, so
// that helpers given that connection connect workers with their own
// credentials.
var testGateways sync.Map // *nats.Conn → testGateway

type testGateway struct {
	srv *Server
	url string
}

// spyKey is a user of every test server with all rights, to watch what
// others do (spyConn).
var spyKey = func() nkeys.KeyPair {
	kp, err := nkeys.CreateUser()
	if err != nil {
		panic(err)
	}
	return kp
}()

// startNATS starts the embedded server with its credentials in auth.
func startNATS(t testing.TB, listen, store, auth string) *Server {
	t.Helper()
	pub, err := spyKey.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartServer(ServerOptions{Listen: listen, StoreDir: store, AuthDir: auth, more: []*server.NkeyUser{{Nkey: pub}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// gatewayConn connects to url with the gateway's credentials.
func gatewayConn(t testing.TB, srv *Server, url string, extra ...nats.Option) *nats.Conn {
	t.Helper()
	opts, err := srv.Gateway().Options("")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	testGateways.Store(nc, testGateway{srv: srv, url: url})
	return nc
}

// gatewayStreams makes what a gateway makes (a worker may not), unless a
// gateway did already: workers that a test starts before its Runner bind
// to them.
func gatewayStreams(t testing.TB, nc *nats.Conn) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.KeyValue(t.Context(), workersBucket); err == nil {
		return
	}
	if _, err := ensureStreams(t.Context(), js, workerTTL); err != nil {
		t.Fatal(err)
	}
	if _, _, err := folderStores(t.Context(), js); err != nil {
		t.Fatal(err)
	}
}

// workerConn is a connection of worker id to the server of the gateway
// connection nc (nc itself when it is not a gateway's: a worker's already).
func workerConn(t testing.TB, nc *nats.Conn, id string) *nats.Conn {
	t.Helper()
	g, ok := testGateways.Load(nc)
	if !ok {
		return nc
	}
	gatewayStreams(t, nc)
	return connectAs(t, g.(testGateway).srv, g.(testGateway).url, id)
}

// connectAs connects to url with worker id's credentials on srv, minted
// (and loaded by the server) the first time.
func connectAs(t testing.TB, srv *Server, url, id string, extra ...nats.Option) *nats.Conn {
	t.Helper()
	c, err := ReadCreds(workerCreds(t, srv, id))
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.Options("")
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// workerCreds is the path of worker id's credentials on srv, minted and
// loaded by the server the first time.
func workerCreds(t testing.TB, srv *Server, id string) string {
	t.Helper()
	path := filepath.Join(srv.opt.AuthDir, workersDir, id+".creds")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := AddWorker(srv.opt.AuthDir, id, ""); err != nil {
			t.Fatal(err)
		}
		if err := srv.reloadWorkers(); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// spyConn connects to the server of gateway connection nc as the user with
// all rights.
func spyConn(t testing.TB, nc *nats.Conn) *nats.Conn {
	t.Helper()
	g, ok := testGateways.Load(nc)
	if !ok {
		t.Fatal("spyConn: not a test gateway's connection")
	}
	pub, err := spyKey.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	spy, err := nats.Connect(g.(testGateway).url, nats.Nkey(pub, spyKey.Sign))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(spy.Close)
	return spy
}
