package grants

import (
	"fmt"
	"strconv"
)

// Decision is the outcome of checking one call against a Set: allow (Allow),
// ask (Ask: the deciding rule starts with '?'; the call may run only once a
// person allows it) or deny (neither). Allow and Ask are never both true, so
// code that looks at Allow alone treats an ask as a denial.
type Decision struct {
	Allow  bool
	Ask    bool
	Rule   string // text of the deciding rule; "" when no rule matched
	Index  int    // index of the deciding rule in the set, -1 when none
	Reason string // a sentence for logs and tool errors, e.g. `denied by rule 5 "!send(jid=slack:*)"`; N is Index (0-based)
}

// Verdict is the decision in one word: "allow", "ask" or "deny".
func (d Decision) Verdict() string {
	switch {
	case d.Allow:
		return "allow"
	case d.Ask:
		return "ask"
	}
	return "deny"
}

// Set is a compiled, ordered list of rules. It is immutable and safe for
// concurrent use. The zero Set and a nil *Set deny everything.
type Set struct {
	texts []string // as given to Compile
	rules []compiledRule
}

// compiledRule is one rule ready to match. A rule that did not parse has
// ok == false and matches nothing.
type compiledRule struct {
	ok     bool
	deny   bool
	ask    bool
	action glob
	params []compiledParam
	text   string // Rule.Text
	reason string // the Decision.Reason when this rule decides
}

type compiledParam struct {
	name string
	glob glob
}

// Compile compiles rules in order. Rules that do not parse are kept, so that
// indexes line up with the input, but they match nothing; use Validate to
// find them.
func Compile(rules []string) *Set {
	s := &Set{texts: append([]string(nil), rules...), rules: make([]compiledRule, len(rules))}
	for i, text := range rules {
		s.rules[i] = compileRule(i, text)
	}
	return s
}

func compileRule(index int, text string) compiledRule {
	r, err := Parse(text)
	if err != nil {
		return compiledRule{}
	}
	c := compiledRule{
		ok:     true,
		deny:   r.Deny,
		ask:    r.Ask,
		action: compileGlob(r.Action, false),
		text:   r.Text,
	}
	if len(r.Params) > 0 {
		c.params = make([]compiledParam, len(r.Params))
		for j, p := range r.Params {
			c.params[j] = compiledParam{name: p.Name, glob: compileGlob(p.Glob, true)}
		}
	}
	verb := "allowed"
	switch {
	case r.Deny:
		verb = "denied"
	case r.Ask:
		verb = "asked"
	}
	c.reason = fmt.Sprintf("%s by rule %d %q", verb, index, r.Text)
	return c
}

// Rules returns a copy of the rules as given to Compile.
func (s *Set) Rules() []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s.texts...)
}

// Check decides a call of tool with params (nil means no params). The last
// matching rule decides: an allow rule allows, a '!' rule denies, a '?' rule
// asks; no matching rule denies.
func (s *Set) Check(tool string, params map[string]string) Decision {
	if s != nil {
		for i := len(s.rules) - 1; i >= 0; i-- {
			r := &s.rules[i]
			if r.matches(tool, params) {
				return Decision{Allow: !r.deny && !r.ask, Ask: r.ask, Rule: r.text, Index: i, Reason: r.reason}
			}
		}
	}
	return Decision{Index: -1, Reason: "denied: no rule matches " + strconv.Quote(tool)}
}

// matches reports whether the rule matches a call of tool with params.
func (r *compiledRule) matches(tool string, params map[string]string) bool {
	if !r.ok || !r.action.match(tool) {
		return false
	}
	for i := range r.params {
		p := &r.params[i]
		v, ok := params[p.name]
		if !ok || !p.glob.match(v) {
			return false
		}
	}
	return true
}

// Listed reports whether tool is offered to the group: some allow or ask rule
// whose action matches it comes after the last unconditional deny of it (an
// ask rule lists like an allow rule: the tool may run once a person allows
// it). Params are ignored here; a listed tool's calls are still checked with
// their params.
func (s *Set) Listed(tool string) bool {
	if s == nil {
		return false
	}
	for i := len(s.rules) - 1; i >= 0; i-- {
		r := &s.rules[i]
		if !r.ok || !r.action.match(tool) {
			continue
		}
		if !r.deny {
			return true
		}
		if len(r.params) == 0 {
			return false
		}
	}
	return false
}

// ListedTools returns the tools of all that are listed, in their order.
func (s *Set) ListedTools(all []string) []string {
	out := make([]string, 0, len(all))
	for _, tool := range all {
		if s.Listed(tool) {
			out = append(out, tool)
		}
	}
	return out
}

// Constrains reports whether some rule whose action matches tool names
// param: a call that leaves param out is then not decided as one that
// gives it would be (a rule with param matches only calls that give it),
// so a tool that acts on many values when param is absent (find_messages
// without a chat) must check each value as a call giving it.
func (s *Set) Constrains(tool, param string) bool {
	if s == nil {
		return false
	}
	for i := range s.rules {
		r := &s.rules[i]
		if !r.ok || !r.action.match(tool) {
			continue
		}
		for _, p := range r.params {
			if p.name == param {
				return true
			}
		}
	}
	return false
}
