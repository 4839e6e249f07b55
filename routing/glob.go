package routing

import "strings"

// GlobMatch reports whether s matches pattern: "*" matches any run of
// characters except "/" (the empty run too), "**" any run including "/", and
// every other character itself ("?" is literal). Three or more stars in a row
// act as "**".
func GlobMatch(pattern, s string) bool {
	g := compileGlob(pattern)
	return g.match(s)
}

// IsLiteral reports whether glob has no "*", so it matches exactly one string.
func IsLiteral(glob string) bool { return !strings.Contains(glob, "*") }

// literalPrefix is the part of glob before its first "*".
func literalPrefix(glob string) string {
	if i := strings.IndexByte(glob, '*'); i >= 0 {
		return glob[:i]
	}
	return glob
}

type globKind uint8

const (
	globLiteral    globKind = iota // s == lit
	globPrefixStar                 // lit + "*": prefix, then no "/"
	globPrefixAll                  // lit + "**": prefix, then anything
	globGeneral                    // anything else: toks
)

// token is one piece of a general glob: a literal run, "*" or "**".
type token struct {
	lit  string
	star uint8 // 0: literal lit; 1: "*"; 2: "**"
}

// glob is a compiled pattern. The common shapes (literal, "prefix*",
// "prefix**") match without the general algorithm.
type glob struct {
	src  string
	kind globKind
	lit  string
	toks []token
	// For globGeneral, a cheap filter before the full match: s must start
	// with head, end with tail, be at least minLen long and contain every
	// literal token.
	head, tail string
	minLen     int
}

func compileGlob(p string) *glob {
	g := &glob{src: p}
	for i := 0; i < len(p); {
		if p[i] != '*' {
			j := i
			for j < len(p) && p[j] != '*' {
				j++
			}
			g.toks = append(g.toks, token{lit: p[i:j]})
			i = j
			continue
		}
		j := i
		for j < len(p) && p[j] == '*' {
			j++
		}
		t := token{star: 1}
		if j-i >= 2 {
			t.star = 2
		}
		g.toks = append(g.toks, t)
		i = j
	}
	g.kind = globGeneral
	switch {
	case len(g.toks) == 0:
		g.kind = globLiteral
	case len(g.toks) == 1 && g.toks[0].star == 0:
		g.kind, g.lit = globLiteral, g.toks[0].lit
	case len(g.toks) == 1:
		g.kind = globPrefixStar + globKind(g.toks[0].star-1)
	case len(g.toks) == 2 && g.toks[0].star == 0 && g.toks[1].star != 0:
		g.kind, g.lit = globPrefixStar+globKind(g.toks[1].star-1), g.toks[0].lit
	}
	if g.kind != globGeneral {
		g.toks = nil
		return g
	}
	if first := g.toks[0]; first.star == 0 {
		g.head = first.lit
	}
	if last := g.toks[len(g.toks)-1]; last.star == 0 {
		g.tail = last.lit
	}
	for _, t := range g.toks {
		g.minLen += len(t.lit)
	}
	return g
}

func (g *glob) match(s string) bool {
	switch g.kind {
	case globLiteral:
		return s == g.lit
	case globPrefixStar:
		return strings.HasPrefix(s, g.lit) && strings.IndexByte(s[len(g.lit):], '/') < 0
	case globPrefixAll:
		return strings.HasPrefix(s, g.lit)
	}
	if len(s) < g.minLen || !strings.HasPrefix(s, g.head) || !strings.HasSuffix(s, g.tail) {
		return false
	}
	for _, t := range g.toks {
		if t.star == 0 && !strings.Contains(s, t.lit) {
			return false
		}
	}
	return g.matchGeneral(s)
}

// matchGeneral runs the tokens over s as a set of reachable positions:
// O(len(tokens) × len(s)) with no backtracking blow-up, and no allocation for
// strings shorter than the stack buffer.
func (g *glob) matchGeneral(s string) bool {
	n := len(s) + 1
	var buf [2 * 160]bool
	var cur, next []bool
	if 2*n <= len(buf) {
		cur, next = buf[:n], buf[n:2*n]
	} else {
		b := make([]bool, 2*n)
		cur, next = b[:n], b[n:]
	}
	cur[0] = true
	for _, t := range g.toks {
		clear(next)
		alive := false
		switch t.star {
		case 0:
			for j := 0; j+len(t.lit) < n; j++ {
				if cur[j] && s[j:j+len(t.lit)] == t.lit {
					next[j+len(t.lit)] = true
					alive = true
				}
			}
		default:
			reach := false
			for j := 0; j < n; j++ {
				switch {
				case cur[j]:
					reach = true
				case reach && t.star == 1 && s[j-1] == '/':
					reach = false
				}
				next[j] = reach
				alive = alive || reach
			}
		}
		if !alive {
			return false
		}
		cur, next = next, cur
	}
	return cur[n-1]
}
