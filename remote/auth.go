package remote

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Authentication and authorization on NATS (docs/scaling.md, "Who may do
// what on NATS"). Every client is an nkey user of the NATS server, with
// nats-server's own permissions: the gateway manages the streams, publishes
// jobs and reads results; a worker reads only its own jobs through its own
// consumer and publishes only its own results, taken notes and workers
// entry, each on a subject that carries its id. The server enforces that a
// worker's credential goes with its id (the permissions of its nkey name
// only that id's subjects), so what a worker claims does not matter.
//
// A credentials file is an nkey seed file as nats.NkeyOptionFromSeed reads
// it, with comment lines: "# worker: <id>" names the worker it is for
// (none: the gateway's).

// Inbox prefixes: each user gets replies (JetStream API answers, fetched
// jobs, watched keys) on its own, and may subscribe to nothing else there.
const gatewayInbox = "_INBOX.gateway"

func workerInbox(id string) string { return "_INBOX.worker." + id }

// Files in the gateway's credentials directory (AuthDir).
const (
	gatewayCredsFile = "gateway.creds"
	workersDir       = "workers" // <id>.pub: the registered workers; <id>.creds: as minted
	workerLine       = "# worker: "
)

// AuthDir is where the embedded server keeps its credentials under the
// gateway's data directory: gateway.creds, and workers/<id>.pub for every
// worker that may connect (with workers/<id>.creds as minted).
func AuthDir(dataDir string) string { return filepath.Join(dataDir, "nats-auth") }

// GatewayCredsPath is where the embedded server keeps the gateway's
// credentials under the gateway's data directory.
func GatewayCredsPath(dataDir string) string {
	return filepath.Join(AuthDir(dataDir), gatewayCredsFile)
}

// gatewayPermissions are the gateway's rights: the JetStream API (it
// creates and manages the streams, buckets and object store), jobs and
// stops on every worker's subjects, the folder buckets; replies on its own inbox, the
// taken notes and the turns' events.
func gatewayPermissions() *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"$JS.API.>", "$JS.FC.>", "$JS.ACK.>",
			workerSubjects, stopPrefix + "*.*", inputPrefix + "*.*",
			"$KV." + FoldersBucket + ".>",
			"$O." + ObjectsBucket + ".>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{gatewayInbox + ".>", takenPrefix + "*.*", eventsPrefix + "*.*", inputAckPrefix + "*.*"}},
	}
}

// workerPermissions are worker id's rights: its own consumer on the turns
// stream (created only with its own subject as filter: the server refuses
// a create request whose filter differs from the one in its subject), its
// results, taken notes, turns' events and workers entry, and the folder object store
// (read every object, write objects: what a worker can still touch there
// is in docs/scaling.md). Replies on its own inbox, and the stops of its
// own turns, are all it may read.
func workerPermissions(id string) *server.Permissions {
	cons := TurnsStream + "." + workerConsumer(id)
	obj := "OBJ_" + ObjectsBucket
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"$JS.API.CONSUMER.CREATE." + cons + "." + workerSubject(id),
			"$JS.API.CONSUMER.MSG.NEXT." + cons,
			"$JS.API.CONSUMER.DELETE." + cons,
			"$JS.ACK." + cons + ".>",
			resultsPrefix + id + ".*",
			takenPrefix + id + ".*",
			eventsPrefix + id + ".*",
			inputAckPrefix + id + ".*",
			"$JS.API.STREAM.INFO.KV_" + workersBucket,
			"$KV." + workersBucket + "." + id,
			"$JS.API.STREAM.INFO." + obj,
			"$JS.API.DIRECT.GET." + obj + ".$O." + ObjectsBucket + ".M.*",
			"$JS.API.CONSUMER.CREATE." + obj + ".*.$O." + ObjectsBucket + ".C.*",
			"$JS.API.CONSUMER.DELETE." + obj + ".*",
			"$JS.FC." + obj + ".>",
			"$O." + ObjectsBucket + ".>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{workerInbox(id) + ".>", stopPrefix + id + ".*", inputPrefix + id + ".*"}},
	}
}

// Creds is a credentials file as read: the nkey's public key and, for a
// worker's, its id.
type Creds struct {
	Path   string
	Public string
	Worker string // "" for the gateway's
}

// ReadCreds reads a credentials file. Errors name the file, never its
// content.
func ReadCreds(path string) (Creds, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Creds{}, fmt.Errorf("read NATS credentials: %w", err)
	}
	defer clear(data)
	kp, err := nkeys.ParseDecoratedNKey(data)
	if err != nil {
		return Creds{}, fmt.Errorf("NATS credentials %s hold no nkey seed (%v); mint them with `switchboard nats worker add NAME`", path, err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return Creds{}, fmt.Errorf("NATS credentials %s: not a user nkey seed (it starts with SU)", path)
	}
	c := Creds{Path: path, Public: pub}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if id, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), workerLine); ok {
			c.Worker = strings.TrimSpace(id)
		}
	}
	if c.Worker != "" && subjectSafe(c.Worker) != c.Worker {
		return Creds{}, fmt.Errorf("NATS credentials %s: worker id %q has characters outside [A-Za-z0-9_-]", path, c.Worker)
	}
	return c, nil
}

