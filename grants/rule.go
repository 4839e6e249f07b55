package grants

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Param is one name=glob pair of a rule.
type Param struct{ Name, Glob string }

// Rule is a parsed grant rule.
type Rule struct {
	Text   string // the rule as written, trimmed
	Deny   bool   // the rule starts with '!'
	Ask    bool   // the rule starts with '?': a call it decides waits for a person
	Action string // glob over tool names, as written
	Params []Param
}

// Parse parses one rule: `[!|?]action[(param=glob, ...)]`. Leading and trailing whitespace is ignored, and so is
// whitespace around param names, values and commas; anywhere else the grammar
// is strict. The error wraps ErrBadRule and names the problem and where it is.
func Parse(text string) (Rule, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return Rule{}, ruleError(t, "empty rule")
	}
	r := Rule{Text: t}
	i := 0
	switch t[0] {
	case '!':
		r.Deny = true
		i = 1
	case '?':
		r.Ask = true
		i = 1
	}
	start := i
	for i < len(t) && (isWordByte(t[i]) || t[i] == '*') {
		i++
	}
	r.Action = t[start:i]
	if i == len(t) {
		if r.Action == "" {
			return Rule{}, ruleError(t, "missing action after %q", t[:i])
		}
		return r, nil
	}
	if t[i] != '(' {
		return Rule{}, ruleError(t, "unexpected %s at column %d (an action is letters, digits, \"_\" and \"*\")",
			quoteRuneAt(t, i), column(t, i))
	}
	if r.Action == "" {
		return Rule{}, ruleError(t, `missing action before "("`)
	}
	end := strings.IndexByte(t[i+1:], ')')
	if end < 0 {
		return Rule{}, ruleError(t, `missing ")"`)
	}
	end += i + 1
	if strings.Contains(t[i+1:end], "(") {
		return Rule{}, ruleError(t, `nested "(" in parameter list`)
	}
	if end != len(t)-1 {
		return Rule{}, ruleError(t, `unexpected %s at column %d after ")"`, quoteRuneAt(t, end+1), column(t, end+1))
	}
	params, err := parseParams(t, t[i+1:end])
	if err != nil {
		return Rule{}, err
	}
	r.Params = params
	return r, nil
}

// parseParams parses the text between the parentheses of rule t.
func parseParams(t, body string) ([]Param, error) {
	if strings.TrimSpace(body) == "" {
		return nil, ruleError(t, `empty parameter list "()"`)
	}
	pieces := strings.Split(body, ",")
	params := make([]Param, 0, len(pieces))
	for n, piece := range pieces {
		piece = strings.TrimSpace(piece)
		if piece == "" {
			if n == len(pieces)-1 {
				return nil, ruleError(t, `trailing "," in parameter list`)
			}
			return nil, ruleError(t, "empty parameter %d in parameter list", n+1)
		}
		name, value, ok := strings.Cut(piece, "=")
		if !ok {
			return nil, ruleError(t, `parameter %q has no "=" (want name=glob)`, piece)
		}
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, ruleError(t, `missing parameter name before "=" in %q`, piece)
		}
		if !isWord(name) {
			return nil, ruleError(t, `invalid parameter name %q (want letters, digits and "_")`, name)
		}
		for _, p := range params {
			if p.Name == name {
				return nil, ruleError(t, "duplicate parameter %q", name)
			}
		}
		params = append(params, Param{Name: name, Glob: strings.TrimSpace(value)})
	}
	return params, nil
}

// Validate returns the error of the first rule that does not parse, or nil.
// The CLI calls it before storing a group's overrides.
func Validate(rules []string) error {
	for _, text := range rules {
		if _, err := Parse(text); err != nil {
			return err
		}
	}
	return nil
}

// ruleError formats a parse error for rule t.
func ruleError(t, format string, args ...any) error {
	return fmt.Errorf("rule %q: %s: %w", t, fmt.Sprintf(format, args...), ErrBadRule)
}

// column is the 1-based rune column of byte offset i in s.
func column(s string, i int) int {
	return utf8.RuneCountInString(s[:i]) + 1
}

// quoteRuneAt quotes the character at byte offset i of s for an error message.
func quoteRuneAt(s string, i int) string {
	r, size := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError && size <= 1 {
		return fmt.Sprintf("byte %#x", s[i])
	}
	return fmt.Sprintf("%q", r)
}

// isWord reports whether s is non-empty and made of word bytes only.
func isWord(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}
