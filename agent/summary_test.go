package agent

import "testing"

func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"a  b\n\tc", 10, "a b c"},
		{"abcdef", 4, "abc…"},
		{"héllo wörld", 5, "héll…"},
		{"abc", 0, ""},
		{"", 0, ""},
	} {
		if got := oneLine(c.in, c.n); got != c.want {
			t.Errorf("oneLine(%q, %d) = %q; want %q", c.in, c.n, got, c.want)
		}
	}
}
