package grants_test

import (
	"testing"

	"switchboard/grants"
)

// benchRules is a realistic 50-rule set: the 21 tier-2 defaults followed by
// 29 operator overrides mixing globs, narrowing denies and param allows.
func benchRules(b *testing.B) []string {
	overrides := []string{
		"!send(jid=slack:*)", "send(jid=slack:T1/channel/C1)", "!delete", "pin_message(jid=web:*)",
		"unpin_message(jid=web:*)", "!like(jid=telegram:*)", "schedule_task(jid=web:*)", "pause_task",
		"resume_task", "cancel_task", "!*_task(jid=discord:*)", "!fetch_history(jid=slack:*)",
		"inspect_messages(jid=web:*, topic=*)", "!edit(jid=discord:*/thread/*)", "reset_session",
		"!inject_message", "list_routes", "!add_route", "!delete_route", "!set_routes",
		"register_group(folder=acme/*)", "!delegate_group", "send*(jid=web:lobby)", "!reply(jid=web:private*)",
		"preview_schedule", "!engage(topic=secret*)", "get_thread(topic=*)", "find_messages(query=*)",
		"send(jid=web:*, topic=support*)",
	}
	rules := append(grants.ContractCatalog.Defaults(2), overrides...)
	if len(rules) != 50 {
		b.Fatalf("bench set has %d rules, want 50", len(rules))
	}
	if err := grants.Validate(rules); err != nil {
		b.Fatal(err)
	}
	return rules
}

func BenchmarkCheck50Rules(b *testing.B) {
	s := grants.Compile(benchRules(b))
	cases := []struct {
		name   string
		tool   string
		params map[string]string
		allow  bool
	}{
		// decided by the last rule: the common case for an override
		{"decided_near_end", "send", map[string]string{"jid": "web:x", "topic": "support-1", "text": "hello"}, true},
		// decided by rule 1 (a default): every later rule is tried first
		{"decided_near_start", "reply", map[string]string{"jid": "web:lobby", "text": "hello"}, true},
		// nothing matches: all 50 rules are tried
		{"no_match", "pin_message", map[string]string{"jid": "slack:T1/channel/C1"}, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			if got := s.Check(c.tool, c.params).Allow; got != c.allow {
				b.Fatalf("Check(%q) allow=%v, want %v", c.tool, got, c.allow)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Check(c.tool, c.params)
			}
		})
	}
}

func BenchmarkListed(b *testing.B) {
	s := grants.Compile(benchRules(b))
	all := grants.ContractCatalog.Tools()
	b.Run("one_tool", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.Listed("reply")
		}
	})
	b.Run("whole_catalog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.ListedTools(all)
		}
	})
}
