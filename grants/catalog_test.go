package grants_test

import (
	"reflect"
	"slices"
	"testing"

	"switchboard/grants"
)

func TestAllToolsCatalog(t *testing.T) {
	all := grants.AllTools()
	if len(all) != 39 {
		t.Errorf("AllTools() has %d tools, want the 36 of CONTRACT §9 and report_usage, list_budgets, set_budget (issue 21)", len(all))
	}
	seen := map[string]bool{}
	for _, tool := range all {
		if seen[tool] {
			t.Errorf("tool %q listed twice", tool)
		}
		seen[tool] = true
		// A tool name must be usable as a literal rule.
		if r, err := grants.Parse(tool); err != nil || r.Action != tool {
			t.Errorf("tool %q is not a valid literal rule: %v", tool, err)
		}
	}
	if all[0] != "send" || all[len(all)-1] != "set_budget" {
		t.Errorf("AllTools() order: first %q last %q, want send ... set_budget", all[0], all[len(all)-1])
	}
	all[0] = "changed"
	if grants.AllTools()[0] != "send" {
		t.Error("AllTools() returns a shared slice")
	}
}

func TestDefaults(t *testing.T) {
	tier2 := []string{
		"send", "reply", "send_file", "edit", "delete", "like",
		"inspect_messages", "get_thread", "fetch_history", "find_messages",
		"explain_route", "refresh_groups", "escalate_group", "list_tasks", "inspect_tasks",
		"engage", "disengage", "get_work", "set_work", "inspect_session", "list_grants",
	}
	tests := []struct {
		name    string
		tier    int
		allowed []string // catalog tools allowed; every other catalog tool is denied
		unknown bool     // whether a tool outside the catalog is allowed
	}{
		{"tier 0 everything", 0, grants.AllTools(), true},
		{"tier 1 the whole catalog", 1, grants.AllTools(), false},
		{"tier 2", 2, tier2, false},
		{"tier 3", 3, []string{"reply", "send_file", "like", "edit"}, false},
		{"negative tier nothing", -1, nil, false},
		{"tier 4 nothing", 4, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := grants.ForGroup(tt.tier, nil)
			for _, tool := range grants.AllTools() {
				want := slices.Contains(tt.allowed, tool)
				if d := s.Check(tool, p("jid", "web:lobby")); d.Allow != want {
					t.Errorf("tier %d Check(%q) = %+v, want allow=%v", tt.tier, tool, d, want)
				}
				if got := s.Listed(tool); got != want {
					t.Errorf("tier %d Listed(%q) = %v, want %v", tt.tier, tool, got, want)
				}
			}
			if got := s.Check("future_tool", nil).Allow; got != tt.unknown {
				t.Errorf("tier %d Check(future_tool) allow=%v, want %v", tt.tier, got, tt.unknown)
			}
			if err := grants.Validate(grants.Defaults(tt.tier)); err != nil {
				t.Errorf("tier %d defaults do not parse: %v", tt.tier, err)
			}
		})
	}
}

func TestDefaultsReadPlainly(t *testing.T) {
	// Tiers 1-3 spell out one allow rule per tool, so `grants show` needs no
	// glob reading; tier 0 is the single rule "*".
	if got := grants.Defaults(0); !reflect.DeepEqual(got, []string{"*"}) {
		t.Errorf("Defaults(0) = %q, want [*]", got)
	}
	if got := grants.Defaults(1); !reflect.DeepEqual(got, grants.AllTools()) {
		t.Errorf("Defaults(1) = %q, want one rule per catalog tool", got)
	}
	for tier := 1; tier <= 3; tier++ {
		for _, rule := range grants.Defaults(tier) {
			if !slices.Contains(grants.AllTools(), rule) {
				t.Errorf("Defaults(%d) has rule %q, which is not a catalog tool name", tier, rule)
			}
		}
	}
	d := grants.Defaults(3)
	d[0] = "!*"
	if grants.Defaults(3)[0] != "reply" {
		t.Error("Defaults returns a shared slice")
	}
}

