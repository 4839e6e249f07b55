package grants

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Category is a tool category of CONTRACT §9. The tier defaults are written
// in categories and tool names.
type Category string

// The categories, in catalog order.
const (
	Messaging Category = "messaging"
	History   Category = "history"
	Routing   Category = "routing"
	Groups    Category = "groups"
	Tasks     Category = "tasks"
	Session   Category = "session"
	// Spend: tier 0 and 1's by default, like the session tools. Below, the
	// tier defaults are the contract's lists (CONTRACT §7); an operator
	// grants report_usage to a tier-2 or -3 group that reports its own cost
	// over MCP (grants set F report_usage). Claude Code's and Codex's JSON
	// and a text agent's trailer carry usage at every tier.
	Spend Category = "spend"
	// Approvals: approve_tool, Claude Code's permission prompt answered in
	// the chat. Every tier's defaults list it (CONTRACT §15); the MCP layer
	// offers it only while approvals.agent_tools is set.
	Approvals Category = "approvals"
)

// Categories returns every category in catalog order. The slice is new on
// every call.
func Categories() []Category {
	return []Category{Messaging, History, Routing, Groups, Tasks, Session, Spend, Approvals}
}

// Tool is one catalog entry: a tool's name and its category.
type Tool struct {
	Name     string
	Category Category
}

// Catalog is the tool catalog: every tool the MCP layer implements, by
// category. The MCP layer's tool registry fills it (this package imports no
// project package); the tier defaults here are rules over it. A Catalog is
// immutable and safe for concurrent use.
type Catalog struct {
	tools []Tool   // in catalog order
	names []string // the tools' names, in catalog order
}

// NewCatalog builds the catalog of tools, ordered by category (Categories'
// order) and, within a category, as given. It fails when a tool is named
// twice, has no known category or a name that is no literal rule, or when a
// tier default names a tool the catalog lacks.
func NewCatalog(tools []Tool) (*Catalog, error) {
	cats := Categories()
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		switch r, err := Parse(t.Name); {
		case err != nil || r.Deny || r.Action != t.Name || len(r.Params) > 0 || strings.Contains(t.Name, "*"):
			return nil, fmt.Errorf("%w: tool name %q is not a literal rule", ErrBadCatalog, t.Name)
		case seen[t.Name]:
			return nil, fmt.Errorf("%w: tool %s listed twice", ErrBadCatalog, t.Name)
		case !slices.Contains(cats, t.Category):
			return nil, fmt.Errorf("%w: tool %s has no known category (%q)", ErrBadCatalog, t.Name, t.Category)
		}
		seen[t.Name] = true
	}
	c := &Catalog{tools: slices.Clone(tools)}
	slices.SortStableFunc(c.tools, func(a, b Tool) int {
		return cmp.Compare(slices.Index(cats, a.Category), slices.Index(cats, b.Category))
	})
	c.names = make([]string, len(c.tools))
	for i, t := range c.tools {
		c.names[i] = t.Name
	}
	for tier := 1; tier <= 3; tier++ {
		for _, rule := range c.Defaults(tier) {
			if !seen[rule] {
				return nil, fmt.Errorf("%w: tier %d default %q is not a catalog tool", ErrBadCatalog, tier, rule)
			}
		}
	}
	return c, nil
}

// Tools returns every catalog tool's name, in catalog order. The slice is
// new on every call.
func (c *Catalog) Tools() []string {
	return slices.Clone(c.names)
}

// In returns the names of the tools of one category, in catalog order. The
// slice is new on every call.
func (c *Catalog) In(cat Category) []string {
	var out []string
	for _, t := range c.tools {
		if t.Category == cat {
			out = append(out, t.Name)
		}
	}
	return out
}

// Defaults returns the default rules of a tier (CONTRACT §7), one allow rule
// per tool so that `grants show` reads plainly. Tier 0 is "*"; tier 1 is the
// whole catalog; tiers 2 and 3 also get the approvals tools (approve_tool);
// a tier outside 0..3 gets no rules, so everything is denied.
// The slice is new on every call.
func (c *Catalog) Defaults(tier int) []string {
	switch tier {
	case 0:
		return []string{"*"}
	case 1:
		return c.Tools()
	case 2:
		rules := []string{"send", "reply", "send_file", "edit", "delete", "like"}
		rules = append(rules, c.In(History)...)
		rules = append(rules,
			"explain_route", "refresh_groups", "escalate_group", "list_tasks", "inspect_tasks",
			"engage", "disengage", "get_work", "set_work", "inspect_session", "list_grants")
		return append(rules, c.In(Approvals)...)
	case 3:
		return append([]string{"reply", "send_file", "like", "edit"}, c.In(Approvals)...)
	default:
		return nil
	}
}

// ForGroup compiles a group's rules: its tier defaults followed by its stored
// overrides, so an override can narrow or widen any default.
func (c *Catalog) ForGroup(tier int, overrides []string) *Set {
	return Compile(append(c.Defaults(tier), overrides...))
}
