package grants

import "strings"

// glob is a compiled glob. The only metacharacter is '*'; what a star may
// match depends on where the glob sits: in an action it matches word bytes
// ([A-Za-z0-9_]), in a param it matches any byte but ',' and ')'.
//
// Matching is linear-ish and allocation-free: the glob is split into the
// literal runs between stars once, at compile time. The first run is a
// prefix, the last a suffix, and each middle run is placed at its leftmost
// occurrence. Leftmost placement is optimal even with a restricted star class:
// if a later placement leaves only class bytes for the stars, so does the
// leftmost one (the bytes it skips are either before the later placement or
// part of an occurrence of the same run). No backtracking, no regexp.
type glob struct {
	lit     string   // the whole pattern when it has no star
	parts   []string // literal runs between stars; len(parts) >= 2 when hasStar
	hasStar bool
	param   bool // star class: false = word bytes, true = anything but ',' and ')'
}

// compileGlob compiles pattern; param selects the star class.
func compileGlob(pattern string, param bool) glob {
	g := glob{param: param}
	if !strings.Contains(pattern, "*") {
		g.lit = pattern
		return g
	}
	g.hasStar = true
	for _, part := range strings.Split(pattern, "*") {
		// Consecutive stars are one star: drop the empty runs between them
		// but keep the (possibly empty) first and last runs.
		if part == "" && len(g.parts) > 0 && g.parts[len(g.parts)-1] == "" {
			continue
		}
		g.parts = append(g.parts, part)
	}
	if len(g.parts) == 1 { // pattern was all stars: "" then nothing
		g.parts = append(g.parts, "")
	}
	return g
}

// match reports whether s matches the whole glob.
func (g *glob) match(s string) bool {
	if !g.hasStar {
		return s == g.lit
	}
	first, last := g.parts[0], g.parts[len(g.parts)-1]
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	if !strings.HasSuffix(s, last) {
		return false
	}
	body := s[:len(s)-len(last)]
	for _, part := range g.parts[1 : len(g.parts)-1] {
		i := strings.Index(body, part)
		if i < 0 || !g.starMatches(body[:i]) {
			return false
		}
		body = body[i+len(part):]
	}
	return g.starMatches(body)
}

// starMatches reports whether a single star may match all of s.
func (g *glob) starMatches(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if g.param {
			if c == ',' || c == ')' {
				return false
			}
		} else if !isWordByte(c) {
			return false
		}
	}
	return true
}

// isWordByte reports whether c is one of [A-Za-z0-9_].
func isWordByte(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