func TestForGroupOverrides(t *testing.T) {
	slack := p("jid", "slack:T1/channel/C1")
	web := p("jid", "web:lobby")
	tests := []struct {
		name      string
		tier      int
		overrides []string
		tool      string
		params    map[string]string
		allow     bool
		listed    bool
	}{
		{"tier 3 widened to send on web", 3, []string{"send(jid=web:*)"}, "send", web, true, true},
		{"tier 3 widened only for web", 3, []string{"send(jid=web:*)"}, "send", slack, false, true},
		{"tier 3 widened send needs the jid", 3, []string{"send(jid=web:*)"}, "send", nil, false, true},
		{"tier 3 widening leaves reply", 3, []string{"send(jid=web:*)"}, "reply", web, true, true},
		{"tier 1 minus like", 1, []string{"!like"}, "like", web, false, false},
		{"tier 1 minus like leaves reply", 1, []string{"!like"}, "reply", web, true, true},
		{"tier 2 narrowed send denies slack", 2, []string{"!send(jid=slack:*)"}, "send", slack, false, true},
		{"tier 2 narrowed send allows web", 2, []string{"!send(jid=slack:*)"}, "send", web, true, true},
		{"tier 2 gains pin", 2, []string{"pin_message"}, "pin_message", web, true, true},
		{"tier 3 locked down", 3, []string{"!*"}, "reply", web, false, false},
		{"tier 0 only reply: reply", 0, []string{"!*", "reply"}, "reply", web, true, true},
		{"tier 0 only reply: send", 0, []string{"!*", "reply"}, "send", web, false, false},
		{"bad override ignored, defaults stand", 3, []string{"!reply("}, "reply", web, true, true},
		{"bad override grants nothing", 3, []string{"send("}, "send", web, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := grants.ForGroup(tt.tier, tt.overrides)
			if d := s.Check(tt.tool, tt.params); d.Allow != tt.allow {
				t.Errorf("Check(%q, %v) = %+v, want allow=%v", tt.tool, tt.params, d, tt.allow)
			}
			if got := s.Listed(tt.tool); got != tt.listed {
				t.Errorf("Listed(%q) = %v, want %v", tt.tool, got, tt.listed)
			}
		})
	}
}

func TestForGroupIndexesCountDefaults(t *testing.T) {
	s := grants.ForGroup(3, []string{"!like"})
	d := s.Check("like", nil)
	if d.Allow || d.Index != 4 || d.Reason != `denied by rule 4 "!like"` {
		t.Errorf("Check(like) = %+v, want denied by rule 4 (after the 4 tier-3 defaults)", d)
	}
	if got := s.Rules(); !reflect.DeepEqual(got, []string{"reply", "send_file", "like", "edit", "!like"}) {
		t.Errorf("Rules() = %q", got)
	}
}

// TestListedIffCallable is the guard against the permission layers drifting
// apart: a tool is listed exactly when some call of it is allowed.
func TestListedIffCallable(t *testing.T) {
	candidates := []map[string]string{
		nil,
		p("jid", "web:lobby"),
		p("jid", "slack:T1/channel/C1"),
		p("jid", "telegram:-100123", "topic", "t1"),
	}
	overrideSets := [][]string{
		nil,
		{"!like"},
		{"!send(jid=slack:*)"},
		{"send(jid=web:*)"},
		{"!*", "reply"},
		{"!*_task"},
		{"pin_message(jid=web:*)", "!send(jid=*)"},
		{"!*", "send*(jid=slack:*)"},
		{"like(", "!reply("},
	}
	for tier := -1; tier <= 4; tier++ {
		for _, overrides := range overrideSets {
			s := grants.ForGroup(tier, overrides)
			for _, tool := range grants.AllTools() {
				callable := false
				for _, params := range candidates {
					callable = callable || s.Check(tool, params).Allow
				}
				if listed := s.Listed(tool); listed != callable {
					t.Errorf("tier %d overrides %q: Listed(%q)=%v but callable=%v", tier, overrides, tool, listed, callable)
				}
				if overrides == nil {
					// Defaults carry no params: every call decides as listing does.
					for _, params := range candidates {
						if got := s.Check(tool, params).Allow; got != s.Listed(tool) {
							t.Errorf("tier %d defaults: Check(%q, %v)=%v but Listed=%v", tier, tool, params, got, !got)
						}
					}
				}
			}
		}
	}
}
