package ipc

// Which sessions a grant change notifies, checked exactly: Sync decides
// synchronously (session.listChanged counts what toolsChanged left for the
// writer), so a session that must get nothing is checked right after Sync
// returns, without waiting for a notification that might still be on its
// way. TestListChanged (listing_test.go) checks end to end, through the
// gateway and mcp-go's client, that the affected sessions do receive it.

import (
	"bufio"
	"fmt"
	"net"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/groups"
)

// dialGroup connects a raw client to folder's socket.
func dialGroup(t *testing.T, s *Server, folder groups.Folder) *rawClient {
	t.Helper()
	c, err := net.Dial("unix", s.SocketPath(folder))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawClient{t: t, c: c, r: bufio.NewReader(c)}
}

// initialize does the handshake of the protocol generations before
// 2026-07-28; the session is initialized once the response is read.
func (rc *rawClient) initialize() {
	rc.t.Helper()
	rc.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		mcp.ProtocolVersion20251125)
	if m := rc.recv(); fmt.Sprint(m.ID) != "init" || m.Result == nil {
		rc.t.Fatalf("initialize: got %s", m)
	}
	rc.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// newSession returns the one session of folder that is not in known, and
// adds it there.
func newSession(t *testing.T, s *Server, folder groups.Folder, known map[*session]bool) *session {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *session
	for c := range s.groups[folder].sessions {
		if !known[c] {
			if found != nil {
				t.Fatalf("more than one new session of %s", folder)
			}
			found = c
		}
	}
	if found == nil {
		t.Fatalf("no new session of %s", folder)
	}
	known[found] = true
	return found
}

// TestListChangedReachesOnlyAffected: a grant change that changes a group's
// listing notifies each of its sessions once (a legacy session after
// initialize, a 2026-07-28 session on its subscriptions/listen stream) and
// no session of another group, nor a 2026-07-28 session that did not
// listen; a rule change that leaves the listing alone notifies nobody.
func TestListChangedReachesOnlyAffected(t *testing.T) {
	s, _ := newStubServer(t)
	syncAcme := func(acme ...string) {
		t.Helper()
		if err := s.Sync([]Group{{Folder: "acme", Overrides: acme}, {Folder: "acme/eng"}}); err != nil {
			t.Fatal(err)
		}
	}
	syncAcme()

	type peer struct {
		name   string
		rc     *rawClient
		sess   *session
		stream string // the listen stream's id, "" for none
	}
	known := map[*session]bool{}
	connect := func(name string, folder groups.Folder, legacy, listen bool) *peer {
		t.Helper()
		p := &peer{name: name, rc: dialGroup(t, s, folder)}
		switch {
		case legacy:
			p.rc.initialize()
		case listen:
			p.stream = "1"
			p.rc.listen(p.stream)
		default:
			p.rc.barrier(1) // a 2026-07-28 session that never listens
		}
		p.sess = newSession(t, s, folder, known)
		if listen {
			waitStreams(t, p.sess, "int64:1")
		}
		return p
	}
	affected := []*peer{
		connect("acme legacy", "acme", true, false),
		connect("acme legacy 2", "acme", true, false),
		connect("acme listening", "acme", false, true),
		connect("acme listening 2", "acme", false, true),
	}
	unaffected := []*peer{
		connect("acme/eng legacy", "acme/eng", true, false),
		connect("acme/eng listening", "acme/eng", false, true),
		connect("acme not listening", "acme", false, false),
	}
	check := func(when string, ps []*peer, want int64) {
		t.Helper()
		for _, p := range ps {
			if got := p.sess.listChanged.Load(); got != want {
				t.Errorf("%s: %s was sent %d list_changed, want %d", when, p.name, got, want)
			}
		}
	}

	before := s.groups["acme"].access.Load().listed
	syncAcme("!like", "!pin_message")
	if after := s.groups["acme"].access.Load().listed; len(after) != len(before)-2 || slices.Contains(after, "like") {
		t.Fatalf("after the change acme lists %v", after)
	}
	check("after a grant change", affected, 1)
	check("after a grant change", unaffected, 0)
	// And the notifications decided are the ones written.
	for _, p := range affected {
		if m := p.rc.recv(); m.Method != mcp.MethodNotificationToolsListChanged || m.subscription() != p.stream {
			t.Errorf("%s got %s, want list_changed on stream %q", p.name, m, p.stream)
		}
	}

	// A rule change that leaves the listing alone sends nothing.
	syncAcme("!like", "!pin_message", "send(jid=web:*)")
	if got := s.groups["acme"].access.Load().overrides; len(got) != 3 {
		t.Fatalf("acme's overrides are %v, want the rule change applied", got)
	}
	check("after a rule change that keeps the listing", affected, 1)
	check("after a rule change that keeps the listing", unaffected, 0)
}
