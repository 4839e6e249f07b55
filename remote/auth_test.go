package remote

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"switchboard/agent"
	"switchboard/internal/testcert"
	"switchboard/internal/testlog"
	"switchboard/internal/testwait"
)

// gatewayOf is the server and URL of a test gateway's connection.
func gatewayOf(t testing.TB, nc *nats.Conn) testGateway {
	t.Helper()
	g, ok := testGateways.Load(nc)
	if !ok {
		t.Fatal("not a test gateway's connection")
	}
	return g.(testGateway)
}

// The embedded server refuses a client without credentials, and one whose
// nkey is not registered.
func TestNATSAnonymousRefused(t *testing.T) {
	srv := startNATS(t, "127.0.0.1:0", t.TempDir(), t.TempDir())
	if nc, err := nats.Connect(srv.URL(), nats.NoReconnect()); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		if nc != nil {
			nc.Close()
		}
		t.Errorf("anonymous client: err %v; want an authorization violation", err)
	}
	stranger := filepath.Join(t.TempDir(), "stranger.creds")
	if _, err := writeNewCreds(stranger, "w1"); err != nil {
		t.Fatal(err)
	}
	c, err := ReadCreds(stranger)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := c.Options("")
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(srv.URL(), append(opts, nats.NoReconnect())...); err == nil || !strings.Contains(err.Error(), "Authorization Violation") {
		if nc != nil {
			nc.Close()
		}
		t.Errorf("client with an unregistered nkey claiming w1: err %v; want an authorization violation", err)
	}
}

// violations connects as worker id and collects the server's permission
// errors for the connection.
type violations struct {
	t    *testing.T
	nc   *nats.Conn
	errs chan error
}

func connectViolations(t *testing.T, gnc *nats.Conn, id string) *violations {
	g := gatewayOf(t, gnc)
	return watchViolations(t, func(o nats.Option) *nats.Conn { return connectAs(t, g.srv, g.url, id, o) })
}

// watchViolations connects with connect, given the option that collects
// the connection's errors.
func watchViolations(t *testing.T, connect func(nats.Option) *nats.Conn) *violations {
	v := &violations{t: t, errs: make(chan error, 64)}
	v.nc = connect(nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { v.errs <- err }))
	return v
}

// denied does act and expects the server to refuse it: the next
// permission error names what.
func (v *violations) denied(what string, act func(nc *nats.Conn) error) {
	v.t.Helper()
	if err := act(v.nc); err != nil {
		v.t.Fatalf("%s: %v", what, err)
	}
	if err := v.nc.Flush(); err != nil {
		v.t.Fatal(err)
	}
	select {
	case err := <-v.errs:
		if !strings.Contains(err.Error(), "Permissions Violation") || !strings.Contains(err.Error(), `"`+what+`"`) {
			v.t.Errorf("want %q refused; the next error is %v", what, err)
		}
	case <-time.After(10 * time.Second):
		v.t.Errorf("%q was not refused", what)
	}
}

// A worker's credentials let it read only its own jobs and publish only
// as itself: with worker a's, a client cannot subscribe to or fetch worker
// b's jobs, read switchboard.turns.> or the results, publish a job,
// publish a result, a taken note or a workers entry as b, read the
// gateway's replies, or touch the streams. What it may do (its own inbox,
// its own results) raises no error: each refusal below is the next error.
func TestNATSWorkerPermissions(t *testing.T) {
	nc := natsConn(t)
	newRunner(t, nc, "unused", 0) // the gateway makes the streams
	fakeWorker(t, nc, "b")        // worker-b exists
	checkWorkerPermissions(t, connectViolations(t, nc, "a"), "a", "b")
}

