package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"switchboard/agent"
	"switchboard/gateway"
)

// The admin listener on loopback answers only to loopback names: a request
// whose Host is another name (a page that rebound its own name to
// 127.0.0.1) gets 403 saying why, on every path.
func TestAdminRefusesRebindingHost(t *testing.T) {
	dir := t.TempDir()
	st := openDB(t, dir)
	g, err := gateway.New(gateway.Options{Store: st, Agent: agent.Spec{Command: []string{"true"}}, DataDir: dir, Operator: "root", Timezone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := startAdmin("127.0.0.1:0", g, st, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.stop()
	addr := adm.ln.Addr().String()
	_, port, _ := strings.Cut(addr, ":")
	for _, tc := range []struct {
		host, path string
		want       int
	}{
		{"evil.example:" + port, "/healthz", http.StatusForbidden},
		{"evil.example:" + port, "/metrics", http.StatusForbidden},
		{"evil.example", "/", http.StatusForbidden},
		{addr, "/healthz", http.StatusOK},
		{"localhost:" + port, "/healthz", http.StatusOK},
	} {
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		resp.Body.Close()
		body := string(b)
		if resp.StatusCode != tc.want {
			t.Errorf("GET %s with Host %s: %d (%s), want %d", tc.path, tc.host, resp.StatusCode, strings.TrimSpace(body), tc.want)
		}
		if tc.want == http.StatusForbidden && !strings.Contains(body, "open it through 127.0.0.1 or localhost") {
			t.Errorf("GET %s with Host %s: %q does not say how to open it", tc.path, tc.host, body)
		}
	}
}

// The status page shows text others wrote (adapter errors, chat ids, tool
// names, failed turns' errors). Besides html/template's escaping, its
// responses say: run no script, load nothing from elsewhere, never be
// framed, never sniff a JSON or text body as HTML.
func TestAdminSecurityHeaders(t *testing.T) {
	dir := t.TempDir()
	st := openDB(t, dir)
	g, err := gateway.New(gateway.Options{Store: st, Agent: agent.Spec{Command: []string{"true"}}, DataDir: dir, Operator: "root", Timezone: "UTC"})
	if err != nil {
		t.Fatal(err)
	}
	adm, err := startAdmin("127.0.0.1:0", g, st, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.stop()
	for _, path := range []string{"/", "/readyz", "/healthz", "/metrics", "/nope"} {
		resp, err := http.Get("http://" + adm.ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("GET %s: X-Content-Type-Options %q, want nosniff", path, got)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", path, csp, want)
			}
		}
		if strings.Contains(csp, "script-src") {
			t.Errorf("GET %s: Content-Security-Policy %q allows scripts; the status page has none", path, csp)
		}
	}
}
