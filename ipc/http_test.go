package ipc_test

// The MCP Streamable HTTP endpoint: the same servers as the sockets, with
// the folder taken from a bearer token.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"switchboard/gateway"
	"switchboard/groups"
	"switchboard/internal/testagent"
	"switchboard/internal/testcert"
	"switchboard/internal/testmcp"
	"switchboard/internal/testwait"
	"switchboard/ops"
	"switchboard/store"
)

// mcpURL waits for the gateway's HTTP endpoint and returns its URL.
func (h *harness) mcpURL(t testing.TB) string {
	t.Helper()
	var u string
	testwait.For(t, 10*time.Second, "the MCP HTTP endpoint", func() bool {
		u = h.g.MCPURL()
		return u != ""
	})
	h.waitSocket(t, "root") // the groups are synced
	return u
}

// token mints an operator's token for folder.
func (h *harness) token(t testing.TB, folder groups.Folder) string {
	t.Helper()
	tok, _, err := ops.MintToken(context.Background(), h.st, folder, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// connectHTTP opens an MCP client session as folder over HTTP.
func (h *harness) connectHTTP(t testing.TB, folder groups.Folder, legacy bool) *client.Client {
	t.Helper()
	c, err := dialHTTP(h.mcpURL(t), h.token(t, folder), legacy, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialHTTP opens an MCP client session over Streamable HTTP with token; a
// legacy session keeps a GET stream open for notifications.
func dialHTTP(url, token string, legacy bool, hc *http.Client) (*client.Client, error) {
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token})}
	if hc != nil {
		opts = append(opts, transport.WithHTTPBasicClient(hc))
	}
	var copts []client.ClientOption
	if legacy {
		opts = append(opts, transport.WithContinuousListening())
		copts = append(copts, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	}
	tr, err := transport.NewStreamableHTTP(url, opts...)
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr, copts...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Start's context is the GET stream's: it must outlive this call.
	if err := c.Start(context.Background()); err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "switchboard-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// encodeTools is a tools/list result as the golden files hold it.
func encodeTools(t testing.TB, tools []mcp.Tool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tools); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGoldenToolsListBothTransports: every tier lists exactly its golden
// tools/list over the socket and over HTTP, in both protocol generations.
func TestGoldenToolsListBothTransports(t *testing.T) {
	h := newHarness(t, nil)
	for _, g := range tierGroups {
		want, err := os.ReadFile(filepath.Join("testdata", "golden", fmt.Sprintf("tier%d.json", g.tier)))
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range []string{"socket", "http"} {
			for _, legacy := range []bool{true, false} {
				t.Run(fmt.Sprintf("tier%d/%s/legacy=%v", g.tier, tr, legacy), func(t *testing.T) {
					var c *client.Client
					if tr == "socket" {
						c = h.connect(t, g.folder, legacy)
					} else {
						c = h.connectHTTP(t, g.folder, legacy)
					}
					res, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
					if err != nil {
						t.Fatal(err)
					}
					if got := encodeTools(t, res.Tools); !bytes.Equal(got, want) {
						t.Errorf("tools/list differs from the golden file\n%s", firstDiff(got, want))
					}
				})
			}
		}
	}
}

// TestHTTPTokenActsAsItsFolderOnly: a token for acme/eng acts as acme/eng:
// acme's chat is refused, its own is not, and another group's session id
// does not let it in.
func TestHTTPTokenActsAsItsFolderOnly(t *testing.T) {
	h := newHarness(t, nil)
	eng := h.connectHTTP(t, "acme/eng", false)
	if r := call(t, eng, "send", map[string]any{"chat_jid": "web:acme", "text": "hi"}); !r.refused() || !strings.Contains(r.Text, "acme/eng") {
		t.Errorf("acme/eng sending to acme's chat: %+v, want refused", r)
	}
	if r := call(t, eng, "send", map[string]any{"chat_jid": "web:eng", "text": "hi"}); r.IsError {
		t.Errorf("acme/eng sending to its own chat: %s", r.Text)
	}
	// A hidden tool called by name is refused with the reason, as on a socket.
	if r := call(t, eng, "add_route", map[string]any{"match": map[string]any{"chat_jid": "web:eng"}, "target": "acme/eng"}); !r.refused() {
		t.Errorf("acme/eng calling add_route: %+v, want refused", r)
	}

	// acme's legacy session id, used with acme/eng's token.
	u := h.mcpURL(t)
	resp := post(t, u, h.token(t, "acme"), "", initBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize as acme: %d, session %q", resp.StatusCode, sid)
	}
	resp = post(t, u, h.token(t, "acme/eng"), sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, nil)
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("acme/eng's token with acme's session: %d, want 404", resp.StatusCode)
	}
}

// post sends one JSON-RPC message; header adds headers.
func post(t testing.TB, url, token, session, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", testmcp.Legacy)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

// initBody is a raw Streamable HTTP initialize request.
var initBody = testmcp.InitializeRequest(1, testmcp.Options{Client: "raw"})

// TestHTTPRefusals: no token, a wrong one → 401 with no OAuth metadata
// (no resource_metadata: Claude Code would start OAuth discovery); a
// foreign Origin → 403 even with a good token; and after a burst of 401s
// the address gets 429.
func TestHTTPRefusals(t *testing.T) {
	h := newHarness(t, nil)
	u := h.mcpURL(t)
	good := h.token(t, "acme")
	for _, tc := range []struct {
		name   string
		token  string
		header map[string]string
		want   int
	}{
		{"no token", "", nil, http.StatusUnauthorized},
		{"unknown token", ops.TokenPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", nil, http.StatusUnauthorized},
		{"foreign origin", good, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"own origin", good, map[string]string{"Origin": strings.TrimSuffix(u, "/mcp")}, http.StatusOK},
		{"no origin", good, nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, u, tc.token, "", initBody, tc.header)
			if resp.StatusCode != tc.want {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, tc.want)
			}
			if resp.StatusCode == http.StatusUnauthorized {
				if ch := resp.Header.Get("WWW-Authenticate"); strings.Contains(ch, "resource_metadata") {
					t.Errorf("401 carries OAuth metadata: %q", ch)
				}
			}
		})
	}
	// The burst of 401s (20, two of them spent above) ends in 429.
	var last int
	for range 20 {
		last = post(t, u, "nope", "", initBody, nil).StatusCode
	}
	if last != http.StatusTooManyRequests {
		t.Errorf("after 22 bad tokens the status is %d, want 429", last)
	}
}

// TestHTTPValidTokenAfterBadOnes: every local agent shares 127.0.0.1, so
// only failures are rate-limited: after 25 bad tokens from it bad ones get
// 429, and a valid token is served all the same.
func TestHTTPValidTokenAfterBadOnes(t *testing.T) {
	h := newHarness(t, nil)
	u := h.mcpURL(t)
	good := h.token(t, "acme")
	bad := ops.TokenPrefix + strings.Repeat("A", 43)
	for range 25 {
		post(t, u, bad, "", initBody, nil)
	}
	for _, tok := range []string{bad, "not-a-token"} {
		if got := post(t, u, tok, "", initBody, nil).StatusCode; got != http.StatusTooManyRequests {
			t.Errorf("a bad token after 25: %d, want 429", got)
		}
	}
	if resp := post(t, u, good, "", initBody, nil); resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("the valid token after 25 bad ones from the same address: %d (%s), want 200", resp.StatusCode, strings.TrimSpace(string(b)))
	}
}