// Options are the nats.go options that connect with c: its nkey and its
// own inbox prefix, and tlsCA ("" = the system's roots) to verify the
// server when it speaks TLS.
func (c Creds) Options(tlsCA string) ([]nats.Option, error) {
	nk, err := nats.NkeyOptionFromSeed(c.Path)
	if err != nil {
		return nil, fmt.Errorf("NATS credentials %s: %w", c.Path, err)
	}
	inbox := gatewayInbox
	if c.Worker != "" {
		inbox = workerInbox(c.Worker)
	}
	opts := []nats.Option{nk, nats.CustomInboxPrefix(inbox)}
	if tlsCA != "" {
		opts = append(opts, nats.RootCAs(tlsCA))
	}
	return opts, nil
}

// credsText is a credentials file's content.
func credsText(seed []byte, worker string) []byte {
	var b bytes.Buffer
	if worker != "" {
		fmt.Fprintf(&b, "# Switchboard: NATS credentials of worker %q (an nkey seed). Keep it secret:\n", worker)
		b.WriteString("# set nats.creds to this file in the worker's config, inside its data_dir.\n")
		b.WriteString(workerLine + worker + "\n")
	} else {
		b.WriteString("# Switchboard: NATS credentials of the gateway (an nkey seed). Keep it secret.\n")
	}
	b.Write(seed)
	b.WriteString("\n")
	return b.Bytes()
}

// writeNewCreds mints a user nkey and writes it to path (mode 0600; the
// file must not exist). It returns the public key.
func writeNewCreds(path, worker string) (string, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", fmt.Errorf("create nkey: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return "", fmt.Errorf("create nkey: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return "", fmt.Errorf("create nkey: %w", err)
	}
	text := credsText(seed, worker)
	defer clear(text)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("write NATS credentials: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("write NATS credentials: %w", err)
	}
	_, err = f.Write(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("write NATS credentials %s: %w", path, err)
	}
	return pub, nil
}

// ensureGatewayCreds makes the gateway's credentials in dir at first start
// and reads them.
func ensureGatewayCreds(dir string) (Creds, error) {
	path := filepath.Join(dir, gatewayCredsFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := writeNewCreds(path, ""); err != nil {
			return Creds{}, err
		}
	}
	return ReadCreds(path)
}

// AddWorker mints worker id's credentials for the embedded server whose
// credentials live in dir (AuthDir): it writes them to out (default
// dir/workers/<id>.creds; mode 0600, never over an existing file) and
// registers the worker's public key (dir/workers/<id>.pub), which a running
// gateway picks up within seconds. It returns where the credentials are.
func AddWorker(dir, id, out string) (Creds, error) {
	if id == "" || subjectSafe(id) != id || len(id) > 64 {
		return Creds{}, fmt.Errorf("%w: %q: want 1 to 64 of [A-Za-z0-9_-]", ErrWorkerName, id)
	}
	pubFile := filepath.Join(dir, workersDir, id+".pub")
	if _, err := os.Stat(pubFile); err == nil {
		return Creds{}, fmt.Errorf("%w: %s (remove it first: switchboard nats worker rm %s)", ErrWorkerExists, id, id)
	}
	if err := os.MkdirAll(filepath.Dir(pubFile), 0o700); err != nil {
		return Creds{}, fmt.Errorf("register worker %s: %w", id, err)
	}
	if out == "" {
		out = filepath.Join(dir, workersDir, id+".creds")
	}
	pub, err := writeNewCreds(out, id)
	if err != nil {
		return Creds{}, err
	}
	if err := os.WriteFile(pubFile, []byte(pub+"\n"), 0o600); err != nil {
		_ = os.Remove(out)
		return Creds{}, fmt.Errorf("register worker %s: %w", id, err)
	}
	return Creds{Path: out, Public: pub, Worker: id}, nil
}

// RemoveWorker unregisters worker id (and deletes its credentials if they
// are still in dir): a running gateway's server closes its connections
// within seconds.
func RemoveWorker(dir, id string) error {
	pubFile := filepath.Join(dir, workersDir, id+".pub")
	if err := os.Remove(pubFile); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w: %s", ErrWorkerUnknown, id)
	} else if err != nil {
		return fmt.Errorf("remove worker %s: %w", id, err)
	}
	if err := os.Remove(filepath.Join(dir, workersDir, id+".creds")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove worker %s's credentials: %w", id, err)
	}
	return nil
}

// RegisteredWorkers are the workers registered in dir: id → public key.
func RegisteredWorkers(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, workersDir))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list NATS workers: %w", err)
	}
	out := map[string]string{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".pub")
		if !ok || subjectSafe(id) != id {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, workersDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("list NATS workers: %w", err)
		}
		if pub := strings.TrimSpace(string(data)); nkeys.IsValidPublicUserKey(pub) {
			out[id] = pub
		}
	}
	return out, nil
}

// nkeyUsers are the server's users: the gateway and each worker, with
// their permissions.
func nkeyUsers(gateway string, workers map[string]string) []*server.NkeyUser {
	users := []*server.NkeyUser{{Nkey: gateway, Permissions: gatewayPermissions()}}
	for _, id := range slices.Sorted(maps.Keys(workers)) {
		users = append(users, &server.NkeyUser{Nkey: workers[id], Permissions: workerPermissions(id)})
	}
	return users
}

// MintGatewayCreds writes new gateway credentials to path (mode 0600,
// never over an existing file), for a NATS server of your own.
func MintGatewayCreds(path string) (Creds, error) {
	pub, err := writeNewCreds(path, "")
	if err != nil {
		return Creds{}, err
	}
	return Creds{Path: path, Public: pub}, nil
}
