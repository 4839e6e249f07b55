package agent

import (
	"errors"
	"strings"
	"testing"
)

// A turn id is a NATS subject token, a message id and a file name as it
// is: 1 to 64 of [A-Za-z0-9_-]; anything else is refused with ErrBadTurnID.
func TestParseTurnID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"gateway's", "t-0123456789abcdef", true},
		{"underscore", "b_1", true},
		{"64 bytes", strings.Repeat("a", 64), true},
		{"empty", "", false},
		{"65 bytes", strings.Repeat("a", 64) + "a", false},
		{"dot (a subject separator)", "t.1", false},
		{"wildcard", "t-*", false},
		{"slash (a path)", "../t", false},
		{"space", "t 1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := ParseTurnID(tc.in)
			if tc.ok != (err == nil) || tc.ok && id != TurnID(tc.in) {
				t.Fatalf("ParseTurnID(%q) = %q, %v; want ok %v", tc.in, id, err, tc.ok)
			}
			if !tc.ok && !errors.Is(err, ErrBadTurnID) {
				t.Errorf("err %v; want ErrBadTurnID", err)
			}
			if verr := TurnID(tc.in).Validate(); (verr == nil) != tc.ok {
				t.Errorf("Validate(%q) = %v; want ok %v", tc.in, verr, tc.ok)
			}
		})
	}
}
