package routing

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		name, pattern, s string
		want             bool
	}{
		{"literal equal", "web:lobby", "web:lobby", true},
		{"literal differs", "web:lobby", "web:lobby2", false},
		{"literal prefix only", "web:lobby", "web:lob", false},
		{"star matches run", "web:*", "web:lobby", true},
		{"star matches empty", "web:*", "web:", true},
		{"star alone matches empty", "*", "", true},
		{"star does not cross slash", "telegram:*", "telegram:group/123", false},
		{"star per segment", "telegram:*/*", "telegram:group/123", true},
		{"star in middle", "slack:*/channel/C1", "slack:T9/channel/C1", true},
		{"star in middle no cross", "slack:*/C1", "slack:T9/channel/C1", false},
		{"star leading", "*/123", "group/123", true},
		{"double star crosses slash", "telegram:**", "telegram:group/123", true},
		{"double star matches empty", "telegram:**", "telegram:", true},
		{"double star alone", "**", "a/b/c", true},
		{"double star alone empty", "**", "", true},
		{"double star middle", "slack:**/C1", "slack:T9/channel/C1", true},
		{"double star middle no match", "slack:**/C1", "slack:T9/channel/C2", false},
		{"triple star is double", "a***b", "a/x/b", true},
		{"question mark literal", "web:a?c", "web:a?c", true},
		{"question mark not a wildcard", "web:a?c", "web:abc", false},
		{"brackets literal", "web:[ab]", "web:[ab]", true},
		{"brackets not a class", "web:[ab]", "web:a", false},
		{"empty pattern empty string", "", "", true},
		{"empty pattern non-empty", "", "x", false},
		{"star needs suffix", "*.txt", "a.txt", true},
		{"star suffix missing", "*.txt", "a.txt.bak", false},
		{"backtracking", "a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaa", false},
		{"two stars one segment", "u*/*x", "user/abx", true},
		{"slash in value with literal slash", "user/*", "user/", true},
		{"platform glob", "tele*", "telegram", true},
		{"platform glob no", "tele*", "web", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := GlobMatch(c.pattern, c.s); got != c.want {
				t.Errorf("GlobMatch(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
			}
		})
	}
}

func TestIsLiteral(t *testing.T) {
	for g, want := range map[string]bool{
		"web:lobby": true, "web:a?b": true, "web:*": false, "**": false, "a*b": false,
	} {
		if got := IsLiteral(g); got != want {
			t.Errorf("IsLiteral(%q) = %v, want %v", g, got, want)
		}
	}
}

// globRegexp is an independent reference implementation of the glob rules.
func globRegexp(p string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(p); {
		if p[i] != '*' {
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
			i++
			continue
		}
		j := i
		for j < len(p) && p[j] == '*' {
			j++
		}
		if j-i >= 2 {
			b.WriteString(`.*`)
		} else {
			b.WriteString(`[^/]*`)
		}
		i = j
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

func TestGlobMatchRandomAgainstRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(alphabet string, max int) string {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 20000 {
		p := gen("ab/*?:", 8)
		s := gen("ab/?:", 10)
		want := globRegexp(p).MatchString(s)
		if got := GlobMatch(p, s); got != want {
			t.Fatalf("GlobMatch(%q, %q) = %v, regexp says %v", p, s, got, want)
		}
	}
}

func TestGlobMatchLongString(t *testing.T) {
	// Longer than the stack buffer: the general matcher must still be right.
	s := strings.Repeat("a", 400) + "/b"
	if !GlobMatch("a*a*/*b", s) {
		t.Errorf("long string did not match")
	}
	if GlobMatch("a*a*b", s) {
		t.Errorf("star crossed a slash in a long string")
	}
}
