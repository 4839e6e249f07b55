package ops_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchboard/ops"
	"switchboard/store"
)

// A minted token is well-formed; what differs from its form in prefix,
// length or alphabet is not, and is refused without a store lookup.
func TestWellFormedToken(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "switchboard.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tok, _, err := ops.MintToken(context.Background(), st, "main", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !ops.WellFormedToken(tok) {
		t.Errorf("a minted token is not well-formed")
	}
	rest := strings.TrimPrefix(tok, ops.TokenPrefix)
	for name, s := range map[string]string{
		"empty": "", "no prefix": rest, "other prefix": "sbx_" + rest, "short": tok[:len(tok)-1], "long": tok + "A",
		"padding": tok[:len(tok)-1] + "=", "not base64url": tok[:len(tok)-1] + "+", "space": tok[:len(tok)-1] + " ",
	} {
		if ops.WellFormedToken(s) {
			t.Errorf("%s: %q is well-formed", name, s)
		}
	}
}
