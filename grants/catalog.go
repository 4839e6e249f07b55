package grants

// The tool catalog by category (CONTRACT §9). The tier defaults are written in
// these names, and the MCP layer lists its tools from them.
var (
	Messaging = []string{"send", "reply", "send_file", "edit", "delete", "like", "pin_message", "unpin_message"}
	History   = []string{"inspect_messages", "get_thread", "fetch_history", "find_messages"}
	Routing   = []string{"list_routes", "add_route", "delete_route", "set_routes", "explain_route"}
	Groups    = []string{"refresh_groups", "register_group", "delegate_group", "escalate_group"}
	Tasks     = []string{"schedule_task", "list_tasks", "pause_task", "resume_task", "cancel_task", "inspect_tasks", "preview_schedule"}
	Session   = []string{"inject_message", "reset_session", "engage", "disengage", "get_work", "set_work", "inspect_session", "list_grants"}
	// Spend: tier 0 and 1's by default, like the session tools. Below, the
	// tier defaults are the contract's lists (CONTRACT §7); an operator
	// grants report_usage to a tier-2 or -3 group that reports its own cost
	// over MCP (grants set F report_usage). Claude Code's and Codex's JSON
	// and a text agent's trailer carry usage at every tier.
	Spend = []string{"report_usage", "list_budgets", "set_budget"}
)

// AllTools returns every catalog tool: Messaging, History, Routing, Groups,
// Tasks, Session and Spend, in that order. The slice is new on every call.
func AllTools() []string {
	var all []string
	for _, category := range [][]string{Messaging, History, Routing, Groups, Tasks, Session, Spend} {
		all = append(all, category...)
	}
	return all
}

// Defaults returns the default rules of a tier (CONTRACT §7), one allow rule
// per tool so that `grants show` reads plainly. Tier 0 is "*"; a tier outside
// 0..3 gets no rules, so everything is denied. The slice is new on every call.
func Defaults(tier int) []string {
	switch tier {
	case 0:
		return []string{"*"}
	case 1:
		return AllTools()
	case 2:
		rules := []string{"send", "reply", "send_file", "edit", "delete", "like"}
		rules = append(rules, History...)
		return append(rules,
			"explain_route", "refresh_groups", "escalate_group", "list_tasks", "inspect_tasks",
			"engage", "disengage", "get_work", "set_work", "inspect_session", "list_grants")
	case 3:
		return []string{"reply", "send_file", "like", "edit"}
	default:
		return nil
	}
}

// ForGroup compiles a group's rules: its tier defaults followed by its stored
// overrides, so an override can narrow or widen any default.
func ForGroup(tier int, overrides []string) *Set {
	return Compile(append(Defaults(tier), overrides...))
}