// checkWorkerPermissions checks what worker self (connected as v) may not
// do, with other another worker.
func checkWorkerPermissions(t *testing.T, a *violations, self, other string) {
	t.Helper()
	sub := func(subject string) func(*nats.Conn) error {
		return func(nc *nats.Conn) error { _, err := nc.SubscribeSync(subject); return err }
	}
	pub := func(subject string) func(*nats.Conn) error {
		return func(nc *nats.Conn) error { return nc.PublishRequest(subject, workerInbox(self)+".x", []byte("{}")) }
	}
	allowed := func(act func(*nats.Conn) error) {
		if err := act(a.nc); err != nil {
			t.Fatal(err)
		}
	}
	allowed(sub(workerInbox(self) + ".x"))
	allowed(pub(resultSubject(self, "t-own")))
	allowed(pub(eventsSubject(self, "t-own")))
	allowed(sub(stopSubject(self, "*")))
	allowed(sub(inputSubject(self, "*")))
	allowed(pub(inputAckSubject(self, "t-own")))
	for _, subject := range []string{"switchboard.turns.>", workerSubject(other), ">", "switchboard.results.>",
		"switchboard.taken.*.*", eventsPrefix + ">", eventsSubject(other, "t-1"), gatewayInbox + ".>", "_INBOX.>", workerInbox(other) + ".>",
		stopPrefix + ">", stopSubject(other, "*"), stopSubject(other, "t-1"), inputSubject(other, "*"), inputAckSubject(self, "*")} {
		a.denied(subject, sub(subject))
	}
	for _, subject := range []string{
		workerSubject(other), workerSubject(self), // a job, to anyone
		stopSubject(self, "t-1"), stopSubject(other, "t-1"), // only the gateway stops turns
		inputSubject(self, "t-1"), inputSubject(other, "t-1"), inputAckSubject(other, "t-1"), // or steers them
		resultSubject(other, "t-1"), takenPrefix + other + ".t-1", eventsSubject(other, "t-1"), "$KV." + workersBucket + "." + other, "$KV." + FoldersBucket + ".x",
		"$JS.API.CONSUMER.MSG.NEXT." + TurnsStream + "." + workerConsumer(other), // fetch b's jobs
		"$JS.ACK." + TurnsStream + "." + workerConsumer(other) + ".1.1.1.1.1",
		"$JS.API.CONSUMER.CREATE." + TurnsStream + "." + workerConsumer(self) + "." + workerSubject(other), // its consumer on b's subject
		"$JS.API.CONSUMER.CREATE." + TurnsStream + "." + workerConsumer(self),                              // the filter in the body
		"$JS.API.CONSUMER.DURABLE.CREATE." + TurnsStream + "." + workerConsumer(self),
		"$JS.API.CONSUMER.CREATE." + TurnsStream + "." + workerConsumer(other) + "." + workerSubject(other),
		"$JS.API.CONSUMER.INFO." + TurnsStream + "." + workerConsumer(other),
		"$JS.API.CONSUMER.CREATE." + ResultsStream + ".spy", // read the results
		"$JS.API.DIRECT.GET." + ResultsStream, "$JS.API.STREAM.MSG.GET." + ResultsStream,
		"$JS.API.STREAM.DELETE." + TurnsStream, "$JS.API.STREAM.UPDATE." + TurnsStream, "$JS.API.STREAM.CREATE.X",
		"$JS.API.STREAM.PURGE.OBJ_" + ObjectsBucket, "$JS.API.STREAM.INFO.KV_" + FoldersBucket,
	} {
		a.denied(subject, pub(subject))
	}
	// Through the client library too: b's consumer and a consumer of its
	// own on b's subject are out of reach.
	js, err := jetstream.New(a.nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second) // refused: no answer comes
	defer cancel()
	if _, err := js.CreateOrUpdateConsumer(ctx, TurnsStream, jetstream.ConsumerConfig{Durable: workerConsumer(self),
		FilterSubject: workerSubject(other), AckPolicy: jetstream.AckExplicitPolicy}); err == nil {
		t.Errorf("worker %s made itself a consumer of worker %s's jobs", self, other)
	}
}

