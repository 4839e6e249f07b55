package adapters

import (
	"testing"
	"unicode/utf8"
)

func TestShorten(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"Allow once", 10, "Allow once"},
		{"Allow once", 11, "Allow once"},
		{"Allow once", 6, "Allow…"},
		{"ÄÖÜäöü", 4, "ÄÖÜ…"}, // characters, not bytes
		{"ab", 1, "…"},
		{"ab", 0, ""},
		{"", 3, ""},
	} {
		got := Shorten(tc.s, tc.n)
		if got != tc.want {
			t.Errorf("Shorten(%q, %d) = %q; want %q", tc.s, tc.n, got, tc.want)
		}
		if tc.n > 0 && utf8.RuneCountInString(got) > tc.n {
			t.Errorf("Shorten(%q, %d) = %q: %d characters, over %d", tc.s, tc.n, got, utf8.RuneCountInString(got), tc.n)
		}
	}
}
