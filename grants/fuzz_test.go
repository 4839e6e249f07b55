package grants

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// The seed corpora live in testdata/fuzz/FuzzParse and testdata/fuzz/FuzzMatch.

// FuzzParse: Parse never panics; a rule that parses survives a round trip
// through its canonical form; a rule that does not parse never allows,
// never denies and never lists anything.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, rule, tool, jid string) {
		r, err := Parse(rule)
		if err == nil {
			if r.Text != strings.TrimSpace(rule) {
				t.Fatalf("Parse(%q).Text = %q", rule, r.Text)
			}
			again, err := Parse(canonical(r))
			if err != nil {
				t.Fatalf("canonical form %q of %q does not parse: %v", canonical(r), rule, err)
			}
			if again.Deny != r.Deny || again.Ask != r.Ask || again.Action != r.Action || !equalParams(again.Params, r.Params) {
				t.Fatalf("round trip of %q: %+v, want %+v", rule, again, r)
			}
			return
		}
		if !errors.Is(err, ErrBadRule) {
			t.Fatalf("Parse(%q) error %v does not wrap ErrBadRule", rule, err)
		}
		if Validate([]string{"*", rule}) == nil {
			t.Fatalf("Validate accepts %q, which Parse rejects", rule)
		}
		alone := Compile([]string{rule})
		after := Compile([]string{"*", rule})
		for _, name := range append([]string{tool, rule, "send", "*", ""}, ContractCatalog.In(Messaging)...) {
			for _, params := range []map[string]string{nil, {"jid": jid}, {"jid": jid, "text": tool}} {
				if d := alone.Check(name, params); d.Allow || d.Ask || d.Index != -1 {
					t.Fatalf("unparsable rule %q decided Check(%q, %v) = %+v", rule, name, params, d)
				}
				if d := after.Check(name, params); d.Index == 1 {
					t.Fatalf("unparsable rule %q decided Check(%q, %v) = %+v", rule, name, params, d)
				}
			}
			if alone.Listed(name) {
				t.Fatalf("unparsable rule %q lists %q", rule, name)
			}
		}
	})
}

// FuzzMatch: glob matching never panics, agrees with a regexp reference, and a
// glob made of a literal value always matches that value.
func FuzzMatch(f *testing.F) {
	f.Fuzz(func(t *testing.T, pattern, value string) {
		if len(pattern) > 256 || len(value) > 1024 {
			return
		}
		for _, param := range []bool{false, true} {
			g := compileGlob(pattern, param)
			got := g.match(value)
			if utf8.ValidString(pattern) && utf8.ValidString(value) {
				if want := referenceGlob(pattern, param).MatchString(value); got != want {
					t.Fatalf("glob %q (param=%v) match %q = %v, reference says %v", pattern, param, value, got, want)
				}
			}
		}
		checkLiteral(t, value)
	})
}

// checkLiteral: a value used as its own glob matches itself, as a param glob
// and, when it is a word, as an action.
func checkLiteral(t *testing.T, value string) {
	if strings.ContainsAny(value, ",)*") {
		return
	}
	if g := compileGlob(value, true); !g.match(value) {
		t.Fatalf("param glob %q does not match itself", value)
	}
	if value == strings.TrimSpace(value) && !strings.Contains(value, "(") {
		s := Compile([]string{"send(v=" + value + ")"})
		if !s.Check("send", map[string]string{"v": value}).Allow {
			t.Fatalf("rule send(v=%s) does not allow v=%q", value, value)
		}
	}
	if isWord(value) {
		s := Compile([]string{value})
		if !s.Check(value, nil).Allow || !s.Listed(value) {
			t.Fatalf("rule %q does not allow or list tool %q", value, value)
		}
	}
}

// referenceGlob is the obviously-correct (RE2, linear) version of compileGlob.
func referenceGlob(pattern string, param bool) *regexp.Regexp {
	star := `[A-Za-z0-9_]*`
	if param {
		star = `[^,)]*`
	}
	parts := strings.Split(pattern, "*")
	for i, part := range parts {
		parts[i] = regexp.QuoteMeta(part)
	}
	return regexp.MustCompile(`^(?:` + strings.Join(parts, star) + `)$`)
}

func canonical(r Rule) string {
	var b strings.Builder
	if r.Deny {
		b.WriteByte('!')
	}
	if r.Ask {
		b.WriteByte('?')
	}
	b.WriteString(r.Action)
	if len(r.Params) > 0 {
		b.WriteByte('(')
		for i, p := range r.Params {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(p.Name + "=" + p.Glob)
		}
		b.WriteByte(')')
	}
	return b.String()
}

func equalParams(a, b []Param) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
