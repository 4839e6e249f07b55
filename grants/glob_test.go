package grants

import (
	"strings"
	"testing"
	"time"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		param   bool
		s       string
		want    bool
	}{
		{"literal", "send", false, "send", true},
		{"literal mismatch", "send", false, "sen", false},
		{"empty literal", "", true, "", true},
		{"empty literal vs text", "", true, "x", false},
		{"star empty", "*", false, "", true},
		{"star word", "*", false, "send_file9", true},
		{"star not dash", "*", false, "a-b", false},
		{"star not high byte", "*", false, "é", false},
		{"stars collapse", "s**d", false, "send", true},
		{"prefix and suffix overlap", "ab*ba", false, "aba", false},
		{"prefix and suffix touch", "ab*ba", false, "abba", true},
		{"middle leftmost", "*_*_task", false, "a_b_c_task", true},
		{"middle across non-word", "*x*", false, "ax-b", false},
		{"param star anything", "*", true, "slack:T1/channel/C1 ü", true},
		{"param star not comma", "*", true, "a,b", false},
		{"param star not paren", "*", true, "a)b", false},
		{"param literal comma can only come from the value", "a*", true, "a,", false},
		{"param middle", "slack:*/channel/*", true, "slack:T1/channel/C1", true},
		{"param middle miss", "slack:*/channel/*", true, "slack:T1/group/C1", false},
		{"param literal paren-free", "web:lobby", true, "web:lobby", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := compileGlob(tt.pattern, tt.param)
			if got := g.match(tt.s); got != tt.want {
				t.Errorf("glob %q (param=%v) match %q = %v, want %v", tt.pattern, tt.param, tt.s, got, tt.want)
			}
		})
	}
}

// TestGlobNoBlowup guards against backtracking: a pattern built to make a
// naive matcher exponential must still answer at once.
func TestGlobNoBlowup(t *testing.T) {
	pattern := strings.Repeat("a*", 30) + "b"
	s := strings.Repeat("a", 10000)
	for _, param := range []bool{false, true} {
		g := compileGlob(pattern, param)
		start := time.Now()
		if g.match(s) {
			t.Fatalf("glob %q matched a string without b", pattern)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("match took %v", d)
		}
	}
}
