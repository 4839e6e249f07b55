package grants

import (
	"strings"
	"testing"
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

// TestGlobNoBlowup: a pattern built to make a backtracking matcher
// exponential still gets the right answer. The matcher never backtracks
// (each literal run is found once, left to right); BenchmarkGlobNoBlowup
// measures it.
func TestGlobNoBlowup(t *testing.T) {
	pattern := strings.Repeat("a*", 30) + "b"
	for _, param := range []bool{false, true} {
		g := compileGlob(pattern, param)
		if g.match(strings.Repeat("a", 10000)) {
			t.Fatalf("glob %q matched a string without b", pattern)
		}
		if !g.match(strings.Repeat("a", 10000) + "b") {
			t.Fatalf("glob %q did not match a string of a's ending in b", pattern)
		}
	}
}

// BenchmarkGlobNoBlowup: the pathological pattern against 10,000 a's
// and a b (a match that walks the whole string).
func BenchmarkGlobNoBlowup(b *testing.B) {
	g := compileGlob(strings.Repeat("a*", 30)+"b", false)
	s := strings.Repeat("a", 10000) + "b"
	for b.Loop() {
		if !g.match(s) {
			b.Fatal("no match")
		}
	}
}