// TestHTTPTurnToken: a turn's agent gets SWITCHBOARD_MCP_URL and a token
// that acts as its folder while the turn runs; the first call after the
// turn is recorded gets 401; and the token appears neither in the database
// file nor in the gateway's logs.
func TestHTTPTurnToken(t *testing.T) {
	out := shortTempDir(t)
	script := `cat > /dev/null
printf %s "$SWITCHBOARD_MCP_URL" > "$1/url.tmp" && mv "$1/url.tmp" "$1/url"
printf %s "$SWITCHBOARD_MCP_TOKEN" > "$1/token.tmp" && mv "$1/token.tmp" "$1/token"
while [ ! -e "$1/go" ]; do sleep 0.02; done
echo done`
	h := newHarnessAgent(t, nil, testagent.Script(t, script, out))
	h.waitStarted(t) // past its crash recovery, which would take the turn below for a crashed one
	h.mcpURL(t)
	h.deliver(t, "web:acme", "m1", "hello")

	var tok, url string
	testwait.For(t, 20*time.Second, "the agent wrote its token", func() bool {
		b, err := os.ReadFile(filepath.Join(out, "token"))
		tok = string(b)
		u, _ := os.ReadFile(filepath.Join(out, "url"))
		url = string(u)
		return err == nil
	})
	if !strings.HasPrefix(tok, ops.TokenPrefix) || len(tok) != len(ops.TokenPrefix)+43 {
		t.Fatalf("SWITCHBOARD_MCP_TOKEN = %d bytes, want %s + 43 (256 bits)", len(tok), ops.TokenPrefix)
	}
	if url != h.g.MCPURL() {
		t.Fatalf("SWITCHBOARD_MCP_URL = %q, want %q", url, h.g.MCPURL())
	}
	c, err := dialHTTP(url, tok, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if r := call(t, c, "list_grants", nil); r.IsError || !strings.Contains(r.Text, "acme") {
		t.Fatalf("list_grants during the turn: %+v", r)
	}
	if r := call(t, c, "send", map[string]any{"chat_jid": "web:root", "text": "x"}); !r.refused() {
		t.Errorf("acme's turn token sending to root's chat: %+v, want refused", r)
	}

	if err := os.WriteFile(filepath.Join(out, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 20*time.Second, "the turn is recorded", func() bool {
		ts, err := h.st.Turns(context.Background(), "acme", 1)
		return err == nil && len(ts) == 1
	})
	// The first call after the turn: 401, with no OAuth metadata to discover.
	var authErr *transport.AuthorizationRequiredError
	if _, err := tryCall(c, "list_grants", nil); !errors.As(err, &authErr) || authErr.ResourceMetadataURL != "" {
		t.Errorf("first call after the turn ended: %v, want 401 without resource metadata", err)
	}
	if resp := post(t, url, tok, "", initBody, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("initialize with the revoked token: %d, want 401", resp.StatusCode)
	}

	h.stop()
	secret := strings.TrimPrefix(tok, ops.TokenPrefix)
	for _, name := range []string{"switchboard.db", "switchboard.db-wal"} {
		b, err := os.ReadFile(filepath.Join(h.dir, name))
		if err != nil {
			continue // no WAL after a checkpoint
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the token is in %s", name)
		}
	}
	if logs := h.debug.String(); strings.Contains(logs, secret) || !strings.Contains(logs, "mcp http request refused") {
		t.Errorf("the token is in the logs, or the refusal was not logged:\n%s", logs)
	}
}

// TestHTTPListChanged: a grant change reaches an HTTP session within 2 s
// (the contract's bound for a CLI change), in both protocol generations:
// a legacy session on its GET stream, a 2026-07-28 one on its
// subscriptions/listen stream.
func TestHTTPListChanged(t *testing.T) {
	for _, legacy := range []bool{true, false} {
		t.Run(fmt.Sprintf("legacy=%v", legacy), func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			c := h.connectHTTP(t, "acme", legacy)
			other := h.connectHTTP(t, "acme/eng", legacy)
			ch, chOther := notes(c), notes(other)
			if !legacy {
				listenToolsChanged(t, c, ch)
				listenToolsChanged(t, other, chOther)
			}
			before := listed(t, c)
			if err := h.st.SetGrantOverrides(ctx, "acme", []string{"!like", "!pin_message"}); err != nil {
				t.Fatal(err)
			}
			if !waitNote(ch, mcp.MethodNotificationToolsListChanged, 2*time.Second) {
				t.Fatal("no list_changed within 2 s of the grant change")
			}
			if after := listed(t, c); len(after) != len(before)-2 {
				t.Errorf("after the change acme lists %v", after)
			}
			if waitNote(chOther, mcp.MethodNotificationToolsListChanged, 0) {
				t.Error("acme/eng's session got acme's list_changed")
			}
		})
	}
}

// BenchmarkToolsCallHTTPvsSocket: the p50 of a tools/call over HTTP
// (loopback, TLS with a self-signed certificate, one kept-alive
// connection) next to the same call over the group's socket.
func BenchmarkToolsCallHTTPvsSocket(b *testing.B) {
	cert, key := testcert.Write(b)
	dir := shortTempDir(b)
	st, err := store.Open(context.Background(), filepath.Join(dir, "switchboard.db"))
	if err != nil {
		b.Fatal(err)
	}
	if err := standardSetup(context.Background(), st); err != nil {
		b.Fatal(err)
	}
	h := startMCP(b, dir, st, []string{"true"}, gateway.MCPHTTP{Listen: "127.0.0.1:0", CertFile: cert, KeyFile: key})
	u := h.mcpURL(b)
	if !strings.HasPrefix(u, "https://") {
		b.Fatalf("endpoint %s is not TLS", u)
	}
	b.Run("socket", func(b *testing.B) {
		rc := dialRaw(b, h.sock("acme"))
		rc.initialize()
		roundTrips(b, rc, 100, callLine) // warm up
		b.ResetTimer()
		b.ReportMetric(float64(p50(roundTrips(b, rc, b.N, callLine))), "p50-ns")
	})
	b.Run("https", func(b *testing.B) {
		hc, err := tlsClient(cert)
		if err != nil {
			b.Fatal(err)
		}
		tok := h.token(b, "acme")
		resp := postWith(b, hc, u, tok, "", initBody)
		sid := resp.Header.Get("Mcp-Session-Id")
		call := func(n int) []time.Duration {
			ds := make([]time.Duration, n)
			for i := range n {
				start := time.Now()
				resp := postWith(b, hc, u, tok, sid, callLine(i+100))
				ds[i] = time.Since(start)
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`ok`)) {
					b.Fatalf("tools/call over https: %d %s", resp.StatusCode, body)
				}
			}
			return ds
		}
		call(100) // warm up
		b.ResetTimer()
		b.ReportMetric(float64(p50(call(b.N))), "p50-ns")
	})
}

