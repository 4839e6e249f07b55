package grants_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"switchboard/grants"
)

// cat is the catalog these tests evaluate the tier defaults over.
var cat = grants.ContractCatalog

func TestNewCatalog(t *testing.T) {
	without := func(name string) []grants.Tool {
		return slices.DeleteFunc(grants.ContractTools(), func(tool grants.Tool) bool { return tool.Name == name })
	}
	tests := []struct {
		name  string
		tools []grants.Tool
		want  string // "" for no error
	}{
		{"the contract's catalog", grants.ContractTools(), ""},
		{"no category", append(grants.ContractTools(), grants.Tool{Name: "future_tool"}), `tool future_tool has no known category ("")`},
		{"unknown category", append(grants.ContractTools(), grants.Tool{Name: "future_tool", Category: "misc"}), `tool future_tool has no known category ("misc")`},
		{"named twice", append(grants.ContractTools(), grants.Tool{Name: "like", Category: grants.Spend}), "tool like listed twice"},
		{"a glob", append(grants.ContractTools(), grants.Tool{Name: "send*", Category: grants.Messaging}), `tool name "send*" is not a literal rule`},
		{"a deny", append(grants.ContractTools(), grants.Tool{Name: "!send", Category: grants.Messaging}), `tool name "!send" is not a literal rule`},
		{"with params", append(grants.ContractTools(), grants.Tool{Name: "send(jid=x)", Category: grants.Messaging}), `tool name "send(jid=x)" is not a literal rule`},
		{"tier 2 default missing", without("list_grants"), `tier 2 default "list_grants" is not a catalog tool`},
		{"default of tiers 2 and 3 missing", without("send_file"), `tier 2 default "send_file" is not a catalog tool`},
		{"tier 1 needs nothing named", without("set_budget"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := grants.NewCatalog(tt.tools)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("NewCatalog: %v", err)
			case tt.want == "":
				if c == nil || len(c.Tools()) != len(tt.tools) {
					t.Fatalf("NewCatalog made %v from %d tools", c, len(tt.tools))
				}
			case err == nil:
				t.Fatalf("NewCatalog accepted it, want an error containing %q", tt.want)
			case !errors.Is(err, grants.ErrBadCatalog) || !strings.Contains(err.Error(), tt.want):
				t.Fatalf("NewCatalog error %q, want ErrBadCatalog containing %q", err, tt.want)
			}
		})
	}
}

func TestCatalogOrderAndCopies(t *testing.T) {
	// Given out of category order, the catalog still lists by category, and
	// within a category as given.
	tools := grants.ContractTools()
	slices.Reverse(tools)
	c, err := grants.NewCatalog(tools)
	if err != nil {
		t.Fatal(err)
	}
	all := c.Tools()
	if all[0] != "unpin_message" || all[len(all)-1] != "report_usage" {
		t.Errorf("Tools() order: first %q last %q, want unpin_message ... report_usage", all[0], all[len(all)-1])
	}
	if got := c.In(grants.History); !slices.Equal(got, []string{"find_messages", "fetch_history", "get_thread", "inspect_messages"}) {
		t.Errorf("In(History) = %q", got)
	}
	all[0] = "changed"
	if c.Tools()[0] != "unpin_message" {
		t.Error("Tools() returns a shared slice")
	}
	h := c.In(grants.History)
	h[0] = "changed"
	if c.In(grants.History)[0] != "find_messages" {
		t.Error("In returns a shared slice")
	}
	var want []string
	for _, tool := range grants.ContractTools() {
		want = append(want, tool.Name)
	}
	if got := cat.Tools(); !slices.Equal(got, want) {
		t.Errorf("Tools() of a catalog given in order = %q, want %q", got, want)
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
		{"tier 0 everything", 0, cat.Tools(), true},
		{"tier 1 the whole catalog", 1, cat.Tools(), false},
		{"tier 2", 2, tier2, false},
		{"tier 3", 3, []string{"reply", "send_file", "like", "edit"}, false},
		{"negative tier nothing", -1, nil, false},
		{"tier 4 nothing", 4, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cat.ForGroup(tt.tier, nil)
			for _, tool := range cat.Tools() {
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
			if err := grants.Validate(cat.Defaults(tt.tier)); err != nil {
				t.Errorf("tier %d defaults do not parse: %v", tt.tier, err)
			}
		})
	}
}

func TestDefaultsReadPlainly(t *testing.T) {
	// Tiers 1-3 spell out one allow rule per tool, so `grants show` needs no
	// glob reading; tier 0 is the single rule "*".
	if got := cat.Defaults(0); !reflect.DeepEqual(got, []string{"*"}) {
		t.Errorf("Defaults(0) = %q, want [*]", got)
	}
	if got := cat.Defaults(1); !reflect.DeepEqual(got, cat.Tools()) {
		t.Errorf("Defaults(1) = %q, want one rule per catalog tool", got)
	}
	for tier := 1; tier <= 3; tier++ {
		for _, rule := range cat.Defaults(tier) {
			if !slices.Contains(cat.Tools(), rule) {
				t.Errorf("Defaults(%d) has rule %q, which is not a catalog tool name", tier, rule)
			}
		}
	}
	d := cat.Defaults(3)
	d[0] = "!*"
	if cat.Defaults(3)[0] != "reply" {
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
			s := cat.ForGroup(tt.tier, tt.overrides)
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
	s := cat.ForGroup(3, []string{"!like"})
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
			s := cat.ForGroup(tier, overrides)
			for _, tool := range cat.Tools() {
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