// A result counts only from the worker the turn was given to: one that
// another worker publishes (naming itself, or the right worker) is
// dropped and the turn takes the real one.
func TestNATSOutcomeFromOtherWorkerDropped(t *testing.T) {
	nc := natsConn(t)
	var logs testlog.Buffer
	r, err := NewRunner(t.Context(), nc, RunnerOptions{Command: []string{"unused"}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	publish := func(from string, o Outcome) {
		js, err := jetstream.New(workerConn(t, nc, from))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(o)
		if _, err := js.Publish(t.Context(), resultSubject(from, o.TurnID), data); err != nil {
			t.Fatal(err)
		}
	}
	cons := fakeWorker(t, nc, "b") // the only live worker: it gets the job
	got := make(chan agent.Result, 1)
	go func() {
		res, err := r.Run(context.Background(), agent.Spec{Timeout: 20 * time.Second}, turnInput(t, "t-given"))
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	m, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_ = m.Ack()
	publish("a", Outcome{TurnID: "t-given", Worker: "a", Reply: "forged by a"})
	publish("a", Outcome{TurnID: "t-given", Worker: "b", Reply: "forged by a as b"})
	testwait.For(t, 10*time.Second, "both forged outcomes dropped", func() bool {
		return strings.Contains(logs.String(), "not from the worker the turn was given to") &&
			strings.Contains(logs.String(), "not from the worker it names; dropped")
	})
	publish("b", Outcome{TurnID: "t-given", Worker: "b", Reply: "real"})
	if res := <-got; res.Reply != "real" {
		t.Errorf("reply %q; want worker b's", res.Reply)
	}
}

// A worker added while the gateway runs may connect within the reload
// interval; one removed is cut off. Credentials files are mode 0600.
func TestNATSWorkerAddedAndRemoved(t *testing.T) {
	auth := t.TempDir()
	srv, err := StartServer(ServerOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), AuthDir: auth, Reload: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	c, err := AddWorker(auth, "late", filepath.Join(t.TempDir(), "elsewhere", "late.creds"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AddWorker(auth, "late", ""); !errors.Is(err, ErrWorkerExists) {
		t.Errorf("adding worker late again: err %v; want ErrWorkerExists", err)
	}
	for _, f := range []string{filepath.Join(auth, gatewayCredsFile), c.Path, filepath.Join(auth, workersDir, "late.pub")} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v; want mode 0600", f, err)
		}
	}
	opts, err := c.Options("")
	if err != nil {
		t.Fatal(err)
	}
	var nc *nats.Conn
	testwait.For(t, 10*time.Second, "worker late accepted", func() bool {
		nc, err = nats.Connect(srv.URL(), append(opts, nats.NoReconnect())...)
		return err == nil
	})
	defer nc.Close()
	if err := RemoveWorker(auth, "late"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "removed worker late cut off", nc.IsClosed)
	if _, err := os.Stat(filepath.Join(auth, workersDir, "late.pub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("worker late still registered after remove: %v", err)
	}
}

// With nats.tls_cert the embedded server speaks TLS: a worker that trusts
// its CA (nats.tls_ca) connects over TLS, one that does not is refused,
// and the gateway's in-process connection needs none.
func TestNATSTLS(t *testing.T) {
	cert, key := testcert.Write(t)
	auth := t.TempDir()
	srv, err := StartServer(ServerOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), AuthDir: auth, TLSCert: cert, TLSKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	gopts, err := srv.Gateway().Options("")
	if err != nil {
		t.Fatal(err)
	}
	gnc, err := nats.Connect("", append(gopts, srv.InProcess())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gnc.Close)
	c, err := ReadCreds(workerCreds(t, srv, "w1"))
	if err != nil {
		t.Fatal(err)
	}
	untrusting, err := c.Options("")
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(srv.URL(), append(untrusting, nats.NoReconnect())...); err == nil {
		nc.Close()
		t.Error("a worker that does not trust the server's certificate connected")
	}
	trusting, err := c.Options(cert)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(srv.URL(), trusting...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.TLSConnectionState(); err != nil {
		t.Errorf("worker connection: %v; want TLS", err)
	}
}

// Another worker cannot keep a turn's outcome from the gateway: worker a,
// which learnt turn t-dedup's id (the object store's listing names turns),
// publishes on its own results subject first with the JetStream message id
// the real worker's outcome carried (the turn id). The stream de-duplicated
// by that id across subjects, so worker b's real outcome was dropped as a
// duplicate and the turn failed at its deadline, to be run again.
func TestNATSOutcomeNotSuppressedByOtherWorker(t *testing.T) {
	nc := natsConn(t)
	startWorker(t, nc, "b", 1) // the only live worker: it gets the job
	r := newRunner(t, nc, "cat >/dev/null; echo real", time.Second)
	js, err := jetstream.New(workerConn(t, nc, "a"))
	if err != nil {
		t.Fatal(err)
	}
	const turn = "t-dedup"
	data, _ := json.Marshal(Outcome{TurnID: turn, Worker: "a", Reply: "forged by a"})
	if _, err := js.Publish(t.Context(), resultSubject("a", turn), data, jetstream.WithMsgID(turn)); err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), agent.Spec{Timeout: 10 * time.Second}, turnInput(t, turn))
	if err != nil || res.Reply != "real" {
		t.Fatalf("reply %q, err %v; want worker b's reply", res.Reply, err)
	}
}