func tlsClient(certFile string) (*http.Client, error) {
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: tr}, nil
}

// postWith is post with a given client.
func postWith(t testing.TB, hc *http.Client, url, token, session, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", testmcp.Legacy)
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp
}

// TestHTTPAbandonedSessionsBounded: a client that initializes a legacy
// session again and again and never DELETEs one (each would be kept for
// the idle TTL, 30 minutes) does not grow its group's sessions without
// bound: past the limit the sessions used longest ago end (404: an MCP
// client initializes again), and the newest still serve.
func TestHTTPAbandonedSessionsBounded(t *testing.T) {
	h := newHarness(t, nil)
	u := h.mcpURL(t)
	tok := h.token(t, "acme")
	const limit = 1000 // ipc.HTTPOptions.MaxSessions' default
	var ids []string
	for i := range limit + 50 {
		resp := post(t, u, tok, "", initBody, nil)
		id := resp.Header.Get("Mcp-Session-Id")
		if resp.StatusCode != http.StatusOK || id == "" {
			t.Fatalf("initialize %d: status %d, session %q", i+1, resp.StatusCode, id)
		}
		ids = append(ids, id)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if resp := post(t, u, tok, ids[0], list, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the oldest of %d abandoned sessions: status %d, want 404 (ended)", len(ids), resp.StatusCode)
	}
	if resp := post(t, u, tok, ids[len(ids)-1], list, nil); resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Errorf("the newest session: status %d (%s), want 200", resp.StatusCode, b)
	}
	// The oldest still inside the limit serves too.
	if resp := post(t, u, tok, ids[len(ids)-limit+1], list, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a session inside the limit: status %d, want 200", resp.StatusCode)
	}
}
