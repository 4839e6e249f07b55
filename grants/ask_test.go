package grants_test

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// askRules are the rules the ask property draws from: asks, allows and
// denies, with and without params, globs, and one that does not parse.
var askRules = []string{
	"send", "?send", "!send", "?send(jid=telegram:*)", "!send(jid=slack:*)", "send(jid=web:*)",
	"?*", "*", "!*", "?like", "!like", "like", "?*_task", "!*_task", "reply", "?reply(jid=web:*)",
	"?send(", "pin_message(jid=web:*)", "?pin_message", "!reply",
}

// asAllow turns every ask rule into the allow rule it asks for; asDeny
// into a denial with the same action and params.
func asAllow(rules []string) []string { return replaceAsk(rules, "") }
func asDeny(rules []string) []string  { return replaceAsk(rules, "!") }

func replaceAsk(rules []string, prefix string) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		if rest, ok := strings.CutPrefix(r, "?"); ok {
			r = prefix + rest
		}
		out[i] = r
	}
	return out
}

// TestAskNeverWidens is the property of CONTRACT §15 for ask rules: an ask
// never widens what is listed or callable. For every rule list S (tier
// defaults followed by random overrides, asks among them):
//   - listed under S ⇔ listed under S with asks as allows (an ask lists
//     exactly as the allow it asks for would, never more);
//   - allowed at once under S ⇔ allowed under S with asks as denies (an ask
//     never lets a call through without a person);
//   - allowed or asked under S ⇔ allowed under S with asks as allows (what
//     a person may let through is no more than the allow would);
//   - listed ⇔ some call is allowed or asked (the listing property holds).
func TestAskNeverWidens(t *testing.T) {
	candidates := []map[string]string{
		nil,
		p("jid", "web:lobby"),
		p("jid", "slack:T1/channel/C1"),
		p("jid", "telegram:-100123", "topic", "t1"),
	}
	rng := rand.New(rand.NewPCG(31, 15))
	for n := range 2000 {
		tier := rng.IntN(5)
		overrides := make([]string, rng.IntN(6))
		for i := range overrides {
			overrides[i] = askRules[rng.IntN(len(askRules))]
		}
		s := cat.ForGroup(tier, overrides)
		allow := cat.ForGroup(tier, asAllow(overrides))
		deny := cat.ForGroup(tier, asDeny(overrides))
		for _, tool := range cat.Tools() {
			if s.Listed(tool) != allow.Listed(tool) {
				t.Fatalf("case %d tier %d %q: Listed(%s)=%v, with asks as allows %v", n, tier, overrides, tool, s.Listed(tool), allow.Listed(tool))
			}
			callable := false
			for _, params := range candidates {
				d := s.Check(tool, params)
				if d.Allow && d.Ask {
					t.Fatalf("case %d %q: Check(%s, %v) both allows and asks", n, overrides, tool, params)
				}
				if want := deny.Check(tool, params).Allow; d.Allow != want {
					t.Fatalf("case %d tier %d %q: Check(%s, %v) allows=%v, with asks as denies %v", n, tier, overrides, tool, params, d.Allow, want)
				}
				if want := allow.Check(tool, params).Allow; (d.Allow || d.Ask) != want {
					t.Fatalf("case %d tier %d %q: Check(%s, %v) = %s, with asks as allows allow=%v", n, tier, overrides, tool, params, d.Verdict(), want)
				}
				callable = callable || d.Allow || d.Ask
			}
			if listed := s.Listed(tool); listed && !callable {
				// Param-only allows and asks list a tool no candidate
				// reaches; the overrides of TestListedIffCallable show the
				// unconditional cases, so this bound is the one that holds.
				if !hasParamRule(overrides) {
					t.Fatalf("case %d tier %d %q: %s listed but no call allowed or asked", n, tier, overrides, tool)
				}
			} else if !listed && callable {
				t.Fatalf("case %d tier %d %q: %s callable but not listed", n, tier, overrides, tool)
			}
		}
	}
}

func hasParamRule(rules []string) bool {
	for _, r := range rules {
		if strings.Contains(r, "(") {
			return true
		}
	}
	return false
}
