package ipc_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"switchboard/groups"
	"switchboard/ipc"
)

// brokenTokens is a token store that cannot be read (a locked or failing
// database).
type brokenTokens struct{}

func (brokenTokens) TokenFolder(context.Context, string) (groups.Folder, error) {
	return "", errors.New("read token: database disk image is malformed")
}

// noBackend is a Backend the requests below never reach.
type noBackend struct{ ipc.Backend }

// TestHTTPTokenStoreFailure: when the token store fails, a request is
// answered 503 (try again), not 401 (your token is bad); the failure is
// not counted against the address as a bad token, so the agent is not
// locked out with 429 once the store is back; and the log says what
// failed.
func TestHTTPTokenStoreFailure(t *testing.T) {
	var logs bytes.Buffer
	s, err := ipc.New(ipc.Options{Backend: noBackend{}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := s.HTTPHandler(ipc.HTTPOptions{Tokens: brokenTokens{}, FailBurst: 2})
	for i := range 5 {
		req := httptest.NewRequest(http.MethodPost, ipc.HTTPPath, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer sbt_whatever")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("request %d with the token store failing: status %d (%s), want 503", i+1, rec.Code, strings.TrimSpace(rec.Body.String()))
		}
		if rec.Header().Get("Retry-After") == "" {
			t.Errorf("request %d: 503 without Retry-After", i+1)
		}
	}
	if !strings.Contains(logs.String(), "database disk image is malformed") {
		t.Errorf("the log does not say why the token could not be checked:\n%s", logs.String())
	}
}

// TestHTTPTokenDiesWithItsGroup: a group's tokens are revoked when the
// group is removed (`switchboard group rm`), so that a group made later
// under the same name (a new subgroup "contractor", say) is not reachable
// with a token handed out for the old one.
func TestHTTPTokenDiesWithItsGroup(t *testing.T) {
	h := newHarness(t, nil)
	u := h.mcpURL(t)
	old := h.token(t, "acme/eng")
	if resp := post(t, u, old, "", initBody, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("the token before: %d", resp.StatusCode)
	}
	ctx := context.Background()
	if _, err := h.st.RemoveGroup(ctx, "acme/eng"); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AddGroup(ctx, "acme/eng"); err != nil {
		t.Fatal(err)
	}
	h.waitSocket(t, "acme/eng")
	if resp := post(t, u, old, "", initBody, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the removed group's token on the group made again under its name: %d, want 401", resp.StatusCode)
	}
}
